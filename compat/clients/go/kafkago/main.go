// The compat suite's driver for segmentio/kafka-go (Writer, Reader, ConsumerGroup and the request-level
// Client), in the agent protocol of compat/clients/agent.py (see package agent).
//
// Usage: kafkago BOOTSTRAP TIMING_JSON
//
// How kafka-go is used, as its users do: a Writer produces (a record that names its partition goes there
// through the Balancer, the others where kafka-go's default RoundRobin balancer puts them; Completion
// reports each message's partition and offset); a Reader reads a partition from an offset; a subscribed
// member is a ConsumerGroup whose generations start a Reader per assigned partition and commit through the
// generation; an assigned member is a Reader per partition starting at the group's committed offset and
// commits with Client.OffsetCommit (generation -1); admin calls are kafka.Client requests.
//
// Choices a user would make too: the Writer asks acks=all unless a scenario sets acks (kafka-go's default,
// RequireNone, reports no offsets). Unsupported, with why: idempotent producing, DeleteRecords, the max
// timestamp lookup, auto.offset.reset=none, static members, commit metadata from a group member, a
// position, seek or pause of a subscribed member, pause of an assigned one.
// Errors become Kafka's names: a kafka.Error by its code (named with franz-go's kerr table), a deadline as
// TIMEOUT, any other error as CLIENT:<type>.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"fakekafka/compat/clients/go/agent"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
)

type driver struct {
	bootstrap []string
	timing    agent.Timing
}

func main() {
	bootstrap, timing := agent.ReadArgs()
	agent.Serve(&driver{bootstrap: bootstrap, timing: timing})
}

// transport is a new kafka.Transport for one producer or admin call. kafka-go's shared DefaultTransport
// caches metadata (MetadataTTL, 6 s) and answers UNKNOWN_TOPIC_OR_PARTITION for a topic created since,
// until the cache expires; a client per call, as the other drivers make one producer per produce, sees
// the cluster as it is now.
func (d *driver) transport() *kafka.Transport {
	return &kafka.Transport{DialTimeout: d.timing.Op(), IdleTimeout: time.Second}
}

// admin runs fn with a kafka.Client of its own (see transport).
func admin[T any](d *driver, fn func(ctx context.Context, c *kafka.Client) (T, error)) (T, error) {
	t := d.transport()
	defer t.CloseIdleConnections()
	ctx, cancel := d.ctx()
	defer cancel()
	return fn(ctx, &kafka.Client{Addr: kafka.TCP(d.bootstrap...), Timeout: d.timing.Op(), Transport: t})
}

func (d *driver) Ops() map[string]func(agent.Req) (any, error) {
	return map[string]func(agent.Req) (any, error){
		"produce":           d.produce,
		"fetch":             d.fetch,
		"list_offsets":      d.listOffsets,
		"create_topic":      d.createTopic,
		"partition_count":   d.partitionCount,
		"delete_topic":      d.deleteTopic,
		"create_partitions": d.createPartitions,
		"describe_configs":  d.describeConfigs,
		"describe_group":    d.describeGroup,
		"list_groups":       d.listGroups,
		"delete_group":      d.deleteGroup,
		"delete_offsets":    d.deleteOffsets,
		"committed":         d.committed,
	}
}

func (d *driver) Close() {}

func (d *driver) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d.timing.Op())
}

// ------------------------------------------------------------------------------------------ errors

func clientError(err error) error {
	if err == nil {
		return nil
	}
	var ce *agent.ClientError
	var un *agent.Unsupported
	if errors.As(err, &ce) || errors.As(err, &un) {
		return err
	}
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e != nil {
				return clientError(e)
			}
		}
	}
	var ke kafka.Error
	if errors.As(err, &ke) {
		if named, ok := kerr.ErrorForCode(int16(ke)).(*kerr.Error); ok {
			return &agent.ClientError{Code: named.Message, Type: "kafka.Error", Message: err.Error()}
		}
		return &agent.ClientError{Code: fmt.Sprintf("UNKNOWN_ERROR_%d", int(ke)), Type: "kafka.Error",
			Message: err.Error()}
	}
	if strings.Contains(err.Error(), "topic partition not found") {
		// a partition metadata does not show: kafka-go fails the write without sending it
		return &agent.ClientError{Code: "CLIENT_REJECTED", Type: fmt.Sprintf("%T", err), Message: err.Error()}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &agent.ClientError{Code: "TIMEOUT", Type: fmt.Sprintf("%T", err), Message: err.Error()}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &agent.ClientError{Code: "TIMEOUT", Type: fmt.Sprintf("%T", err), Message: err.Error()}
	}
	return &agent.ClientError{Code: "CLIENT:" + fmt.Sprintf("%T", err), Type: fmt.Sprintf("%T", err),
		Message: err.Error()}
}

