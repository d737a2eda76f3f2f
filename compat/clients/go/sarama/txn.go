// Transactions through sarama: a SyncProducer with Producer.Transaction.ID (idempotent, acks all, one request
// in flight, as sarama requires) asks for its producer id when it is made; BeginTxn, SendMessages,
// AddOffsetsToTxn (by group id), CommitTxn, AbortTxn. sarama's client lists offsets read_uncommitted
// only, so the last stable offset is asked with its own OffsetRequest (IsolationLevel ReadCommitted).

package main

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"fakekafka/compat/clients/go/agent"

	"github.com/IBM/sarama"
)

var (
	txnsMu     sync.Mutex
	txns       = map[string]sarama.SyncProducer{}
	txnsOpened int
)

func (d *driver) txnOps(ops map[string]func(agent.Req) (any, error)) {
	ops["txn_open"] = d.txnOpen
	ops["txn_begin"] = withTxn(func(p sarama.SyncProducer, _ agent.Req) (any, error) {
		return nil, txnError(p.BeginTxn())
	})
	ops["txn_send"] = withTxn(txnSend)
	ops["txn_send_offsets"] = withTxn(func(p sarama.SyncProducer, req agent.Req) (any, error) {
		var offsets [][3]any
		req.Into("offsets", &offsets)
		byTopic := map[string][]*sarama.PartitionOffsetMetadata{}
		for _, o := range offsets {
			t := o[0].(string)
			byTopic[t] = append(byTopic[t], &sarama.PartitionOffsetMetadata{Partition: int32(o[1].(float64)),
				Offset: int64(o[2].(float64)), LeaderEpoch: -1})
		}
		return nil, txnError(p.AddOffsetsToTxn(byTopic, req.Str("group")))
	})
	ops["txn_commit"] = withTxn(func(p sarama.SyncProducer, _ agent.Req) (any, error) {
		return nil, txnError(p.CommitTxn())
	})
	ops["txn_abort"] = withTxn(func(p sarama.SyncProducer, _ agent.Req) (any, error) {
		return nil, txnError(p.AbortTxn())
	})
	ops["txn_close"] = withTxn(func(p sarama.SyncProducer, req agent.Req) (any, error) {
		txnsMu.Lock()
		delete(txns, req.Str("x"))
		txnsMu.Unlock()
		_ = p.Close()
		return nil, nil
	})
}

func (d *driver) closeTxns() {
	txnsMu.Lock()
	defer txnsMu.Unlock()
	for id, p := range txns {
		_ = p.Close()
		delete(txns, id)
	}
}

func withTxn(fn func(sarama.SyncProducer, agent.Req) (any, error)) func(agent.Req) (any, error) {
	return func(req agent.Req) (any, error) {
		txnsMu.Lock()
		p := txns[req.Str("x")]
		txnsMu.Unlock()
		if p == nil {
			return nil, errors.New("no transactional producer " + req.Str("x"))
		}
		return fn(p, req)
	}
}

// txnError names what sarama's transaction manager refuses itself (a transition its state does not allow)
// CLIENT_REJECTED.
func txnError(err error) error {
	if errors.Is(err, sarama.ErrTransitionNotAllowed) || errors.Is(err, sarama.ErrTransactionNotReady) {
		return &agent.ClientError{Code: "CLIENT_REJECTED", Type: "sarama", Message: err.Error()}
	}
	return clientError(err)
}

func (d *driver) txnOpen(req agent.Req) (any, error) {
	c := d.config()
	c.Producer.Idempotent = true
	c.Producer.Transaction.ID = req.Str("transactional_id")
	if req.Has("timeout_ms") {
		c.Producer.Transaction.Timeout = time.Duration(req.Int("timeout_ms")) * time.Millisecond
	}
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = newPartitioner
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(d.bootstrap, c)
	if err != nil {
		return nil, txnError(err)
	}
	txnsMu.Lock()
	defer txnsMu.Unlock()
	txnsOpened++
	id := "x" + strconv.Itoa(txnsOpened)
	txns[id] = p
	return id, nil
}

func txnSend(p sarama.SyncProducer, req agent.Req) (any, error) {
	var recs []agent.Rec
	req.Into("recs", &recs)
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
		msgs = append(msgs, m)
	}
	if err := p.SendMessages(msgs); err != nil {
		return nil, txnError(err)
	}
	out := make([][2]int64, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, [2]int64{int64(m.Partition), m.Offset})
	}
	return out, nil
}

// lastStable is ListOffsets under read_committed (the last stable offset for "latest"), through sarama's
// OffsetRequest on the partition's leader: Client.GetOffset asks read_uncommitted only.
func (d *driver) lastStable(cl sarama.Client, topic string, partition int32, at int64) (any, error) {
	broker, err := cl.Leader(topic, partition)
	if err != nil {
		return nil, clientError(err)
	}
	r := sarama.NewOffsetRequest(d.config().Version)
	r.IsolationLevel = sarama.ReadCommitted
	r.AddBlock(topic, partition, at, 1)
	resp, err := broker.GetAvailableOffsets(r)
	if err != nil {
		return nil, clientError(err)
	}
	block := resp.GetBlock(topic, partition)
	if block == nil {
		return nil, clientError(sarama.ErrIncompleteResponse)
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return nil, clientError(block.Err)
	}
	o := block.Offset
	if len(block.Offsets) == 1 {
		o = block.Offsets[0]
	}
	if o < 0 {
		return nil, nil
	}
	return o, nil
}
