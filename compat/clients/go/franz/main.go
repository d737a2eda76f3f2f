// The compat suite's driver for franz-go (kgo for producing and consuming, kadm for the admin API), in the
// agent protocol of compat/clients/agent.py (see package agent).
//
// Usage: franz BOOTSTRAP TIMING_JSON
//
// Errors become Kafka's names: a *kerr.Error by its name, a context deadline or kgo.ErrRecordTimeout as
// TIMEOUT, any other error of the client as CLIENT:<type>. What kgo cannot do is answered as unsupported,
// with why: a fetch position (kgo has no position()), auto.offset.reset=none for a partition without a
// committed offset (kgo's NoResetOffset starts at the log start), commit metadata from a group member
// (kgo commits the member id as metadata).
package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"fakekafka/compat/clients/go/agent"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type driver struct {
	bootstrap []string
	timing    agent.Timing
	admin     *kadm.Client
	adminCl   *kgo.Client
}

func main() {
	bootstrap, timing := agent.ReadArgs()
	agent.Serve(&driver{bootstrap: bootstrap, timing: timing})
}

func (d *driver) Ops() map[string]func(agent.Req) (any, error) {
	ops := map[string]func(agent.Req) (any, error){
		"produce":           d.produce,
		"fetch":             d.fetch,
		"list_offsets":      d.listOffsets,
		"create_topic":      d.createTopic,
		"partition_count":   d.partitionCount,
		"delete_topic":      d.deleteTopic,
		"create_partitions": d.createPartitions,
		"describe_configs":  d.describeConfigs,
		"delete_records":    d.deleteRecords,
		"describe_group":    d.describeGroup,
		"list_groups":       d.listGroups,
		"delete_group":      d.deleteGroup,
		"delete_offsets":    d.deleteOffsets,
		"committed":         d.committed,
	}
	d.txnOps(ops)
	return ops
}

func (d *driver) Close() {
	d.closeTxns()
	if d.adminCl != nil {
		d.adminCl.Close()
	}
}

func (d *driver) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d.timing.Op())
}

func (d *driver) base(opts ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(d.bootstrap...), kgo.RequestTimeoutOverhead(d.timing.Op()),
		kgo.RetryTimeout(d.timing.Op())}, opts...)
}

func (d *driver) kadm() (*kadm.Client, error) {
	if d.admin == nil {
		cl, err := kgo.NewClient(d.base()...)
		if err != nil {
			return nil, clientError(err)
		}
		d.adminCl, d.admin = cl, kadm.NewClient(cl)
	}
	return d.admin, nil
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
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &agent.ClientError{Code: ke.Message, Type: "kerr.Error", Message: err.Error()}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrRecordTimeout) {
		return &agent.ClientError{Code: "TIMEOUT", Type: fmt.Sprintf("%T", err), Message: err.Error()}
	}
	if strings.HasPrefix(err.Error(), "invalid record partitioning choice") {
		// a partition metadata does not show: kgo fails the record without sending it
		return &agent.ClientError{Code: "CLIENT_REJECTED", Type: fmt.Sprintf("%T", err), Message: err.Error()}
	}
	return &agent.ClientError{Code: "CLIENT:" + fmt.Sprintf("%T", err), Type: fmt.Sprintf("%T", err),
		Message: err.Error()}
}

// ------------------------------------------------------------------------------------------ records

func toRec(r *kgo.Record) agent.Rec {
	hs := make([]agent.Header, 0, len(r.Headers))
	for _, h := range r.Headers {
		hs = append(hs, agent.Header{Key: h.Key, Value: h.Value})
	}
	ts := int64(-1)
	if !r.Timestamp.IsZero() {
		ts = r.Timestamp.UnixMilli()
	}
	return agent.NewRec(r.Key, r.Value, hs, r.Partition, r.Offset, ts)
}