// ------------------------------------------------------------------------------------------ records

func toRec(m kafka.Message) agent.Rec {
	hs := make([]agent.Header, 0, len(m.Headers))
	for _, h := range m.Headers {
		hs = append(hs, agent.Header{Key: h.Key, Value: h.Value})
	}
	ts := int64(-1)
	if !m.Time.IsZero() && m.Time.UnixMilli() >= 0 {
		ts = m.Time.UnixMilli()
	}
	return agent.NewRec(m.Key, m.Value, hs, int32(m.Partition), m.Offset, ts)
}

var codecs = map[string]kafka.Compression{"none": 0, "gzip": kafka.Gzip, "snappy": kafka.Snappy,
	"lz4": kafka.Lz4, "zstd": kafka.Zstd}

func (d *driver) produce(req agent.Req) (any, error) {
	codec, ok := codecs[req.Str("codec")]
	if !ok {
		return nil, agent.Unsupportedf("kafka-go has no codec %q", req.Str("codec"))
	}
	if req.Bool("idempotent") {
		return nil, agent.Unsupportedf("kafka-go's Writer has no idempotent producing")
	}
	var recs []agent.Rec
	req.Into("recs", &recs)
	done := map[int]agent.Rec{}
	var mu sync.Mutex
	transport := d.transport()
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(d.bootstrap...), Topic: req.Str("topic"), Transport: transport,
		ErrorLogger: errorLog("writer"), Compression: codec, RequiredAcks: kafka.RequireAll, WriteTimeout: d.timing.Op(), ReadTimeout: d.timing.Op(),
		BatchTimeout: time.Millisecond, BatchSize: 1,
		Completion: func(ms []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range ms {
				if i, ok := m.WriterData.(index); ok && err == nil {
					done[int(i)] = agent.Rec{O: m.Offset, P: ptr(int32(m.Partition))}
				}
			}
		}}
	if req.Bool("one_batch") {
		w.BatchSize, w.BatchTimeout, w.BatchBytes = len(recs), time.Minute, 16<<20
	}
	if req.Has("max_request_bytes") {
		w.BatchBytes = req.Int("max_request_bytes")
	}
	if req.Has("acks") {
		w.RequiredAcks = kafka.RequiredAcks(req.Int("acks"))
	}
	defer func() { _ = w.Close() }()
	msgs := make([]kafka.Message, 0, len(recs))
	for _, r := range recs {
		m := kafka.Message{Key: agent.Unhex(r.K), Value: agent.Unhex(r.V)}
		for _, h := range r.Headers() {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		if r.TS != nil {
			m.Time = time.UnixMilli(*r.TS)
		}
		msgs = append(msgs, m)
	}
	// WriterData carries the message's index (for Completion) and its partition (for the Balancer):
	// an explicit partition is looked up by index.
	parts := map[index]int32{}
	for i, r := range recs {
		if r.P != nil {
			parts[index(i)] = *r.P
		}
		msgs[i].WriterData = index(i)
	}
	w.Balancer = indexBalancer{parts, &kafka.RoundRobin{}}
	ctx, cancel := context.WithTimeout(context.Background(), d.timing.Op()+5*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return nil, clientError(err)
	}
	out := make([][2]any, 0, len(recs))
	mu.Lock()
	defer mu.Unlock()
	for i := range recs {
		r, ok := done[i]
		if !ok || w.RequiredAcks == kafka.RequireNone {
			out = append(out, [2]any{-1, nil})
			continue
		}
		out = append(out, [2]any{*r.P, r.O})
	}
	return out, nil
}

type index int

// indexBalancer: a message whose index has a partition goes there, the others to the default balancer.
type indexBalancer struct {
	parts map[index]int32
	def   kafka.Balancer
}

func (b indexBalancer) Balance(m kafka.Message, partitions ...int) int {
	if i, ok := m.WriterData.(index); ok {
		if p, ok := b.parts[i]; ok {
			return int(p)
		}
	}
	return b.def.Balance(m, partitions...)
}

