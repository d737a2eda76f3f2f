// Transactions through kgo: a client with TransactionalID is the transactional producer. kgo asks for its
// producer id lazily (at the first produce of a transaction, not when the client is made), and it sends
// offsets to a transaction only through a GroupTransactSession, whose own consumer must be the group's
// member: send_offsets is answered as unsupported.

package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"fakekafka/compat/clients/go/agent"

	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	txnsMu     sync.Mutex
	txns       = map[string]*kgo.Client{}
	txnsOpened int
)

func (d *driver) txnOps(ops map[string]func(agent.Req) (any, error)) {
	ops["txn_open"] = d.txnOpen
	ops["txn_begin"] = withTxn(func(cl *kgo.Client, _ agent.Req) (any, error) {
		return nil, txnError(cl.BeginTransaction())
	})
	ops["txn_send"] = withTxn(d.txnSend)
	ops["txn_send_offsets"] = withTxn(func(*kgo.Client, agent.Req) (any, error) {
		return nil, agent.Unsupportedf("franz-go sends offsets to a transaction only through a " +
			"GroupTransactSession, whose own consumer must be the group's member")
	})
	ops["txn_commit"] = withTxn(d.txnEnd(kgo.TryCommit))
	ops["txn_abort"] = withTxn(d.txnEnd(kgo.TryAbort))
	ops["txn_close"] = withTxn(func(cl *kgo.Client, req agent.Req) (any, error) {
		cl.Close()
		txnsMu.Lock()
		delete(txns, req.Str("x"))
		txnsMu.Unlock()
		return nil, nil
	})
}

func (d *driver) closeTxns() {
	txnsMu.Lock()
	defer txnsMu.Unlock()
	for id, cl := range txns {
		cl.Close()
		delete(txns, id)
	}
}

func withTxn(fn func(*kgo.Client, agent.Req) (any, error)) func(agent.Req) (any, error) {
	return func(req agent.Req) (any, error) {
		txnsMu.Lock()
		cl := txns[req.Str("x")]
		txnsMu.Unlock()
		if cl == nil {
			return nil, errors.New("no transactional producer " + req.Str("x"))
		}
		return fn(cl, req)
	}
}

// txnError names what kgo refuses itself (begin while in a transaction) CLIENT_REJECTED.
func txnError(err error) error {
	if err != nil && strings.Contains(err.Error(), "while already in a transaction") {
		return &agent.ClientError{Code: "CLIENT_REJECTED", Type: "*errors.errorString", Message: err.Error()}
	}
	return clientError(err)
}

func (d *driver) txnOpen(req agent.Req) (any, error) {
	opts := d.base(kgo.TransactionalID(req.Str("transactional_id")), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(partitioner{kgo.UniformBytesPartitioner(64<<10, true, true, nil)}),
		kgo.ProduceRequestTimeout(d.timing.Op()))
	if req.Has("timeout_ms") {
		opts = append(opts, kgo.TransactionTimeout(time.Duration(req.Int("timeout_ms"))*time.Millisecond))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, clientError(err)
	}
	txnsMu.Lock()
	defer txnsMu.Unlock()
	txnsOpened++
	id := "x" + strconv.Itoa(txnsOpened)
	txns[id] = cl
	return id, nil
}

func (d *driver) txnSend(cl *kgo.Client, req agent.Req) (any, error) {
	var recs []agent.Rec
	req.Into("recs", &recs)
	ctx, cancel := context.WithTimeout(context.Background(), d.timing.Op()+5*time.Second)
	defer cancel()
	out := make([][2]int64, 0, len(recs))
	for _, r := range recs {
		rec := &kgo.Record{Topic: req.Str("topic"), Key: agent.Unhex(r.K), Value: agent.Unhex(r.V), Partition: -1}
		for _, h := range r.Headers() {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		if r.P != nil {
			rec.Partition = *r.P
		}
		done, err := cl.ProduceSync(ctx, rec).First()
		if err != nil {
			return nil, txnError(err)
		}
		out = append(out, [2]int64{int64(done.Partition), done.Offset})
	}
	return out, nil
}

func (d *driver) txnEnd(how kgo.TransactionEndTry) func(*kgo.Client, agent.Req) (any, error) {
	return func(cl *kgo.Client, _ agent.Req) (any, error) {
		ctx, cancel := d.ctx()
		defer cancel()
		if err := cl.Flush(ctx); err != nil {
			return nil, txnError(err)
		}
		return nil, txnError(cl.EndTransaction(ctx, how))
	}
}
