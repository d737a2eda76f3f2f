// groupload: G consumer groups of M franz-go members each join one topic; it prints, as one JSON line, how long
// until every member holds at least one partition and every group's members hold each partition at most once, the
// requests the members sent until then, and how long the group protocol's round trips took them (p50, p99).
// The client is not the limit: franz-go runs the group protocol in goroutines, thousands of members in one process.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requests counts what the members send, by API key: the same cell on two brokers should send about as many, and
// a broker that makes its clients ask more often pays for it in time.
type requests struct{ byKey [128]atomic.Int64 }

func (r *requests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key >= 0 && int(key) < len(r.byKey) {
		r.byKey[key].Add(1)
	}
}

func (r *requests) counts() map[string]int64 {
	out := map[string]int64{}
	for k := range r.byKey {
		if n := r.byKey[k].Load(); n > 0 {
			out[kmsg.NameForKey(int16(k))] = n
		}
	}
	return out
}

// groupTimes keeps the group protocol's round trips (ConsumerGroupHeartbeat; JoinGroup, SyncGroup and Heartbeat)
// as the members timed them, from their writing to the answer read, while the clock runs: a broker whose one thread
// is busy answers them late, and the members act on their answers that much later.
type groupTimes struct {
	on bool
	mu sync.Mutex
	ms []float64
}

func (g *groupTimes) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	switch kmsg.NameForKey(key) {
	case "ConsumerGroupHeartbeat", "JoinGroup", "SyncGroup", "Heartbeat":
	default:
		return
	}
	if e.WriteErr != nil || e.ReadErr != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on {
		g.ms = append(g.ms, float64(e.DurationE2E().Microseconds())/1000)
	}
}

func (g *groupTimes) set(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.on = on
}

// percentiles: the 50th and 99th of the round trips kept, in milliseconds (nil when none was).
func (g *groupTimes) percentiles() map[string]float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.ms) == 0 {
		return nil
	}
	sorted := append([]float64(nil), g.ms...)
	sort.Float64s(sorted)
	at := func(q float64) float64 { return sorted[int(q*float64(len(sorted)-1))] }
	return map[string]float64{"p50": at(0.50), "p99": at(0.99)}
}

type member struct {
	mu   sync.Mutex
	held map[int32]bool
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap servers")
	topic := flag.String("topic", "", "the topic every group subscribes to (created beforehand)")
	groups := flag.Int("groups", 1, "groups")
	members := flag.Int("members", 2, "members per group")
	protocol := flag.String("protocol", "consumer", "consumer (KIP-848, the broker's uniform assignor) or classic (cooperative-sticky)")
	prefix := flag.String("prefix", "groupload", "group id prefix")
	timeout := flag.Duration("timeout", 120*time.Second, "give up after")
	curve := flag.Duration("curve", 0, "if set, print to stderr every so often: seconds since the start, members holding a partition")
	flag.Parse()
	if *topic == "" {
		fmt.Fprintln(os.Stderr, "-topic is required")
		os.Exit(2)
	}
	n := *groups * *members
	ms := make([]*member, n)
	clients := make([]*kgo.Client, n)
	var assigned atomic.Int64
	sent := &requests{}
	times := &groupTimes{}
	for i := range ms {
		m := &member{held: map[int32]bool{}}
		ms[i] = m
		update := func(ps map[string][]int32, add bool) {
			m.mu.Lock()
			defer m.mu.Unlock()
			before := len(m.held) > 0
			for _, p := range ps[*topic] {
				if add {
					m.held[p] = true
				} else {
					delete(m.held, p)
				}
			}
			after := len(m.held) > 0
			if after && !before {
				assigned.Add(1)
			} else if before && !after {
				assigned.Add(-1)
			}
		}
		opts := []kgo.Opt{
			kgo.SeedBrokers(strings.Split(*brokers, ",")...),
			kgo.ConsumerGroup(fmt.Sprintf("%s-%d", *prefix, i / *members)),
			kgo.ConsumeTopics(*topic),
			kgo.DisableAutoCommit(),
			kgo.WithHooks(sent, times),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, true) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, false) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, false) }),
		}
		if *protocol == "consumer" {
			opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
		} else {
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		clients[i] = cl
	}
	times.set(true)
	t0 := time.Now()
	for _, cl := range clients { // polling makes each client join; records are not the point
		go func(cl *kgo.Client) {
			for {
				fs := cl.PollRecords(context.Background(), 1000)
				if fs.IsClientClosed() {
					return
				}
			}
		}(cl)
	}
	done := func() bool {
		if assigned.Load() != int64(n) {
			return false
		}
		for g := 0; g < *groups; g++ { // no partition held twice within a group
			seen := map[int32]bool{}
			for _, m := range ms[g**members : (g+1)**members] {
				m.mu.Lock()
				for p := range m.held {
					if seen[p] {
						m.mu.Unlock()
						return false
					}
					seen[p] = true
				}
				m.mu.Unlock()
			}
		}
		return true
	}
	var seconds any
	last := time.Duration(0)
	for time.Since(t0) < *timeout {
		since := time.Since(t0)
		if *curve > 0 && since-last >= *curve {
			last = since
			fmt.Fprintf(os.Stderr, "%.2f %d\n", since.Seconds(), assigned.Load())
		}
		if done() {
			seconds = since.Seconds()
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	times.set(false)
	out, _ := json.Marshal(map[string]any{"groups": *groups, "members": *members, "protocol": *protocol,
		"seconds": seconds, "assigned": assigned.Load(), "of": n, "requests": sent.counts(),
		"group_ms": times.percentiles()})
	fmt.Println(string(out))
	var wg sync.WaitGroup // closing leaves the groups; not timed
	for _, cl := range clients {
		wg.Add(1)
		go func(cl *kgo.Client) { defer wg.Done(); cl.Close() }(cl)
	}
	wg.Wait()
}