func ptr[T any](v T) *T { return &v }

func startOffset(reset string) (int64, error) {
	switch reset {
	case "earliest", "":
		return kafka.FirstOffset, nil
	case "latest":
		return kafka.LastOffset, nil
	case "none":
		return 0, agent.Unsupportedf("kafka-go has no auto.offset.reset=none (StartOffset is first or last)")
	}
	return 0, fmt.Errorf("unknown reset %q", reset)
}

// errorLog: kafka-go's readers and writers retry what fails without telling their caller; their errors go to the
// driver's stderr, which the compat report shows for a cell that failed
func errorLog(who string) kafka.Logger {
	return kafka.LoggerFunc(func(msg string, args ...interface{}) {
		fmt.Fprintf(os.Stderr, "%s kafka-go %s: %s\n", time.Now().Format("15:04:05.000"), who, fmt.Sprintf(msg, args...))
	})
}

func (d *driver) reader(topic string, partition int, offset int64) (*kafka.Reader, error) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: d.bootstrap, Topic: topic, Partition: partition,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 100 * time.Millisecond, ErrorLogger: errorLog("reader")})
	if err := r.SetOffset(offset); err != nil {
		_ = r.Close()
		return nil, clientError(err)
	}
	return r, nil
}

// fetch: a partition Reader from the offset. kafka-go moves an offset before the log start to the start,
// and waits at one past the end for records to come (it resets nowhere: `reset` is not used).
func (d *driver) fetch(req agent.Req) (any, error) {
	if _, err := startOffset(req.Str("reset")); err != nil {
		return nil, err
	}
	r, err := d.reader(req.Str("topic"), int(req.Int("partition")), req.Int("offset"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	got := []agent.Rec{}
	ctx, cancel := context.WithTimeout(context.Background(), d.timing.FetchWait(req))
	defer cancel()
	for len(got) < int(req.Int("count")) {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
			return nil, clientError(err)
		}
		got = append(got, toRec(m))
	}
	return got, nil
}

// ------------------------------------------------------------------------------------------ admin

func (d *driver) listOffsets(req agent.Req) (any, error) {
	topic, p := req.Str("topic"), int(req.Int("partition"))
	var spec any
	req.Into("spec", &spec)
	var or kafka.OffsetRequest
	switch s := spec.(type) {
	case string:
		switch s {
		case "earliest":
			or = kafka.FirstOffsetOf(p)
		case "latest":
			or = kafka.LastOffsetOf(p)
		case "max_timestamp":
			return nil, agent.Unsupportedf("kafka-go has no ListOffsets for the max timestamp (KIP-734)")
		default:
			return nil, fmt.Errorf("unknown offset spec %q", s)
		}
	case float64:
		or = kafka.TimeOffsetOf(p, time.UnixMilli(int64(s)))
	default:
		return nil, fmt.Errorf("unknown offset spec %v", spec)
	}
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.ListOffsetsResponse, error) {
		return c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			topic: {or}}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	for _, po := range resp.Topics[topic] {
		if po.Partition != p {
			continue
		}
		if po.Error != nil {
			return nil, clientError(po.Error)
		}
		var o int64
		switch or.Timestamp {
		case kafka.FirstOffset:
			o = po.FirstOffset
		case kafka.LastOffset:
			o = po.LastOffset
		default:
			o = -1
			for off := range po.Offsets {
				o = off
			}
		}
		if o < 0 {
			return nil, nil
		}
		return o, nil
	}
	return nil, &agent.ClientError{Code: "UNKNOWN_TOPIC_OR_PARTITION", Type: "kafka-go", Message: "no offset listed"}
}

func (d *driver) createTopic(req agent.Req) (any, error) {
	var raw map[string]string
	req.Into("configs", &raw)
	tc := kafka.TopicConfig{Topic: req.Str("topic"), NumPartitions: int(req.Int("partitions")),
		ReplicationFactor: int(req.Int("replication_factor"))}
	for k, v := range raw {
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.CreateTopicsResponse, error) {
		return c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc},
			ValidateOnly: req.Bool("validate_only")})
	})
	if err != nil {
		return nil, clientError(err)
	}
	return nil, clientError(resp.Errors[tc.Topic])
}

