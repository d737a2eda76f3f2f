// Package agent is the Go side of the compat suite's agent protocol (compat/clients/agent.py): JSON
// lines on stdin, one answer per request on stdout, in order. Each Go client driver (franz-go, ...)
// implements Driver and Member; this package owns the protocol, the member table and the error shapes,
// so a driver is only the translation into its client's API.
package agent

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
)

// ClientError is an error the client reported: Kafka's error name (or TIMEOUT, NO_OFFSET_FOR_PARTITION,
// CLIENT_REJECTED, CLIENT:<type>), the client's type name and its message.
type ClientError struct {
	Code, Type, Message string
}

func (e *ClientError) Error() string { return fmt.Sprintf("%s (%s): %s", e.Code, e.Type, e.Message) }

// Unsupported says the client has no way to do what was asked (the cell shows "unsupported").
type Unsupported struct{ Why string }

func (e *Unsupported) Error() string { return e.Why }

// Unsupportedf is an *Unsupported with a formatted reason.
func Unsupportedf(format string, args ...any) error {
	return &Unsupported{fmt.Sprintf(format, args...)}
}

// Timing mirrors compat.clients.base.Timing: the waits the harness chose for this broker.
type Timing struct {
	OpS              float64 `json:"op_s"`
	FetchS           float64 `json:"fetch_s"`
	GroupS           float64 `json:"group_s"`
	SessionTimeoutMs int     `json:"session_timeout_ms"`
	HeartbeatMs      int     `json:"heartbeat_ms"`
	MetadataMs       int     `json:"metadata_ms"`
}

// Op is the timeout of one produce/fetch/admin call.
func (t Timing) Op() time.Duration { return time.Duration(t.OpS * float64(time.Second)) }

// Fetch is how long a fetch waits for records to arrive.
func (t Timing) Fetch() time.Duration { return time.Duration(t.FetchS * float64(time.Second)) }

// FetchWait is how long the fetch req waits for records: its wait_s (the harness's wait as it is now, which a
// scenario may shorten), else Fetch.
func (t Timing) FetchWait(req Req) time.Duration {
	s := t.FetchS
	req.Into("wait_s", &s)
	return time.Duration(s * float64(time.Second))
}

// Rec is a record in the protocol's form: bytes as hex, null as nil.
type Rec struct {
	K  *string      `json:"k"`
	V  *string      `json:"v"`
	H  [][2]*string `json:"h"`
	P  *int32       `json:"p"`
	O  int64        `json:"o"`
	TS *int64       `json:"ts"`
}

// Hex is b as the protocol sends it (nil for a null).
func Hex(b []byte) *string {
	if b == nil {
		return nil
	}
	s := hex.EncodeToString(b)
	return &s
}

// Unhex is the bytes of a protocol hex string (nil for null, an empty non-nil slice for "").
func Unhex(s *string) []byte {
	if s == nil {
		return nil
	}
	b, err := hex.DecodeString(*s)
	if err != nil {
		panic(fmt.Sprintf("bad hex from the harness: %v", err))
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// Header is one record header, its value nil when null.
type Header struct {
	Key   string
	Value []byte
}

// Headers of a protocol record.
func (r Rec) Headers() []Header {
	out := make([]Header, 0, len(r.H))
	for _, h := range r.H {
		out = append(out, Header{*h[0], Unhex(h[1])})
	}
	return out
}

// NewRec is a consumed record in the protocol's form (ts < 0: none).
func NewRec(key, value []byte, headers []Header, partition int32, offset, ts int64) Rec {
	hs := make([][2]*string, 0, len(headers))
	for _, h := range headers {
		k := h.Key
		hs = append(hs, [2]*string{&k, Hex(h.Value)})
	}
	p := partition
	r := Rec{K: Hex(key), V: Hex(value), H: hs, P: &p, O: offset}
	if ts >= 0 {
		r.TS = &ts
	}
	return r
}

// Req is one request's arguments.
type Req map[string]json.RawMessage

// Has says whether the argument is present and not null.
func (r Req) Has(k string) bool {
	v, ok := r[k]
	return ok && string(v) != "null"
}

// Into decodes the argument into dst (left as is when absent or null).
func (r Req) Into(k string, dst any) {
	if r.Has(k) {
		if err := json.Unmarshal(r[k], dst); err != nil {
			panic(fmt.Sprintf("argument %s: %v", k, err))
		}
	}
}

// Str is a string argument ("" when absent).
func (r Req) Str(k string) string {
	var s string
	r.Into(k, &s)
	return s
}

// Int is an integer argument (0 when absent).
func (r Req) Int(k string) int64 {
	var n int64
	r.Into(k, &n)
	return n
}

// Bool is a boolean argument (false when absent).
func (r Req) Bool(k string) bool {
	var b bool
	r.Into(k, &b)
	return b
}

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// MarshalJSON sends a TP as [topic, partition].
func (tp TP) MarshalJSON() ([]byte, error) { return json.Marshal([]any{tp.Topic, tp.Partition}) }

// UnmarshalJSON reads [topic, partition].
func (tp *TP) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
		return fmt.Errorf("a topic partition is [topic, partition], not %s", b)
	}
	if err := json.Unmarshal(pair[0], &tp.Topic); err != nil {
		return err
	}
	return json.Unmarshal(pair[1], &tp.Partition)
}