// partitioner: a record that names its partition goes there, the others where kgo's default
// partitioner (UniformBytesPartitioner: murmur2 of the key, as Kafka's Java client) puts them. kgo calls
// PartitionByBackup and OnNewBatch on the default one, so the wrapper offers them too.
type partitioner struct{ def kgo.Partitioner }

type topicPartitioner struct{ def kgo.TopicPartitioner }

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	return topicPartitioner{p.def.ForTopic(t)}
}

func (p topicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || p.def.RequiresConsistency(r)
}

func (p topicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	return p.def.Partition(r, n)
}

func (p topicPartitioner) PartitionByBackup(r *kgo.Record, n int, backup kgo.TopicBackupIter) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	if b, ok := p.def.(kgo.TopicBackupPartitioner); ok {
		return b.PartitionByBackup(r, n, backup)
	}
	return p.def.Partition(r, n)
}

func (p topicPartitioner) OnNewBatch() {
	if b, ok := p.def.(kgo.TopicPartitionerOnNewBatch); ok {
		b.OnNewBatch()
	}
}

var codecs = map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}

func (d *driver) produce(req agent.Req) (any, error) {
	codec, ok := codecs[req.Str("codec")]
	if !ok {
		return nil, agent.Unsupportedf("franz-go has no codec %q", req.Str("codec"))
	}
	oneBatch := req.Bool("one_batch")
	opts := d.base(kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(partitioner{kgo.UniformBytesPartitioner(64<<10, true, true, nil)}),
		kgo.ProduceRequestTimeout(d.timing.Op())) // not RecordDeliveryTimeout: kgo counts it from the record's timestamp
	if oneBatch {
		opts = append(opts, kgo.ProducerLinger(time.Minute), kgo.ProducerBatchMaxBytes(4<<20))
	} else {
		opts = append(opts, kgo.ProducerLinger(0))
	}
	if req.Has("max_request_bytes") {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(req.Int("max_request_bytes"))))
	}
	idempotent := true // kgo's default
	req.Into("idempotent", &idempotent)
	if req.Has("acks") {
		switch req.Int("acks") {
		case 0:
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
			idempotent = false // kgo refuses idempotence without acks=all
		case 1:
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
			idempotent = false
		default:
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		}
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, clientError(err)
	}
	defer cl.Close()
	var recs []agent.Rec
	req.Into("recs", &recs)
	topic := req.Str("topic")
	ctx, cancel := context.WithTimeout(context.Background(), d.timing.Op()+5*time.Second)
	defer cancel()
	results := make([]*kgo.Record, len(recs))
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		rec := &kgo.Record{Topic: topic, Key: agent.Unhex(r.K), Value: agent.Unhex(r.V), Partition: -1}
		for _, h := range r.Headers() {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		if r.P != nil {
			rec.Partition = *r.P
		}
		if r.TS != nil {
			rec.Timestamp = time.UnixMilli(*r.TS)
		}
		wg.Add(1)
		cl.Produce(ctx, rec, func(done *kgo.Record, err error) {
			results[i], errs[i] = done, err
			wg.Done()
		})
	}
	if err := cl.Flush(ctx); err != nil {
		wg.Wait()
	}
	wg.Wait()
	out := make([][2]int64, 0, len(recs))
	for i, r := range results {
		if errs[i] != nil {
			return nil, clientError(errs[i])
		}
		out = append(out, [2]int64{int64(r.Partition), r.Offset})
	}
	return out, nil
}

func resetOffset(reset string) (kgo.Offset, error) {
	switch reset {
	case "earliest", "":
		return kgo.NewOffset().AtStart(), nil
	case "latest":
		return kgo.NewOffset().AtEnd(), nil
	case "none":
		return kgo.NoResetOffset(), nil
	}
	return kgo.Offset{}, fmt.Errorf("unknown reset %q", reset)
}

