// recload: produces or consumes a topic's records with franz-go clients, as fast as the broker allows, and prints
// one JSON line (records, bytes, seconds). The client is not the limit: franz-go decodes in goroutines, and -clients
// spreads the partitions over several clients in this one process.
//
//	recload -mode produce -topic T -partitions P -records N -size S
//	recload -mode consume -topic T -partitions P -records N -clients C
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap servers")
	topic := flag.String("topic", "", "the topic (created beforehand)")
	mode := flag.String("mode", "consume", "produce or consume")
	partitions := flag.Int("partitions", 1, "the topic's partitions")
	records := flag.Int("records", 100000, "records to produce, or to consume in all")
	size := flag.Int("size", 100, "value bytes per produced record")
	clients := flag.Int("clients", 1, "clients, each assigned every clients-th partition")
	timeout := flag.Duration("timeout", 120*time.Second, "give up after")
	random := flag.Bool("random", false, "random values (incompressible: stored bytes are the values' bytes)")
	flag.Parse()
	if *topic == "" {
		fail(fmt.Errorf("-topic is required"))
	}
	seeds := kgo.SeedBrokers(strings.Split(*brokers, ",")...)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var got atomic.Int64
	var gotBytes atomic.Int64
	var t0 time.Time
	var elapsed time.Duration
	if *mode == "produce" {
		cl, err := kgo.NewClient(seeds, kgo.DefaultProduceTopic(*topic), kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.DisableIdempotentWrite(), kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<20))
		if err != nil {
			fail(err)
		}
		defer cl.Close()
		value := make([]byte, *size)
		var pool []byte
		if *random {
			pool = make([]byte, 1<<22+*size)
			rand.New(rand.NewSource(1)).Read(pool)
		}
		var failed atomic.Value
		var wg sync.WaitGroup
		t0 = time.Now()
		for i := 0; i < *records; i++ {
			wg.Add(1)
			v := value
			if pool != nil {
				off := (i * 7919 * 64) % (len(pool) - *size)
				v = pool[off : off+*size]
			}
			cl.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
				if err != nil {
					failed.Store(err)
				} else {
					got.Add(1)
					gotBytes.Add(int64(len(r.Value)))
				}
				wg.Done()
			})
		}
		wg.Wait()
		elapsed = time.Since(t0)
		if err, ok := failed.Load().(error); ok {
			fail(err)
		}
	} else {
		cls := make([]*kgo.Client, *clients)
		for c := range cls {
			offs := map[int32]kgo.Offset{}
			for p := c; p < *partitions; p += *clients {
				offs[int32(p)] = kgo.NewOffset().AtStart()
			}
			cl, err := kgo.NewClient(seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: offs}),
				kgo.FetchMaxBytes(50<<20), kgo.FetchMaxPartitionBytes(1<<20))
			if err != nil {
				fail(err)
			}
			cls[c] = cl
		}
		var wg sync.WaitGroup
		pollCtx, stop := context.WithCancel(ctx)
		defer stop()
		t0 = time.Now()
		for _, cl := range cls {
			wg.Add(1)
			go func(cl *kgo.Client) {
				defer wg.Done()
				for got.Load() < int64(*records) && pollCtx.Err() == nil {
					fs := cl.PollFetches(pollCtx)
					if fs.IsClientClosed() {
						return
					}
					n, b := 0, 0
					fs.EachRecord(func(r *kgo.Record) { n++; b += len(r.Value) })
					gotBytes.Add(int64(b))
					if got.Add(int64(n)) >= int64(*records) {
						stop() // the others may wait on partitions they have drained
					}
				}
			}(cl)
		}
		wg.Wait()
		elapsed = time.Since(t0)
		for _, cl := range cls {
			cl.Close()
		}
	}
	secs := elapsed.Seconds()
	out, _ := json.Marshal(map[string]any{"mode": *mode, "records": got.Load(), "bytes": gotBytes.Load(),
		"seconds": secs, "complete": got.Load() >= int64(*records)})
	fmt.Println(string(out))
}