// CommitOffset is one offset a member is asked to commit.
type CommitOffset struct {
	TP
	Offset   int64
	Metadata *string
}

// MemberOptions are what member_open carries besides the group and topic.
type MemberOptions struct {
	Group            string
	Topic            string
	Assign           []int32 // nil: subscribe
	OffsetReset      string  // earliest, latest, none
	InstanceID       *string
	SessionTimeoutMs int
	GroupProtocol    string // "" (classic) or "consumer" (KIP-848), sent only to drivers whose client has it
}

// Member is one consumer with a group.id, polling on its own (so it takes part in rebalances).
type Member interface {
	Assignment() []TP
	Take() []Rec
	Errors() []*ClientError
	Commit(offsets []CommitOffset) error
	Position(tp TP) (*int64, error)
	Seek(tp TP, offset int64) error
	Pause(tps []TP, paused bool) error
	Close() error
}

// Driver is one client library pointed at one cluster.
type Driver interface {
	// Ops are the Client methods the driver offers, by the protocol's op name (produce, fetch, committed,
	// list_offsets, create_topic, ...); an op missing here is answered as unsupported.
	Ops() map[string]func(Req) (any, error)
	OpenMember(o MemberOptions) (Member, error)
	Close()
}

// Inbox is what a polling member keeps for the harness: records received, errors seen, the partitions
// it holds. Safe for the poll loop and the request loop at once.
type Inbox struct {
	mu       sync.Mutex
	records  []Rec
	errors   []*ClientError
	assigned map[TP]bool
}

// Add appends received records.
func (b *Inbox) Add(recs ...Rec) {
	b.mu.Lock()
	b.records = append(b.records, recs...)
	b.mu.Unlock()
}

// AddError keeps an error the poll loop saw.
func (b *Inbox) AddError(e *ClientError) {
	b.mu.Lock()
	b.errors = append(b.errors, e)
	b.mu.Unlock()
}

// Assign adds (held) or removes partitions from the assignment.
func (b *Inbox) Assign(tps []TP, held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.assigned == nil {
		b.assigned = map[TP]bool{}
	}
	for _, tp := range tps {
		if held {
			b.assigned[tp] = true
		} else {
			delete(b.assigned, tp)
		}
	}
}