func (d *driver) fetch(req agent.Req) (any, error) {
	topic, partition, count := req.Str("topic"), int32(req.Int("partition")), int(req.Int("count"))
	reset, err := resetOffset(req.Str("reset"))
	if err != nil {
		return nil, err
	}
	opts := d.base(kgo.ConsumeResetOffset(reset), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topic: {partition: kgo.NewOffset().At(req.Int("offset"))}}))
	if req.Str("isolation") == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, clientError(err)
	}
	defer cl.Close()
	got := []agent.Rec{}
	deadline := time.Now().Add(d.timing.FetchWait(req))
	for len(got) < count && time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		fetches := cl.PollFetches(ctx)
		cancel()
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return nil, clientError(fe.Err)
			}
		}
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, toRec(r)) })
	}
	if len(got) > count {
		got = got[:count]
	}
	return got, nil
}

// ------------------------------------------------------------------------------------------ admin

func (d *driver) listOffsets(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	topic, partition := req.Str("topic"), int32(req.Int("partition"))
	ctx, cancel := d.ctx()
	defer cancel()
	var spec any
	req.Into("spec", &spec)
	var listed kadm.ListedOffsets
	switch s := spec.(type) {
	case string:
		switch s {
		case "earliest":
			listed, err = adm.ListStartOffsets(ctx, topic)
		case "latest":
			if req.Str("isolation") == "read_committed" { // the last stable offset
				listed, err = adm.ListCommittedOffsets(ctx, topic)
			} else {
				listed, err = adm.ListEndOffsets(ctx, topic)
			}
		case "max_timestamp":
			listed, err = adm.ListMaxTimestampOffsets(ctx, topic)
		default:
			return nil, fmt.Errorf("unknown offset spec %q", s)
		}
	case float64:
		listed, err = adm.ListOffsetsAfterMilli(ctx, int64(s), topic)
	default:
		return nil, fmt.Errorf("unknown offset spec %v", spec)
	}
	if err != nil {
		return nil, clientError(err)
	}
	o, ok := listed.Lookup(topic, partition)
	if !ok {
		return nil, &agent.ClientError{Code: "UNKNOWN_TOPIC_OR_PARTITION", Type: "kadm",
			Message: "kadm listed no offset for the partition"}
	}
	if o.Err != nil {
		return nil, clientError(o.Err)
	}
	if o.Offset < 0 {
		return nil, nil
	}
	return o.Offset, nil
}

func (d *driver) createTopic(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	configs := map[string]*string{}
	var raw map[string]string
	req.Into("configs", &raw)
	for k, v := range raw {
		configs[k] = &v
	}
	ctx, cancel := d.ctx()
	defer cancel()
	create := adm.CreateTopics
	if req.Bool("validate_only") {
		create = adm.ValidateCreateTopics
	}
	resp, err := create(ctx, int32(req.Int("partitions")), int16(req.Int("replication_factor")), configs,
		req.Str("topic"))
	if err != nil {
		return nil, clientError(err)
	}
	for _, r := range resp {
		if r.Err != nil {
			return nil, clientError(r.Err)
		}
	}
	return nil, nil
}

func (d *driver) partitionCount(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.ctx()
	defer cancel()
	topic := req.Str("topic")
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, clientError(err)
	}
	t, ok := topics[topic]
	if !ok {
		return nil, &agent.ClientError{Code: "UNKNOWN_TOPIC_OR_PARTITION", Type: "kadm", Message: "not listed"}
	}
	if t.Err != nil {
		return nil, clientError(t.Err)
	}
	return len(t.Partitions), nil
}

func (d *driver) deleteTopic(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.ctx()
	defer cancel()
	resp, err := adm.DeleteTopic(ctx, req.Str("topic"))
	if err == nil {
		err = resp.Err
	}
	return nil, clientError(err)
}

