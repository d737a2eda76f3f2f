// connload: N raw Kafka connections to one broker, each answered the setup frames a producer sends on connecting
// (ApiVersions, Metadata), then kept open: idle for a while, then busy, each sending one small Produce (acks=1)
// every interval and timing its answer. bench/connections.py drives it and reads the broker's memory between the
// phases; the frames come from fakekafka's own encoder, so this program only moves bytes and keeps time.
//
// usage: connload -addr HOST:PORT -n 5000 -setup HEX,HEX -produce HEX,HEX,... -interval 1s -busy 20s
//
// It prints "open <seconds>" once every connection is set up, waits for a line on stdin, runs the busy phase,
// prints "busy-done", waits for another line, then prints one JSON line of the latencies and exits.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func frames(arg string) [][]byte {
	var out [][]byte
	for _, h := range strings.Split(arg, ",") {
		if h == "" {
			continue
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad hex frame:", err)
			os.Exit(2)
		}
		out = append(out, b)
	}
	return out
}

// call writes one request frame and reads its whole answer.
func call(c net.Conn, frame []byte, buf []byte) ([]byte, error) {
	if _, err := c.Write(frame); err != nil {
		return buf, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return buf, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	_, err := io.ReadFull(c, buf[:n])
	return buf, err
}

func main() {
	addr := flag.String("addr", "", "broker HOST:PORT")
	n := flag.Int("n", 5000, "connections")
	setup := flag.String("setup", "", "hex request frames sent once on each connection, comma-separated")
	produce := flag.String("produce", "", "hex Produce frames, comma-separated: connection i sends frame i % len")
	interval := flag.Duration("interval", time.Second, "time between one connection's produces")
	busy := flag.Duration("busy", 20*time.Second, "length of the busy phase")
	flag.Parse()
	setupFrames, produceFrames := frames(*setup), frames(*produce)
	stdin := bufio.NewReader(os.Stdin)

	conns := make([]net.Conn, 0, *n)
	start := time.Now()
	buf := make([]byte, 0, 1<<16)
	for i := 0; i < *n; i++ {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "connect:", err)
			os.Exit(1)
		}
		for _, f := range setupFrames {
			if buf, err = call(c, f, buf); err != nil {
				fmt.Fprintln(os.Stderr, "setup:", err)
				os.Exit(1)
			}
		}
		conns = append(conns, c)
	}
	fmt.Printf("open %.2f\n", time.Since(start).Seconds())
	stdin.ReadString('\n')

	var mu sync.Mutex
	var lat []float64
	errors := 0
	var wg sync.WaitGroup
	t0 := time.Now()
	end := t0.Add(*busy)
	for i, c := range conns {
		wg.Add(1)
		go func(i int, c net.Conn) {
			defer wg.Done()
			frame := produceFrames[i%len(produceFrames)]
			// spread the connections' first sends over one interval, so the load is steady, not in waves
			next := t0.Add(time.Duration(int64(*interval) * int64(i) / int64(len(conns))))
			mine := make([]float64, 0, int(*busy / *interval)+1)
			b := make([]byte, 0, 256)
			bad := 0
			for next.Before(end) {
				time.Sleep(time.Until(next))
				sent := time.Now()
				var err error
				if b, err = call(c, frame, b); err != nil {
					bad++
					break
				}
				mine = append(mine, float64(time.Since(sent).Microseconds())/1000)
				next = next.Add(*interval)
			}
			mu.Lock()
			lat = append(lat, mine...)
			errors += bad
			mu.Unlock()
		}(i, c)
	}
	wg.Wait()
	took := time.Since(t0).Seconds()
	fmt.Println("busy-done")
	stdin.ReadString('\n')
	for _, c := range conns {
		c.Close()
	}
	sort.Float64s(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(p*float64(len(lat)-1))]
	}
	out, _ := json.Marshal(map[string]any{
		"produces": len(lat), "errors": errors, "seconds": took, "rate": float64(len(lat)) / took,
		"p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": q(1),
	})
	fmt.Println(string(out))
}
