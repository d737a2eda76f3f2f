// The compat suite's driver for IBM/sarama (SyncProducer, Consumer, ClusterAdmin, ConsumerGroup and
// OffsetManager), in the agent protocol of compat/clients/agent.py (see package agent).
//
// Usage: sarama BOOTSTRAP TIMING_JSON
//
// sarama runs with its default protocol version (sarama.DefaultVersion, 2.8), as a user who sets none.
// Errors become Kafka's names: a sarama.KError by its code (named with franz-go's kerr table), a timeout
// as TIMEOUT, any other error as CLIENT:<type>. Unsupported, with why: auto.offset.reset=none (sarama's
// Consumer.Offsets.Initial is oldest or newest), a consumer's position, seeking a subscribed member,
// ListOffsets for the max timestamp, reading from an offset outside the log (ConsumePartition refuses it
// with ErrOffsetOutOfRange: sarama resets only the offsets it looks up itself).
//
// How sarama is used, as its users do: a record without a partition goes where sarama's default
// HashPartitioner puts it (FNV-1a of the key), one with a partition goes there (a partitioner that reads
// the partition the record carries); a fetch is a PartitionConsumer from the offset (sarama refuses an
// offset out of range, it does not reset); an assigned member is a PartitionConsumer starting at the
// group's committed offset (a PartitionOffsetManager) and commits through it; a subscribed member is a
// ConsumerGroup (range assignor) whose session commits. DeleteRecords returns no low watermark: it is read
// with Client.GetOffset(oldest) afterwards.
package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"fakekafka/compat/clients/go/agent"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
)

type driver struct {
	bootstrap []string
	timing    agent.Timing
	client    sarama.Client
	admin     sarama.ClusterAdmin
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
	if d.admin != nil {
		_ = d.admin.Close()
	}
	if d.client != nil {
		_ = d.client.Close()
	}
}

func (d *driver) config() *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "compat-sarama"
	c.Net.DialTimeout = d.timing.Op()
	c.Net.ReadTimeout = d.timing.Op()
	c.Net.WriteTimeout = d.timing.Op()
	c.Admin.Timeout = d.timing.Op()
	c.Producer.Timeout = d.timing.Op()
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 100 * time.Millisecond
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	return c
}

func (d *driver) shared() (sarama.Client, sarama.ClusterAdmin, error) {
	if d.client == nil {
		cl, err := sarama.NewClient(d.bootstrap, d.config())
		if err != nil {
			return nil, nil, clientError(err)
		}
		adm, err := sarama.NewClusterAdminFromClient(cl)
		if err != nil {
			_ = cl.Close()
			return nil, nil, clientError(err)
		}
		d.client, d.admin = cl, adm
	}
	return d.client, d.admin, nil
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
	var pe sarama.ProducerErrors
	if errors.As(err, &pe) && len(pe) > 0 {
		return clientError(pe[0].Err)
	}
	var cerr *sarama.ConsumerError
	if errors.As(err, &cerr) {
		return clientError(cerr.Err)
	}
	var ke sarama.KError
	if errors.As(err, &ke) {
		if ke == sarama.ErrNoError {
			return nil
		}
		if named, ok := kerr.ErrorForCode(int16(ke)).(*kerr.Error); ok {
			return &agent.ClientError{Code: named.Message, Type: "sarama.KError", Message: err.Error()}
		}
		return &agent.ClientError{Code: fmt.Sprintf("UNKNOWN_ERROR_%d", int16(ke)), Type: "sarama.KError",
			Message: err.Error()}
	}
	var te *sarama.TopicError
	if errors.As(err, &te) && te.Err != sarama.ErrNoError {
		return clientError(te.Err)
	}
	var tpe *sarama.TopicPartitionError
	if errors.As(err, &tpe) && tpe.Err != sarama.ErrNoError {
		return clientError(tpe.Err)
	}
	if errors.Is(err, sarama.ErrInvalidPartition) {
		// a partition metadata does not show: sarama fails the record without sending it
		return &agent.ClientError{Code: "CLIENT_REJECTED", Type: fmt.Sprintf("%T", err), Message: err.Error()}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &agent.ClientError{Code: "TIMEOUT", Type: fmt.Sprintf("%T", err), Message: err.Error()}
	}
	return &agent.ClientError{Code: "CLIENT:" + fmt.Sprintf("%T", err), Type: fmt.Sprintf("%T", err),
		Message: err.Error()}
}