func (d *driver) createPartitions(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.ctx()
	defer cancel()
	update := adm.UpdatePartitions
	if req.Bool("validate_only") {
		update = adm.ValidateUpdatePartitions
	}
	resp, err := update(ctx, int(req.Int("count")), req.Str("topic"))
	if err != nil {
		return nil, clientError(err)
	}
	for _, r := range resp {
		if r.Err != nil {
			return nil, clientError(r.Err)
		}
	}
	return nil, nil
}

// describeConfigs goes through kmsg (franz-go's typed requests): kadm's Config has no read-only flag.
func (d *driver) describeConfigs(req agent.Req) (any, error) {
	if _, err := d.kadm(); err != nil {
		return nil, err
	}
	var keys []string
	req.Into("keys", &keys)
	r := kmsg.NewPtrDescribeConfigsRequest()
	r.IncludeSynonyms = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	if req.Str("resource") == "topic" {
		res.ResourceType = kmsg.ConfigResourceTypeTopic
	}
	res.ResourceName = req.Str("name")
	res.ConfigNames = keys
	r.Resources = append(r.Resources, res)
	ctx, cancel := d.ctx()
	defer cancel()
	var resp *kmsg.DescribeConfigsResponse
	var err error
	if res.ResourceType == kmsg.ConfigResourceTypeBroker {
		// a broker's configs are answered by that broker
		id, perr := strconv.Atoi(res.ResourceName)
		if perr != nil {
			return nil, perr
		}
		resp, err = r.RequestWith(ctx, d.adminCl.Broker(id))
	} else {
		resp, err = r.RequestWith(ctx, d.adminCl)
	}
	if err != nil {
		return nil, clientError(err)
	}
	out := map[string]map[string]any{}
	for _, rr := range resp.Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			return nil, clientError(err)
		}
		for _, c := range rr.Configs {
			synonyms := [][3]any{}
			for _, s := range c.ConfigSynonyms {
				synonyms = append(synonyms, [3]any{s.Name, s.Value, s.Source.String()})
			}
			out[c.Name] = map[string]any{"value": c.Value, "source": c.Source.String(), "read_only": c.ReadOnly,
				"sensitive": c.IsSensitive, "synonyms": synonyms}
		}
	}
	return out, nil
}

func (d *driver) deleteRecords(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	topic, partition := req.Str("topic"), int32(req.Int("partition"))
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: partition, At: req.Int("before"), LeaderEpoch: -1})
	ctx, cancel := d.ctx()
	defer cancel()
	resp, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		return nil, clientError(err)
	}
	r, ok := resp.Lookup(topic, partition)
	if !ok {
		return nil, fmt.Errorf("kadm answered nothing for %s/%d", topic, partition)
	}
	if r.Err != nil {
		return nil, clientError(r.Err)
	}
	return r.LowWatermark, nil
}

func (d *driver) describeGroup(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	group := req.Str("group")
	ctx, cancel := d.ctx()
	defer cancel()
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, clientError(err)
	}
	g, ok := described[group]
	if !ok {
		return nil, fmt.Errorf("kadm described no group %s", group)
	}
	if g.Err != nil {
		return nil, clientError(g.Err)
	}
	members := []map[string]any{}
	for _, m := range g.Members {
		parts := []int32{}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				parts = append(parts, t.Partitions...)
			}
		}
		members = append(members, map[string]any{"assignment": sorted(parts), "instance_id": m.InstanceID})
	}
	return map[string]any{"state": g.State, "protocol_type": g.ProtocolType, "protocol": g.Protocol,
		"members": members}, nil
}

func sorted(ps []int32) []int32 {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j] < ps[j-1]; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	return ps
}

func (d *driver) listGroups(agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.ctx()
	defer cancel()
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, clientError(err)
	}
	out := map[string]map[string]any{}
	for name, g := range groups {
		out[name] = map[string]any{"protocol_type": g.ProtocolType, "state": g.State}
	}
	return out, nil
}

func (d *driver) deleteGroup(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	ctx, cancel := d.ctx()
	defer cancel()
	resp, err := adm.DeleteGroup(ctx, req.Str("group"))
	if err == nil {
		err = resp.Err
	}
	return nil, clientError(err)
}

