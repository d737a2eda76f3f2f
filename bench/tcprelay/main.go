// tcprelay: a byte-for-byte TCP relay, the floor of what any proxy hop costs (bench/proxy.py's "relay" path).
// Go's io.Copy between two TCP connections moves the bytes with splice(2) on Linux, never through user space.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: tcprelay LISTEN_HOST:PORT UPSTREAM_HOST:PORT")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("tcprelay ready: %s -> %s\n", ln.Addr(), os.Args[2])
	for {
		client, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go relay(client.(*net.TCPConn), os.Args[2])
	}
}

func relay(client *net.TCPConn, upstream string) {
	conn, err := net.Dial("tcp", upstream)
	if err != nil {
		client.Close()
		return
	}
	server := conn.(*net.TCPConn)
	done := make(chan struct{}, 2)
	pipe := func(dst, src *net.TCPConn) {
		io.Copy(dst, src)
		dst.CloseWrite()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
	client.Close()
	server.Close()
}