func (d *driver) partitionCount(req agent.Req) (any, error) {
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.MetadataResponse, error) {
		return c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{req.Str("topic")}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	for _, t := range resp.Topics {
		if t.Name == req.Str("topic") {
			if t.Error != nil {
				return nil, clientError(t.Error)
			}
			return len(t.Partitions), nil
		}
	}
	return nil, &agent.ClientError{Code: "UNKNOWN_TOPIC_OR_PARTITION", Type: "kafka-go", Message: "not in metadata"}
}

func (d *driver) deleteTopic(req agent.Req) (any, error) {
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.DeleteTopicsResponse, error) {
		return c.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{req.Str("topic")}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	return nil, clientError(resp.Errors[req.Str("topic")])
}

func (d *driver) createPartitions(req agent.Req) (any, error) {
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.CreatePartitionsResponse, error) {
		return c.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{ValidateOnly: req.Bool("validate_only"),
			Topics: []kafka.TopicPartitionsConfig{{Name: req.Str("topic"), Count: int32(req.Int("count"))}}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	return nil, clientError(resp.Errors[req.Str("topic")])
}

var configSources = []string{"UNKNOWN", "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG",
	"DYNAMIC_DEFAULT_BROKER_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG",
	"CLIENT_METRICS_CONFIG", "GROUP_CONFIG"}

func sourceName(s int8) string {
	if int(s) >= 0 && int(s) < len(configSources) {
		return configSources[s]
	}
	return strconv.Itoa(int(s))
}

func (d *driver) describeConfigs(req agent.Req) (any, error) {
	var keys []string
	req.Into("keys", &keys)
	res := kafka.DescribeConfigRequestResource{ResourceType: kafka.ResourceTypeBroker, ResourceName: req.Str("name"),
		ConfigNames: keys}
	if req.Str("resource") == "topic" {
		res.ResourceType = kafka.ResourceTypeTopic
	}
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.DescribeConfigsResponse, error) {
		return c.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{IncludeSynonyms: true,
			Resources: []kafka.DescribeConfigRequestResource{res}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	out := map[string]map[string]any{}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return nil, clientError(r.Error)
		}
		for _, e := range r.ConfigEntries {
			synonyms := [][3]any{}
			for _, s := range e.ConfigSynonyms {
				synonyms = append(synonyms, [3]any{s.ConfigName, s.ConfigValue, sourceName(s.ConfigSource)})
			}
			out[e.ConfigName] = map[string]any{"value": e.ConfigValue, "source": sourceName(e.ConfigSource),
				"read_only": e.ReadOnly, "sensitive": e.IsSensitive, "synonyms": synonyms}
		}
	}
	return out, nil
}

func (d *driver) describeGroup(req agent.Req) (any, error) {
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.DescribeGroupsResponse, error) {
		return c.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{req.Str("group")}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	if len(resp.Groups) != 1 {
		return nil, fmt.Errorf("kafka-go described %d groups", len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.Error != nil {
		return nil, clientError(g.Error)
	}
	members := []map[string]any{}
	for _, m := range g.Members {
		parts := []int{}
		for _, t := range m.MemberAssignments.Topics {
			parts = append(parts, t.Partitions...)
		}
		for i := 1; i < len(parts); i++ {
			for j := i; j > 0 && parts[j] < parts[j-1]; j-- {
				parts[j], parts[j-1] = parts[j-1], parts[j]
			}
		}
		members = append(members, map[string]any{"assignment": parts, "instance_id": nil})
	}
	// kafka-go's DescribeGroups answer keeps no protocol type and no protocol
	return map[string]any{"state": g.GroupState, "protocol_type": nil, "protocol": nil, "members": members}, nil
}

func (d *driver) listGroups(agent.Req) (any, error) {
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.ListGroupsResponse, error) {
		return c.ListGroups(ctx, &kafka.ListGroupsRequest{})
	})
	if err != nil {
		return nil, clientError(err)
	}
	if resp.Error != nil {
		return nil, clientError(resp.Error)
	}
	out := map[string]map[string]any{}
	for _, g := range resp.Groups {
		out[g.GroupID] = map[string]any{"protocol_type": g.ProtocolType, "state": nil}
	}
	return out, nil
}

func (d *driver) deleteGroup(req agent.Req) (any, error) {
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.DeleteGroupsResponse, error) {
		return c.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{req.Str("group")}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	return nil, clientError(resp.Errors[req.Str("group")])
}