func (d *driver) deleteOffsets(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	var partitions []int32
	req.Into("partitions", &partitions)
	set := kadm.TopicsSet{}
	set.Add(req.Str("topic"), partitions...)
	ctx, cancel := d.ctx()
	defer cancel()
	resp, err := adm.DeleteOffsets(ctx, req.Str("group"), set)
	if err != nil {
		return nil, clientError(err)
	}
	return nil, clientError(resp.Error())
}

func (d *driver) committed(req agent.Req) (any, error) {
	adm, err := d.kadm()
	if err != nil {
		return nil, err
	}
	topic := req.Str("topic")
	ctx, cancel := d.ctx()
	defer cancel()
	resp, err := adm.FetchOffsetsForTopics(ctx, req.Str("group"), topic)
	if err != nil {
		return nil, clientError(err)
	}
	out := map[string][2]any{}
	for p := int32(0); p < int32(req.Int("partitions")); p++ {
		o, ok := resp.Lookup(topic, p)
		if !ok || o.Err != nil || o.At < 0 {
			continue
		}
		out[strconv.Itoa(int(p))] = [2]any{o.At, o.Metadata}
	}
	return out, nil
}

// ------------------------------------------------------------------------------------------ members

// member is one kgo client with a group: subscribed (kgo's group consumer, its default balancer
// cooperative-sticky) or assigned (kgo's direct partition consumer, starting where the group committed,
// committing through kadm as franz-go's manual-assignment users do). PollFetches runs on a goroutine.
type member struct {
	agent.Inbox
	d      *driver
	o      agent.MemberOptions
	cl     *kgo.Client
	stop   chan struct{}
	done   chan struct{}
	closed bool
	mu     sync.Mutex
}

func (d *driver) OpenMember(o agent.MemberOptions) (agent.Member, error) {
	m := &member{d: d, o: o, stop: make(chan struct{}), done: make(chan struct{})}
	reset, err := resetOffset(o.OffsetReset)
	if err != nil {
		return nil, err
	}
	opts := d.base(kgo.ConsumeResetOffset(reset), kgo.FetchMaxWait(200*time.Millisecond))
	if o.Assign == nil {
		session := o.SessionTimeoutMs
		heartbeat := min(d.timing.HeartbeatMs, max(1, session/3))
		opts = append(opts, kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.Topic), kgo.DisableAutoCommit(),
			kgo.SessionTimeout(time.Duration(session)*time.Millisecond),
			kgo.HeartbeatInterval(time.Duration(heartbeat)*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				m.Assign(tps(a), true)
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
				m.Assign(tps(r), false)
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
				m.Assign(tps(l), false)
			}))
		if o.InstanceID != nil {
			opts = append(opts, kgo.InstanceID(*o.InstanceID))
		}
		if o.GroupProtocol == "consumer" {
			// KIP-848: the broker assigns; kgo sends ServerAssignor "uniform" for its sticky balancers
			// (the default cooperative-sticky one) and falls back to the classic protocol on a broker
			// without ConsumerGroupHeartbeat v1
			opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
		} else if o.GroupProtocol != "" {
			return nil, agent.Unsupportedf("group.protocol=%s", o.GroupProtocol)
		}
	} else {
		start, err := m.startOffsets(o.OffsetReset)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: start}))
		held := make([]agent.TP, 0, len(o.Assign))
		for _, p := range o.Assign {
			held = append(held, agent.TP{Topic: o.Topic, Partition: p})
		}
		m.Assign(held, true)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, clientError(err)
	}
	m.cl = cl
	go m.poll()
	return m, nil
}

func tps(m map[string][]int32) []agent.TP {
	var out []agent.TP
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, agent.TP{Topic: t, Partition: p})
		}
	}
	return out
}