// ------------------------------------------------------------------------------------------ records

func toRec(m *sarama.ConsumerMessage) agent.Rec {
	hs := make([]agent.Header, 0, len(m.Headers))
	for _, h := range m.Headers {
		hs = append(hs, agent.Header{Key: string(h.Key), Value: h.Value})
	}
	ts := int64(-1)
	if !m.Timestamp.IsZero() && m.Timestamp.UnixMilli() >= 0 {
		ts = m.Timestamp.UnixMilli()
	}
	return agent.NewRec(m.Key, m.Value, hs, m.Partition, m.Offset, ts)
}

// explicit marks a record that carries its partition (ProducerMessage.Metadata).
type explicit struct{}

// partitioner: a record that names its partition goes there, the others where sarama's default
// HashPartitioner puts them.
type partitioner struct{ def sarama.Partitioner }

func newPartitioner(topic string) sarama.Partitioner {
	return partitioner{sarama.NewHashPartitioner(topic)}
}

func (p partitioner) Partition(m *sarama.ProducerMessage, n int32) (int32, error) {
	if _, ok := m.Metadata.(explicit); ok {
		return m.Partition, nil
	}
	return p.def.Partition(m, n)
}

func (p partitioner) RequiresConsistency() bool { return true }

var codecs = map[string]sarama.CompressionCodec{"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD}

func bytesEncoder(b []byte) sarama.Encoder {
	if b == nil {
		return nil
	}
	return sarama.ByteEncoder(b)
}

func (d *driver) produce(req agent.Req) (any, error) {
	codec, ok := codecs[req.Str("codec")]
	if !ok {
		return nil, agent.Unsupportedf("sarama has no codec %q", req.Str("codec"))
	}
	var recs []agent.Rec
	req.Into("recs", &recs)
	c := d.config()
	c.Producer.Return.Successes = true
	c.Producer.Compression = codec
	c.Producer.Partitioner = newPartitioner
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	if req.Bool("one_batch") {
		c.Producer.Flush.Messages = len(recs)
		c.Producer.Flush.Frequency = time.Minute
		c.Producer.Flush.MaxMessages = len(recs)
		c.Producer.Flush.Bytes = 16 << 20
	}
	if req.Has("max_request_bytes") {
		c.Producer.MaxMessageBytes = int(req.Int("max_request_bytes"))
	}
	if req.Has("acks") {
		c.Producer.RequiredAcks = sarama.RequiredAcks(req.Int("acks"))
	}
	if req.Bool("idempotent") {
		c.Producer.Idempotent = true
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Net.MaxOpenRequests = 1
		// retried until the operation's timeout, as Kafka's own idempotent producer retries until
		// delivery.timeout.ms: a leader's broker lost takes Kafka broker.session.timeout.ms to replace, where
		// sarama's default three retries 100 ms apart give up after 0.3 s
		c.Producer.Retry.Max = int(d.timing.Op() / c.Producer.Retry.Backoff)
	}
	p, err := sarama.NewSyncProducer(d.bootstrap, c)
	if err != nil {
		return nil, clientError(err)
	}
	defer func() { _ = p.Close() }()
	msgs := make([]*sarama.ProducerMessage, 0, len(recs))
	for _, r := range recs {
		m := &sarama.ProducerMessage{Topic: req.Str("topic"), Key: bytesEncoder(agent.Unhex(r.K)),
			Value: bytesEncoder(agent.Unhex(r.V))}
		for _, h := range r.Headers() {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		if r.P != nil {
			m.Partition, m.Metadata = *r.P, explicit{}
		}
		if r.TS != nil {
			m.Timestamp = time.UnixMilli(*r.TS)
		}
		msgs = append(msgs, m)
	}
	if err := p.SendMessages(msgs); err != nil {
		return nil, clientError(err)
	}
	out := make([][2]int64, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, [2]int64{int64(m.Partition), m.Offset})
	}
	return out, nil
}

// outOfRange: sarama's ConsumePartition refuses an offset outside the log (ErrOffsetOutOfRange) where
// other clients reset by auto.offset.reset; sarama has no reset for an offset asked for, so a scenario that
// needs one is unsupported (on Kafka as on fakekafka: the compat tests check that both agree).
func outOfRange(err error) error {
	if errors.Is(err, sarama.ErrOffsetOutOfRange) {
		return agent.Unsupportedf("sarama refuses an offset out of range instead of resetting it (%v)", err)
	}
	return clientError(err)
}

func initialOffset(reset string) (int64, error) {
	switch reset {
	case "earliest", "":
		return sarama.OffsetOldest, nil
	case "latest":
		return sarama.OffsetNewest, nil
	case "none":
		return 0, agent.Unsupportedf("sarama has no auto.offset.reset=none (Consumer.Offsets.Initial is oldest or newest)")
	}
	return 0, fmt.Errorf("unknown reset %q", reset)
}

func (d *driver) fetch(req agent.Req) (any, error) {
	c := d.config()
	initial, err := initialOffset(req.Str("reset"))
	if err != nil {
		return nil, err
	}
	c.Consumer.Offsets.Initial = initial
	if req.Str("isolation") == "read_committed" {
		c.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	consumer, err := sarama.NewConsumer(d.bootstrap, c)
	if err != nil {
		return nil, clientError(err)
	}
	defer func() { _ = consumer.Close() }()
	pc, err := consumer.ConsumePartition(req.Str("topic"), int32(req.Int("partition")), req.Int("offset"))
	if err != nil {
		return nil, outOfRange(err)
	}
	defer func() { _ = pc.Close() }()
	count := int(req.Int("count"))
	got := []agent.Rec{}
	deadline := time.After(d.timing.FetchWait(req))
	for len(got) < count {
		select {
		case m := <-pc.Messages():
			got = append(got, toRec(m))
		case e := <-pc.Errors():
			return nil, clientError(e)
		case <-deadline:
			return got, nil
		}
	}
	return got, nil
}

// ------------------------------------------------------------------------------------------ admin

func (d *driver) listOffsets(req agent.Req) (any, error) {
	cl, _, err := d.shared()
	if err != nil {
		return nil, err
	}
	var spec any
	req.Into("spec", &spec)
	var at int64
	switch s := spec.(type) {
	case string:
		switch s {
		case "earliest":
			at = sarama.OffsetOldest
		case "latest":
			at = sarama.OffsetNewest
		case "max_timestamp":
			return nil, agent.Unsupportedf("sarama has no ListOffsets for the max timestamp (KIP-734)")
		default:
			return nil, fmt.Errorf("unknown offset spec %q", s)
		}
	case float64:
		at = int64(s)
	default:
		return nil, fmt.Errorf("unknown offset spec %v", spec)
	}
	if req.Str("isolation") == "read_committed" {
		return d.lastStable(cl, req.Str("topic"), int32(req.Int("partition")), at)
	}
	o, err := cl.GetOffset(req.Str("topic"), int32(req.Int("partition")), at)
	if err != nil {
		return nil, clientError(err)
	}
	if o < 0 {
		return nil, nil
	}
	return o, nil
}

func (d *driver) createTopic(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	var raw map[string]string
	req.Into("configs", &raw)
	configs := map[string]*string{}
	for k, v := range raw {
		configs[k] = &v
	}
	detail := &sarama.TopicDetail{NumPartitions: int32(req.Int("partitions")),
		ReplicationFactor: int16(req.Int("replication_factor")), ConfigEntries: configs}
	return nil, clientError(adm.CreateTopic(req.Str("topic"), detail, req.Bool("validate_only")))
}

func (d *driver) partitionCount(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	md, err := adm.DescribeTopics([]string{req.Str("topic")})
	if err != nil {
		return nil, clientError(err)
	}
	for _, t := range md {
		if t.Name == req.Str("topic") {
			if t.Err != sarama.ErrNoError {
				return nil, clientError(t.Err)
			}
			return len(t.Partitions), nil
		}
	}
	return nil, &agent.ClientError{Code: "UNKNOWN_TOPIC_OR_PARTITION", Type: "sarama", Message: "not described"}
}

func (d *driver) deleteTopic(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	return nil, clientError(adm.DeleteTopic(req.Str("topic")))
}

func (d *driver) createPartitions(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	return nil, clientError(adm.CreatePartitions(req.Str("topic"), int32(req.Int("count")), nil,
		req.Bool("validate_only")))
}

var configSources = []string{"UNKNOWN", "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG",
	"DYNAMIC_DEFAULT_BROKER_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG",
	"CLIENT_METRICS_CONFIG", "GROUP_CONFIG"}

func sourceName(s sarama.ConfigSource) string {
	if int(s) >= 0 && int(s) < len(configSources) {
		return configSources[s]
	}
	return strconv.Itoa(int(s))
}

func (d *driver) describeConfigs(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	var keys []string
	req.Into("keys", &keys)
	res := sarama.ConfigResource{Type: sarama.BrokerResource, Name: req.Str("name"), ConfigNames: keys}
	if req.Str("resource") == "topic" {
		res.Type = sarama.TopicResource
	}
	entries, err := adm.DescribeConfig(res)
	if err != nil {
		return nil, clientError(err)
	}
	out := map[string]map[string]any{}
	for _, e := range entries {
		var synonyms [][3]any // nil (null): sarama's DescribeConfig asks for no synonyms
		for _, s := range e.Synonyms {
			synonyms = append(synonyms, [3]any{s.ConfigName, s.ConfigValue, sourceName(s.Source)})
		}
		out[e.Name] = map[string]any{"value": e.Value, "source": sourceName(e.Source), "read_only": e.ReadOnly,
			"sensitive": e.Sensitive, "synonyms": synonyms}
	}
	return out, nil
}

func (d *driver) deleteRecords(req agent.Req) (any, error) {
	cl, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	topic, partition := req.Str("topic"), int32(req.Int("partition"))
	if err := adm.DeleteRecords(topic, map[int32]int64{partition: req.Int("before")}); err != nil {
		return nil, clientError(err)
	}
	low, err := cl.GetOffset(topic, partition, sarama.OffsetOldest)
	return low, clientError(err)
}

func (d *driver) describeGroup(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	groups, err := adm.DescribeConsumerGroups([]string{req.Str("group")})
	if err != nil {
		return nil, clientError(err)
	}
	if len(groups) != 1 {
		return nil, fmt.Errorf("sarama described %d groups", len(groups))
	}
	g := groups[0]
	if g.Err != sarama.ErrNoError {
		return nil, clientError(g.Err)
	}
	members := []map[string]any{}
	for _, m := range g.Members {
		parts := []int32{}
		a, err := m.GetMemberAssignment()
		if err != nil {
			return nil, clientError(err)
		}
		if a != nil {
			for _, ps := range a.Topics {
				parts = append(parts, ps...)
			}
		}
		members = append(members, map[string]any{"assignment": sorted(parts), "instance_id": m.GroupInstanceId})
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
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	groups, err := adm.ListConsumerGroups()
	if err != nil {
		return nil, clientError(err)
	}
	out := map[string]map[string]any{}
	for name, protocolType := range groups {
		out[name] = map[string]any{"protocol_type": protocolType, "state": nil}
	}
	return out, nil
}

func (d *driver) deleteGroup(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	return nil, clientError(adm.DeleteConsumerGroup(req.Str("group")))
}

// deleteOffsets: sarama's DeleteConsumerGroupOffset takes one partition per call.
func (d *driver) deleteOffsets(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	var partitions []int32
	req.Into("partitions", &partitions)
	for _, p := range partitions {
		if err := adm.DeleteConsumerGroupOffset(req.Str("group"), req.Str("topic"), p); err != nil {
			return nil, clientError(err)
		}
	}
	return nil, nil
}

func (d *driver) committed(req agent.Req) (any, error) {
	_, adm, err := d.shared()
	if err != nil {
		return nil, err
	}
	topic := req.Str("topic")
	var ps []int32
	for p := int32(0); p < int32(req.Int("partitions")); p++ {
		ps = append(ps, p)
	}
	resp, err := adm.ListConsumerGroupOffsets(req.Str("group"), map[string][]int32{topic: ps})
	if err != nil {
		return nil, clientError(err)
	}
	if resp.Err != sarama.ErrNoError {
		return nil, clientError(resp.Err)
	}
	out := map[string][2]any{}
	for _, p := range ps {
		b := resp.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError || b.Offset < 0 {
			continue
		}
		out[strconv.Itoa(int(p))] = [2]any{b.Offset, b.Metadata}
	}
	return out, nil
}

// ------------------------------------------------------------------------------------------ members

func (d *driver) OpenMember(o agent.MemberOptions) (agent.Member, error) {
	initial, err := initialOffset(o.OffsetReset)
	if err != nil {
		return nil, err
	}
	c := d.config()
	c.Consumer.Offsets.Initial = initial
	c.Consumer.Group.Session.Timeout = time.Duration(o.SessionTimeoutMs) * time.Millisecond
	c.Consumer.Group.Heartbeat.Interval = time.Duration(min(d.timing.HeartbeatMs,
		max(1, o.SessionTimeoutMs/3))) * time.Millisecond
	if o.InstanceID != nil {
		c.Consumer.Group.InstanceId = *o.InstanceID
	}
	if o.Assign != nil {
		return d.openAssigned(o, c)
	}
	return d.openSubscribed(o, c)
}

// assigned is a member without membership: a PartitionConsumer per partition, starting where the group
// committed (a PartitionOffsetManager's NextOffset, else Consumer.Offsets.Initial).
type assigned struct {
	agent.Inbox
	o        agent.MemberOptions
	client   sarama.Client
	consumer sarama.Consumer
	om       sarama.OffsetManager
	mu       sync.Mutex
	poms     map[int32]sarama.PartitionOffsetManager
	pcs      map[int32]sarama.PartitionConsumer
	closed   bool
}

func (d *driver) openAssigned(o agent.MemberOptions, c *sarama.Config) (agent.Member, error) {
	cl, err := sarama.NewClient(d.bootstrap, c)
	if err != nil {
		return nil, clientError(err)
	}
	m := &assigned{o: o, client: cl, poms: map[int32]sarama.PartitionOffsetManager{},
		pcs: map[int32]sarama.PartitionConsumer{}}
	fail := func(err error) (agent.Member, error) {
		_ = m.Close()
		return nil, clientError(err)
	}
	if m.consumer, err = sarama.NewConsumerFromClient(cl); err != nil {
		return fail(err)
	}
	if m.om, err = sarama.NewOffsetManagerFromClient(o.Group, cl); err != nil {
		return fail(err)
	}
	for _, p := range o.Assign {
		pom, err := m.om.ManagePartition(o.Topic, p)
		if err != nil {
			return fail(err)
		}
		m.poms[p] = pom
		go func() {
			for e := range pom.Errors() {
				var ce *agent.ClientError
				if errors.As(clientError(e), &ce) {
					m.AddError(ce)
				}
			}
		}()
		next, _ := pom.NextOffset()
		if err := m.consume(p, next); err != nil {
			return fail(err)
		}
		m.Assign([]agent.TP{{Topic: o.Topic, Partition: p}}, true)
	}
	return m, nil
}

func (m *assigned) consume(p int32, offset int64) error {
	pc, err := m.consumer.ConsumePartition(m.o.Topic, p, offset)
	if err != nil {
		return outOfRange(err)
	}
	m.pcs[p] = pc
	go func() {
		for msg := range pc.Messages() {
			m.Add(toRec(msg))
		}
	}()
	go func() {
		for e := range pc.Errors() {
			var ce *agent.ClientError
			if errors.As(clientError(e), &ce) {
				m.AddError(ce)
			}
		}
	}()
	return nil
}

func (m *assigned) Commit(offsets []agent.CommitOffset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range offsets {
		pom, ok := m.poms[o.Partition]
		if !ok || o.Topic != m.o.Topic {
			return fmt.Errorf("%s/%d is not assigned", o.Topic, o.Partition)
		}
		meta := ""
		if o.Metadata != nil {
			meta = *o.Metadata
		}
		pom.MarkOffset(o.Offset, meta)  // forward only
		pom.ResetOffset(o.Offset, meta) // backward only
	}
	m.om.Commit()
	time.Sleep(50 * time.Millisecond) // a failed commit's error arrives on pom.Errors() through a goroutine
	for _, e := range m.Errors() {
		return e
	}
	return nil
}

func (m *assigned) Position(agent.TP) (*int64, error) {
	return nil, agent.Unsupportedf("sarama does not expose a consumer's position")
}

// Seek restarts the partition's consumer at the offset (sarama's PartitionConsumer cannot move).
func (m *assigned) Seek(tp agent.TP, offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	pc, ok := m.pcs[tp.Partition]
	if !ok || tp.Topic != m.o.Topic {
		return fmt.Errorf("%s/%d is not assigned", tp.Topic, tp.Partition)
	}
	_ = pc.Close()
	return clientError(m.consume(tp.Partition, offset))
}

func (m *assigned) Pause(tps []agent.TP, paused bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tp := range tps {
		if pc, ok := m.pcs[tp.Partition]; ok {
			if paused {
				pc.Pause()
			} else {
				pc.Resume()
			}
		}
	}
	return nil
}

func (m *assigned) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for _, pc := range m.pcs {
		_ = pc.Close()
	}
	for _, pom := range m.poms {
		pom.AsyncClose() // its Close would wait for the OffsetManager to release it, which om.Close does
	}
	if m.om != nil {
		_ = m.om.Close()
	}
	if m.consumer != nil {
		_ = m.consumer.Close()
	}
	return clientError(m.client.Close())
}

// subscribed is a sarama ConsumerGroup: Consume runs in a loop on a goroutine (it returns at each
// rebalance); the handler keeps the claims as the assignment and the session for commits.
type subscribed struct {
	agent.Inbox
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	sess   sarama.ConsumerGroupSession
	closed bool
}

func (d *driver) openSubscribed(o agent.MemberOptions, c *sarama.Config) (agent.Member, error) {
	group, err := sarama.NewConsumerGroup(d.bootstrap, o.Group, c)
	if err != nil {
		return nil, clientError(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &subscribed{group: group, cancel: cancel, done: make(chan struct{})}
	go func() {
		for e := range group.Errors() {
			var ce *agent.ClientError
			if errors.As(clientError(e), &ce) {
				m.AddError(ce)
			}
		}
	}()
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{o.Topic}, m); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				var ce *agent.ClientError
				if errors.As(clientError(err), &ce) {
					m.AddError(ce)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return m, nil
}

func (m *subscribed) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	m.sess = s
	m.mu.Unlock()
	var held []agent.TP
	for t, ps := range s.Claims() {
		for _, p := range ps {
			held = append(held, agent.TP{Topic: t, Partition: p})
		}
	}
	m.Assign(m.Assignment(), false)
	m.Assign(held, true)
	return nil
}

func (m *subscribed) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	m.sess = nil
	m.mu.Unlock()
	m.Assign(m.Assignment(), false)
	return nil
}

func (m *subscribed) ConsumeClaim(_ sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		m.Add(toRec(msg))
	}
	return nil
}

func (m *subscribed) Commit(offsets []agent.CommitOffset) error {
	m.mu.Lock()
	s := m.sess
	m.mu.Unlock()
	if s == nil {
		return &agent.ClientError{Code: "CLIENT:NoSession", Type: "sarama", Message: "no group session (rebalancing)"}
	}
	for _, o := range offsets {
		meta := ""
		if o.Metadata != nil {
			meta = *o.Metadata
		}
		s.MarkOffset(o.Topic, o.Partition, o.Offset, meta)  // forward only
		s.ResetOffset(o.Topic, o.Partition, o.Offset, meta) // backward only
	}
	s.Commit()
	time.Sleep(50 * time.Millisecond) // a failed commit's error arrives on group.Errors() through a goroutine
	for _, e := range m.Errors() {
		return e
	}
	return nil
}

func (m *subscribed) Position(agent.TP) (*int64, error) {
	return nil, agent.Unsupportedf("sarama does not expose a consumer's position")
}

func (m *subscribed) Seek(agent.TP, int64) error {
	return agent.Unsupportedf("a sarama ConsumerGroup member cannot seek (ResetOffset moves only the commit)")
}

func (m *subscribed) Pause(tps []agent.TP, paused bool) error {
	ps := map[string][]int32{}
	for _, tp := range tps {
		ps[tp.Topic] = append(ps[tp.Topic], tp.Partition)
	}
	if paused {
		m.group.Pause(ps)
	} else {
		m.group.Resume(ps)
	}
	return nil
}

// Close leaves the group (sarama's ConsumerGroup.Close sends LeaveGroup for a dynamic member).
func (m *subscribed) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	err := m.group.Close()
	m.cancel()
	<-m.done
	return clientError(err)
}