func (d *driver) deleteOffsets(req agent.Req) (any, error) {
	var ps []int
	req.Into("partitions", &ps)
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.OffsetDeleteResponse, error) {
		return c.OffsetDelete(ctx, &kafka.OffsetDeleteRequest{GroupID: req.Str("group"),
			Topics: map[string][]int{req.Str("topic"): ps}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	if resp.Error != nil {
		return nil, clientError(resp.Error)
	}
	for _, p := range resp.Topics[req.Str("topic")] {
		if p.Error != nil {
			return nil, clientError(p.Error)
		}
	}
	return nil, nil
}

func (d *driver) fetchCommitted(group, topic string, ps []int) (map[int][2]any, error) {
	resp, err := admin(d, func(ctx context.Context, c *kafka.Client) (*kafka.OffsetFetchResponse, error) {
		return c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	})
	if err != nil {
		return nil, clientError(err)
	}
	if resp.Error != nil {
		return nil, clientError(resp.Error)
	}
	out := map[int][2]any{}
	for _, p := range resp.Topics[topic] {
		if p.Error == nil && p.CommittedOffset >= 0 {
			out[p.Partition] = [2]any{p.CommittedOffset, p.Metadata}
		}
	}
	return out, nil
}

func (d *driver) committed(req agent.Req) (any, error) {
	var ps []int
	for p := 0; p < int(req.Int("partitions")); p++ {
		ps = append(ps, p)
	}
	got, err := d.fetchCommitted(req.Str("group"), req.Str("topic"), ps)
	if err != nil {
		return nil, err
	}
	out := map[string][2]any{}
	for p, v := range got {
		out[strconv.Itoa(p)] = v
	}
	return out, nil
}

// ------------------------------------------------------------------------------------------ members

func (d *driver) OpenMember(o agent.MemberOptions) (agent.Member, error) {
	start, err := startOffset(o.OffsetReset)
	if err != nil {
		return nil, err
	}
	if o.InstanceID != nil {
		return nil, agent.Unsupportedf("kafka-go has no static membership (group.instance.id)")
	}
	if o.Assign != nil {
		return d.openAssigned(o, start)
	}
	return d.openSubscribed(o, start)
}

// reading is one partition Reader feeding an Inbox until its context ends.
func reading(ctx context.Context, r *kafka.Reader, inbox *agent.Inbox) {
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, io.EOF) {
				var ce *agent.ClientError
				if errors.As(clientError(err), &ce) {
					inbox.AddError(ce)
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			return
		}
		inbox.Add(toRec(m))
	}
}

// assigned: a Reader per partition, no membership; starts at the committed offset, commits with
// generation -1 (Client.OffsetCommit), as kafka-go users who assign partitions themselves do.
type assigned struct {
	agent.Inbox
	d       *driver
	o       agent.MemberOptions
	mu      sync.Mutex
	readers map[int]*kafka.Reader
	cancels map[int]context.CancelFunc
	closed  bool
}

func (d *driver) openAssigned(o agent.MemberOptions, start int64) (agent.Member, error) {
	ps := make([]int, 0, len(o.Assign))
	for _, p := range o.Assign {
		ps = append(ps, int(p))
	}
	committed, err := d.fetchCommitted(o.Group, o.Topic, ps)
	if err != nil {
		return nil, err
	}
	m := &assigned{d: d, o: o, readers: map[int]*kafka.Reader{}, cancels: map[int]context.CancelFunc{}}
	for _, p := range ps {
		offset := start
		if c, ok := committed[p]; ok {
			offset = c[0].(int64)
		}
		if err := m.read(p, offset); err != nil {
			_ = m.Close()
			return nil, err
		}
		m.Assign([]agent.TP{{Topic: o.Topic, Partition: int32(p)}}, true)
	}
	return m, nil
}

func (m *assigned) read(p int, offset int64) error {
	r, err := m.d.reader(m.o.Topic, p, offset)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.readers[p], m.cancels[p] = r, cancel
	go reading(ctx, r, &m.Inbox)
	return nil
}

func (m *assigned) Commit(offsets []agent.CommitOffset) error {
	topics := map[string][]kafka.OffsetCommit{}
	for _, o := range offsets {
		meta := ""
		if o.Metadata != nil {
			meta = *o.Metadata
		}
		topics[o.Topic] = append(topics[o.Topic], kafka.OffsetCommit{Partition: int(o.Partition), Offset: o.Offset,
			Metadata: meta})
	}
	resp, err := admin(m.d, func(ctx context.Context, c *kafka.Client) (*kafka.OffsetCommitResponse, error) {
		return c.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: m.o.Group, GenerationID: -1, Topics: topics})
	})
	if err != nil {
		return clientError(err)
	}
	for _, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return clientError(p.Error)
			}
		}
	}
	return nil
}