// startOffsets: where an assigned member starts, the group's committed offset, else the reset policy.
func (m *member) startOffsets(reset string) (map[int32]kgo.Offset, error) {
	adm, err := m.d.kadm()
	if err != nil {
		return nil, err
	}
	ctx, cancel := m.d.ctx()
	defer cancel()
	committed, err := adm.FetchOffsetsForTopics(ctx, m.o.Group, m.o.Topic)
	if err != nil {
		return nil, clientError(err)
	}
	start := map[int32]kgo.Offset{}
	for _, p := range m.o.Assign {
		if c, ok := committed.Lookup(m.o.Topic, p); ok && c.Err == nil && c.At >= 0 {
			start[p] = kgo.NewOffset().At(c.At)
			continue
		}
		switch reset {
		case "latest":
			start[p] = kgo.NewOffset().AtEnd()
		case "none":
			return nil, agent.Unsupportedf("franz-go has no auto.offset.reset=none for a partition without " +
				"a committed offset (kgo.NoResetOffset starts at the log start)")
		default:
			start[p] = kgo.NewOffset().AtStart()
		}
	}
	return start, nil
}

func (m *member) poll() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		fetches := m.cl.PollFetches(ctx)
		cancel()
		if fetches.IsClientClosed() {
			return
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			var ce *agent.ClientError
			if errors.As(clientError(fe.Err), &ce) {
				m.AddError(ce)
			}
			time.Sleep(100 * time.Millisecond)
		}
		var got []agent.Rec
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, toRec(r)) })
		m.Add(got...)
	}
}

func (m *member) Commit(offsets []agent.CommitOffset) error {
	ctx, cancel := m.d.ctx()
	defer cancel()
	if m.o.Assign != nil { // no membership: a simple commit (generation -1), as kadm makes it
		adm, err := m.d.kadm()
		if err != nil {
			return err
		}
		os := kadm.Offsets{}
		for _, o := range offsets {
			meta := ""
			if o.Metadata != nil {
				meta = *o.Metadata
			}
			os.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1,
				Metadata: meta})
		}
		resp, err := adm.CommitOffsets(ctx, m.o.Group, os)
		if err != nil {
			return clientError(err)
		}
		return clientError(resp.Error())
	}
	uncommitted := map[string]map[int32]kgo.EpochOffset{}
	for _, o := range offsets {
		if o.Metadata != nil {
			return agent.Unsupportedf("kgo commits its member id as the metadata of a group member's commit")
		}
		if uncommitted[o.Topic] == nil {
			uncommitted[o.Topic] = map[int32]kgo.EpochOffset{}
		}
		uncommitted[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
	}
	var commitErr error
	m.cl.CommitOffsetsSync(ctx, uncommitted,
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				commitErr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil && commitErr == nil {
						commitErr = e
					}
				}
			}
		})
	return clientError(commitErr)
}

func (m *member) Position(agent.TP) (*int64, error) {
	return nil, agent.Unsupportedf("kgo does not expose a consumer's fetch position")
}

func (m *member) Seek(tp agent.TP, offset int64) error {
	m.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{tp.Topic: {tp.Partition: {Epoch: -1, Offset: offset}}})
	return nil
}

func (m *member) Pause(list []agent.TP, paused bool) error {
	ps := map[string][]int32{}
	for _, tp := range list {
		ps[tp.Topic] = append(ps[tp.Topic], tp.Partition)
	}
	if paused {
		m.cl.PauseFetchPartitions(ps)
	} else {
		m.cl.ResumeFetchPartitions(ps)
	}
	return nil
}

// Close leaves the group (kgo's Close sends LeaveGroup for a dynamic member) and stops polling.
func (m *member) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	close(m.stop)
	<-m.done
	if m.o.Assign == nil {
		ctx, cancel := m.d.ctx()
		defer cancel()
		if err := m.cl.LeaveGroupContext(ctx); err != nil {
			m.cl.Close()
			return clientError(err)
		}
	}
	m.cl.Close()
	return nil
}