// Assignment is the partitions held, sorted.
func (b *Inbox) Assignment() []TP {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]TP, 0, len(b.assigned))
	for tp := range b.assigned {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Take hands over the records received since the last Take.
func (b *Inbox) Take() []Rec {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.records
	b.records = nil
	if out == nil {
		out = []Rec{}
	}
	return out
}

// Errors hands over the errors seen since the last call.
func (b *Inbox) Errors() []*ClientError {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.errors
	b.errors = nil
	if out == nil {
		out = []*ClientError{}
	}
	return out
}

type answer struct {
	ID          json.RawMessage `json:"id"`
	OK          bool            `json:"ok"`
	Result      any             `json:"result,omitempty"`
	Error       *errorObj       `json:"error,omitempty"`
	Unsupported *string         `json:"unsupported,omitempty"`
	Harness     *string         `json:"harness,omitempty"`
}

type errorObj struct {
	Code    string `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ReadArgs returns the bootstrap addresses and the timing from the command line (BOOTSTRAP TIMING_JSON): BOOTSTRAP
// is Kafka's bootstrap.servers, host:port pairs separated by commas (a cluster of several brokers has several).
func ReadArgs() ([]string, Timing) {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: DRIVER BOOTSTRAP TIMING_JSON")
		os.Exit(2)
	}
	var t Timing
	if err := json.Unmarshal([]byte(os.Args[2]), &t); err != nil {
		fmt.Fprintln(os.Stderr, "timing:", err)
		os.Exit(2)
	}
	var brokers []string
	for _, b := range strings.Split(os.Args[1], ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	return brokers, t
}

// Serve answers requests from stdin with d until "quit" or the end of input.
func Serve(d Driver) {
	serve(d, os.Stdin, os.Stdout)
}

func serve(d Driver, in io.Reader, out io.Writer) {
	members := map[string]Member{}
	ops := d.Ops()
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 256<<20) // a produce of 1 MiB records comes as one line
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	for scanner.Scan() {
		var req Req
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(2)
		}
		op := req.Str("op")
		a := answer{ID: req["id"]}
		if op == "quit" {
			for _, m := range members {
				_ = m.Close()
			}
			d.Close()
			a.OK = true
			_ = enc.Encode(a)
			_ = w.Flush()
			return
		}
		result, err := handle(d, ops, members, op, req)
		var ce *ClientError
		var un *Unsupported
		switch {
		case err == nil:
			a.OK, a.Result = true, result
		case errors.As(err, &ce):
			a.Error = &errorObj{ce.Code, ce.Type, ce.Message}
		case errors.As(err, &un):
			a.Unsupported = &un.Why
		default:
			s := err.Error()
			a.Harness = &s
		}
		if err := enc.Encode(a); err != nil {
			s := fmt.Sprintf("cannot encode the answer to %s: %v", op, err)
			_ = enc.Encode(answer{ID: req["id"], Harness: &s})
		}
		_ = w.Flush()
	}
	for _, m := range members {
		_ = m.Close()
	}
	d.Close()
}

// handle runs one request; a panic in a driver is the harness's error, not the client's answer.
func handle(d Driver, ops map[string]func(Req) (any, error), members map[string]Member, op string,
	req Req) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			result, err = nil, fmt.Errorf("panic in %s: %v\n%s", op, p, debug.Stack())
		}
	}()
	if fn, ok := ops[op]; ok {
		return fn(req)
	}
	if op == "member_open" {
		o := MemberOptions{Group: req.Str("group"), Topic: req.Str("topic"), OffsetReset: req.Str("offset_reset"),
			SessionTimeoutMs: int(req.Int("session_timeout_ms"))}
		if req.Has("group_protocol") {
			o.GroupProtocol = req.Str("group_protocol")
		}
		req.Into("assign", &o.Assign)
		if o.Assign == nil && req.Has("assign") {
			o.Assign = []int32{}
		}
		req.Into("instance_id", &o.InstanceID)
		m, err := d.OpenMember(o)
		if err != nil {
			return nil, err
		}
		id := fmt.Sprintf("m%d", len(members)+1)
		members[id] = m
		return id, nil
	}
	if len(op) < 7 || op[:7] != "member_" {
		return nil, &Unsupported{fmt.Sprintf("this driver has no %s", op)}
	}
	m, ok := members[req.Str("m")]
	if !ok {
		return nil, fmt.Errorf("no member %q", req.Str("m"))
	}
	switch op {
	case "member_assignment":
		return m.Assignment(), nil
	case "member_take":
		return m.Take(), nil
	case "member_errors":
		errs := m.Errors()
		out := make([]errorObj, 0, len(errs))
		for _, e := range errs {
			out = append(out, errorObj{e.Code, e.Type, e.Message})
		}
		return out, nil
	case "member_commit":
		var raw [][4]json.RawMessage
		req.Into("offsets", &raw)
		offsets := make([]CommitOffset, 0, len(raw))
		for _, o := range raw {
			var c CommitOffset
			if err := errors.Join(json.Unmarshal(o[0], &c.Topic), json.Unmarshal(o[1], &c.Partition),
				json.Unmarshal(o[2], &c.Offset), json.Unmarshal(o[3], &c.Metadata)); err != nil {
				return nil, err
			}
			offsets = append(offsets, c)
		}
		return nil, m.Commit(offsets)
	case "member_position":
		return m.Position(TP{req.Str("topic"), int32(req.Int("partition"))})
	case "member_seek":
		return nil, m.Seek(TP{req.Str("topic"), int32(req.Int("partition"))}, req.Int("offset"))
	case "member_pause", "member_resume":
		var tps []TP
		req.Into("tps", &tps)
		return nil, m.Pause(tps, op == "member_pause")
	case "member_close":
		return nil, m.Close()
	}
	return nil, &Unsupported{fmt.Sprintf("this driver has no %s", op)}
}