func (m *assigned) Position(agent.TP) (*int64, error) {
	return nil, agent.Unsupportedf("kafka-go's Reader.Offset is not the fetch position before a record is read")
}

// Seek: Reader.SetOffset, which a partition Reader accepts while running.
func (m *assigned) Seek(tp agent.TP, offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.readers[int(tp.Partition)]
	if !ok {
		return fmt.Errorf("%s/%d is not assigned", tp.Topic, tp.Partition)
	}
	return clientError(r.SetOffset(offset))
}

func (m *assigned) Pause([]agent.TP, bool) error {
	return agent.Unsupportedf("kafka-go's Reader cannot pause")
}

func (m *assigned) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for p, r := range m.readers {
		m.cancels[p]()
		_ = r.Close()
	}
	return nil
}

// subscribed: a ConsumerGroup; each generation starts a Reader per assigned partition at the offset the
// generation gives (committed, else StartOffset) and is the one that commits.
type subscribed struct {
	agent.Inbox
	cg     *kafka.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	gen    *kafka.Generation
	closed bool
}

func (d *driver) openSubscribed(o agent.MemberOptions, start int64) (agent.Member, error) {
	session := o.SessionTimeoutMs
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: o.Group, Brokers: d.bootstrap,
		Topics: []string{o.Topic}, StartOffset: start, SessionTimeout: time.Duration(session) * time.Millisecond,
		HeartbeatInterval: time.Duration(min(d.timing.HeartbeatMs, max(1, session/3))) * time.Millisecond,
		RebalanceTimeout:  d.timing.Op(), JoinGroupBackoff: 100 * time.Millisecond, Timeout: d.timing.Op()})
	if err != nil {
		return nil, clientError(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &subscribed{cg: cg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			gen, err := cg.Next(ctx)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
					return
				}
				var ce *agent.ClientError
				if errors.As(clientError(err), &ce) {
					m.AddError(ce)
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			m.mu.Lock()
			m.gen = gen
			m.mu.Unlock()
			var held []agent.TP
			for _, pa := range gen.Assignments[o.Topic] {
				held = append(held, agent.TP{Topic: o.Topic, Partition: int32(pa.ID)})
				gen.Start(func(gctx context.Context) {
					r := kafka.NewReader(kafka.ReaderConfig{Brokers: d.bootstrap, Topic: o.Topic,
						Partition: pa.ID, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 100 * time.Millisecond,
						ErrorLogger: errorLog("member reader")})
					defer func() { _ = r.Close() }()
					if err := r.SetOffset(pa.Offset); err != nil {
						return
					}
					reading(gctx, r, &m.Inbox)
				})
			}
			m.Assign(m.Assignment(), false)
			m.Assign(held, true)
		}
	}()
	return m, nil
}

func (m *subscribed) Commit(offsets []agent.CommitOffset) error {
	m.mu.Lock()
	gen := m.gen
	m.mu.Unlock()
	if gen == nil {
		return &agent.ClientError{Code: "CLIENT:NoGeneration", Type: "kafka-go", Message: "not in a generation yet"}
	}
	commit := map[string]map[int]int64{}
	for _, o := range offsets {
		if o.Metadata != nil {
			return agent.Unsupportedf("kafka-go's Generation.CommitOffsets commits no metadata")
		}
		if commit[o.Topic] == nil {
			commit[o.Topic] = map[int]int64{}
		}
		commit[o.Topic][int(o.Partition)] = o.Offset
	}
	return clientError(gen.CommitOffsets(commit))
}

func (m *subscribed) Position(agent.TP) (*int64, error) {
	return nil, agent.Unsupportedf("kafka-go does not expose a group member's position")
}

func (m *subscribed) Seek(agent.TP, int64) error {
	return agent.Unsupportedf("a kafka-go ConsumerGroup member cannot seek")
}

func (m *subscribed) Pause([]agent.TP, bool) error {
	return agent.Unsupportedf("kafka-go's Reader cannot pause")
}

// Close leaves the group (ConsumerGroup.Close sends LeaveGroup).
func (m *subscribed) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	err := m.cg.Close()
	m.cancel()
	<-m.done
	return clientError(err)
}
