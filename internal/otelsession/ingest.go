package otelsession

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Ingester turns OTLP export requests into sessions of one agentctl home.
// Traces and Logs are safe for concurrent use; each returns only when
// what it accepted is durable (see the package documentation, "Arrival
// and durability").
type Ingester struct {
	st   recorder.Store
	opts Options

	mu       sync.Mutex
	closed   bool
	seen     map[string]struct{}      // span and log-record keys accepted (pending or written)
	pending  map[string]*pendingTrace // by trace id
	npending int                      // records reserved, spooled or pending, not yet written
	count    map[string]int           // spans accepted per grouping (session key, else trace)
	written  map[string]bool          // span keys written into a session
	before   map[string]bool          // span keys an earlier run wrote

	spoolMu   sync.Mutex
	spool     *recorder.Session
	oldSpools []string // spool folders recovered at start, removed once written
	leases    []*recorder.Lease
	touched   map[string]bool // sessions written since NewIngester
	spoolErr  error

	matMu    sync.Mutex // one write pass at a time; guards the fields below
	sessions map[string]*sess
	byKey    map[string]*sess // session key → session
	byTrace  map[string]*sess // trace id → session

	stop chan struct{}
	done chan struct{}
}

type pendingTrace struct {
	id    string
	spans []*span
	logs  []*logRec
	last  time.Time // when its latest record arrived
}

// SpoolDir is where an Ingester keeps what it accepted but has not yet
// written into a session, below the home: a recorder log per run of the
// Ingester (see the package documentation).
const SpoolDir = "otlp-spool"

// The spool's event kinds: one record per accepted request, holding the
// accepted part as OTLP JSON (protojson).
const (
	spoolTraces session.Kind = "otlp_traces"
	spoolLogs   session.Kind = "otlp_logs"
)

// NewIngester opens the mapping over st: it reads the sessions earlier
// runs collected (their span ids, so a retried export adds nothing, and
// their conversations, so later traces join them) and the spool a killed
// run left (accepted spans not yet written), which it writes into
// sessions first.
func NewIngester(st recorder.Store, opts Options) (*Ingester, error) {
	opts = opts.withDefaults()
	in := &Ingester{
		st: st, opts: opts,
		seen: map[string]struct{}{}, pending: map[string]*pendingTrace{}, count: map[string]int{}, written: map[string]bool{}, before: map[string]bool{},
		sessions: map[string]*sess{}, touched: map[string]bool{}, byKey: map[string]*sess{}, byTrace: map[string]*sess{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := in.recoverSessions(); err != nil {
		return nil, err
	}
	if err := in.recoverSpool(); err != nil {
		return nil, err
	}
	if err := in.Flush(); err != nil {
		return nil, err
	}
	if opts.NoBackground {
		close(in.done)
	} else {
		go in.background()
	}
	return in, nil
}

func (in *Ingester) spoolStore() recorder.Store {
	return recorder.Store{Root: filepath.Join(in.st.Root, SpoolDir)}
}

func (in *Ingester) background() {
	defer close(in.done)
	t := time.NewTicker(in.opts.Settle / 2)
	defer t.Stop()
	for {
		select {
		case <-in.stop:
			return
		case <-t.C:
			_ = in.flush(false) // a failure is retried on the next tick; Close reports it
		}
	}
}

// recoverSessions reads every session an Ingester wrote (header attrs
// imported_from "otlp"): the spans in it, its key and traces, and its
// conversation so far.
func (in *Ingester) recoverSessions() error {
	ids, err := in.st.IDs()
	if err != nil {
		return fmt.Errorf("otelsession: list sessions: %w", err)
	}
	for _, id := range ids {
		h, err := in.st.Header(id)
		if err != nil || h.Kind != session.KindSessionStarted {
			continue
		}
		var ha struct {
			ImportedFrom string `json:"imported_from"`
			Key          string `json:"source_session_id"`
		}
		if json.Unmarshal(h.Attrs, &ha) != nil || ha.ImportedFrom != FormatOTLP {
			continue
		}
		evs, _, err := in.st.Load(id)
		if err != nil {
			return fmt.Errorf("otelsession: read collected session %s: %w (repair or move it aside, then start again)", id, err)
		}
		s := newSess(id, ha.Key)
		s.onDisk = true
		s.restore(evs)
		in.sessions[id] = s
		if s.key != "" {
			in.byKey[s.key] = s
		}
		for _, e := range evs {
			type ids struct {
				TraceID string `json:"trace_id"`
				SpanID  string `json:"span_id"`
			}
			var a struct {
				ids
				Kept []ids `json:"otel_spans"`
			}
			if len(e.Attrs) == 0 || json.Unmarshal(e.Attrs, &a) != nil {
				continue
			}
			for _, x := range append([]ids{a.ids}, a.Kept...) {
				if x.TraceID == "" {
					continue
				}
				in.byTrace[x.TraceID] = s
				if x.SpanID == "" {
					continue
				}
				k := x.TraceID + "/" + x.SpanID
				if !in.written[k] {
					in.written[k] = true
					in.before[k] = true
					in.seen[k] = struct{}{}
					in.count[groupOf(s.key, x.TraceID)]++
				}
			}
		}
	}
	return nil
}

// recoverSpool reads the spool folders a previous run left and takes
// their records as pending (the ones already written are seen and
// skipped). The folders stay until those records are written.
func (in *Ingester) recoverSpool() error {
	sp := in.spoolStore()
	ids, err := sp.IDs()
	if err != nil {
		return fmt.Errorf("otelsession: list spool: %w", err)
	}
	for _, id := range ids {
		// A spool another live Ingester holds (collect running while an
		// import runs on the same home) is its own: left alone.
		lease, err := recorder.AcquireLease(sp.SessionDir(id))
		if errors.Is(err, recorder.ErrLeaseHeld) {
			continue
		}
		if err != nil {
			return fmt.Errorf("otelsession: spool %s: %w", id, err)
		}
		in.leases = append(in.leases, lease)
		evs, _, err := sp.Load(id)
		if err != nil && len(evs) == 0 {
			return fmt.Errorf("otelsession: read spool %s: %w (move %s aside to start without it)", id, err, sp.SessionDir(id))
		}
		for _, e := range evs {
			var rec struct {
				Kind    session.Kind    `json:"kind"`
				Request json.RawMessage `json:"request"`
			}
			if len(e.Raw) == 0 || json.Unmarshal(e.Raw, &rec) != nil {
				continue
			}
			switch rec.Kind {
			case spoolTraces:
				var req coltracepb.ExportTraceServiceRequest
				if protoJSON.Unmarshal(rec.Request, &req) == nil {
					in.accept(traceRecords(&req, in.opts))
				}
			case spoolLogs:
				var req collogspb.ExportLogsServiceRequest
				if protoJSON.Unmarshal(rec.Request, &req) == nil {
					in.accept(logRecords(&req, in.opts))
				}
			}
		}
		in.oldSpools = append(in.oldSpools, sp.SessionDir(id))
	}
	in.mu.Lock()
	for _, pt := range in.pending {
		in.npending += len(pt.spans) + len(pt.logs)
	}
	in.mu.Unlock()
	return nil
}

// records is what one request holds, checked: the spans or log records
// to take (each with the OTLP message it came from, to spool) and the
// ones refused.
type records struct {
	spans    []*span
	logs     []*logRec
	keys     []string
	groups   []string
	rejected []Rejection
	spooled  proto.Message // the accepted part, rebuilt by reserve
	logsReq  bool
	raw      []any // *tracepb.ResourceSpans or *logspb.ResourceLogs per record, for the spool
	scopes   []any
	msgs     []any
}

func groupOf(key, traceID string) string {
	if key != "" {
		return "session " + key
	}
	return "trace " + traceID
}

func validID(b []byte, n int) bool {
	if len(b) != n {
		return false
	}
	for _, x := range b {
		if x != 0 {
			return true
		}
	}
	return false
}

func traceRecords(req *coltracepb.ExportTraceServiceRequest, opts Options) *records {
	r := &records{}
	for _, rs := range req.GetResourceSpans() {
		res := toAttrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				tid, sid := hex.EncodeToString(s.GetTraceId()), hex.EncodeToString(s.GetSpanId())
				if !validID(s.GetTraceId(), 16) || !validID(s.GetSpanId(), 8) {
					r.rejected = append(r.rejected, Rejection{TraceID: tid, SpanID: sid, Reason: "the span has no valid trace_id (16 bytes) and span_id (8 bytes)"})
					continue
				}
				if why := tooLarge(opts, s.GetAttributes(), s.GetEvents()); why != "" {
					r.rejected = append(r.rejected, Rejection{TraceID: tid, SpanID: sid, Reason: why})
					continue
				}
				sp := newSpan(res, ss.GetScope().GetName(), s)
				r.spans = append(r.spans, sp)
				r.keys = append(r.keys, tid+"/"+sid)
				r.groups = append(r.groups, groupOf(sessionKey(sp), tid))
				r.raw, r.scopes, r.msgs = append(r.raw, rs), append(r.scopes, ss), append(r.msgs, s)
			}
		}
	}
	return r
}

func logRecords(req *collogspb.ExportLogsServiceRequest, opts Options) *records {
	r := &records{logsReq: true}
	for _, rl := range req.GetResourceLogs() {
		res := toAttrs(rl.GetResource().GetAttributes())
		for _, sl := range rl.GetScopeLogs() {
			for _, l := range sl.GetLogRecords() {
				tid, sid := hex.EncodeToString(l.GetTraceId()), hex.EncodeToString(l.GetSpanId())
				if !validID(l.GetTraceId(), 16) {
					r.rejected = append(r.rejected, Rejection{TraceID: tid, SpanID: sid, Reason: "the log record names no trace (trace_id); only records of a trace belong to a session"})
					continue
				}
				if why := tooLarge(opts, l.GetAttributes(), nil); why != "" {
					r.rejected = append(r.rejected, Rejection{TraceID: tid, SpanID: sid, Reason: why})
					continue
				}
				if n := valueBytes(l.GetBody()); n > opts.MaxAttrBytes {
					r.rejected = append(r.rejected, Rejection{TraceID: tid, SpanID: sid, Reason: fmt.Sprintf("the log record's body is %s, over the %s limit", size(n), size(opts.MaxAttrBytes))})
					continue
				}
				b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(l)
				h := sha256.Sum256(b)
				lr := newLog(res, l)
				r.logs = append(r.logs, lr)
				r.keys = append(r.keys, "log/"+hex.EncodeToString(h[:16]))
				r.groups = append(r.groups, groupOf(lr.Attrs.str("session.id", "gen_ai.conversation.id"), tid))
				r.raw, r.scopes, r.msgs = append(r.raw, rl), append(r.scopes, sl), append(r.msgs, l)
			}
		}
	}
	return r
}

func size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func tooLarge(opts Options, kvs []*commonpb.KeyValue, evs []*tracepb.Span_Event) string {
	if k, n := attrBytes(kvs); n > opts.MaxAttrBytes {
		return fmt.Sprintf("attribute %s is %s, over the %s limit", k, size(n), size(opts.MaxAttrBytes))
	}
	for _, e := range evs {
		if k, n := attrBytes(e.GetAttributes()); n > opts.MaxAttrBytes {
			return fmt.Sprintf("attribute %s of event %s is %s, over the %s limit", k, e.GetName(), size(n), size(opts.MaxAttrBytes))
		}
	}
	return ""
}

// Traces maps an OTLP trace export. It returns once every span it
// accepted is durable (in the spool, then in its session after Settle);
// a span seen before is counted accepted and adds nothing. A span over a
// limit is rejected with the reason; ErrBusy means nothing was taken.
func (in *Ingester) Traces(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (Result, error) {
	return in.ingest(ctx, traceRecords(req, in.opts))
}

// Logs maps an OTLP logs export: content events of the earlier GenAI
// conventions, and gen_ai.client.inference.operation.details, joined to
// their spans by trace and span id in whatever order they arrive.
func (in *Ingester) Logs(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (Result, error) {
	return in.ingest(ctx, logRecords(req, in.opts))
}

func (in *Ingester) ingest(ctx context.Context, r *records) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	res, fresh, err := in.reserve(r)
	if err != nil || len(fresh) == 0 {
		return res, err
	}
	if err := in.spoolAppend(r, fresh); err != nil {
		in.unreserve(r, fresh)
		return Result{}, err
	}
	in.mu.Lock()
	in.place(r, fresh)
	in.mu.Unlock()
	return res, nil
}

// reserve checks r against what was seen and the limits, and marks the
// new records seen; fresh are their indexes.
func (in *Ingester) reserve(r *records) (Result, []int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return Result{}, nil, ErrClosed
	}
	n := len(r.keys)
	if in.npending+n > in.opts.MaxPending && in.npending > 0 {
		return Result{}, nil, ErrBusy
	}
	res := Result{Rejected: r.rejected}
	var fresh []int
	for i, k := range r.keys {
		if _, ok := in.seen[k]; ok {
			res.Accepted++
			continue
		}
		if r.logsReq && in.before[r.logs[i].TraceID+"/"+r.logs[i].SpanID] {
			// Content of a span an earlier run wrote: a retry across the
			// restart (log records carry no id to tell a late one from
			// it), answered as delivered.
			res.Accepted++
			continue
		}
		g := r.groups[i]
		if in.count[g] >= in.opts.MaxSpansPerSession {
			tid, sid := in.ids(r, i)
			res.Rejected = append(res.Rejected, Rejection{TraceID: tid, SpanID: sid, Reason: fmt.Sprintf("%s already has %d spans and log records, the limit (MaxSpansPerSession)", g, in.opts.MaxSpansPerSession)})
			continue
		}
		in.count[g]++
		in.seen[k] = struct{}{}
		fresh = append(fresh, i)
		res.Accepted++
	}
	in.npending += len(fresh)
	return res, fresh, nil
}

func (in *Ingester) ids(r *records, i int) (string, string) {
	if r.logsReq {
		return r.logs[i].TraceID, r.logs[i].SpanID
	}
	return r.spans[i].TraceID, r.spans[i].SpanID
}

func (in *Ingester) unreserve(r *records, fresh []int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, i := range fresh {
		delete(in.seen, r.keys[i])
		in.count[r.groups[i]]--
	}
	in.npending -= len(fresh)
}

// place puts the fresh records of r into their pending traces. Caller
// holds mu.
func (in *Ingester) place(r *records, fresh []int) {
	now := in.opts.Clock()
	for _, i := range fresh {
		tid, _ := in.ids(r, i)
		pt := in.pending[tid]
		if pt == nil {
			pt = &pendingTrace{id: tid}
			in.pending[tid] = pt
		}
		if r.logsReq {
			pt.logs = append(pt.logs, r.logs[i])
		} else {
			pt.spans = append(pt.spans, r.spans[i])
		}
		pt.last = now
	}
}

// accept takes recovered spool records as pending, skipping the ones
// seen. (The spool they came from stays until they are written.)
func (in *Ingester) accept(r *records) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var fresh []int
	for i, k := range r.keys {
		if _, ok := in.seen[k]; ok {
			continue
		}
		in.seen[k] = struct{}{}
		in.count[r.groups[i]]++
		fresh = append(fresh, i)
	}
	in.place(r, fresh)
}

// spoolAppend writes the fresh records of r to the spool as one OTLP
// request (protojson) and returns when it is durable.
func (in *Ingester) spoolAppend(r *records, fresh []int) error {
	var msg proto.Message
	kind := spoolTraces
	if r.logsReq {
		kind = spoolLogs
		req := &collogspb.ExportLogsServiceRequest{}
		var lastRL *logspb.ResourceLogs
		var lastSL *logspb.ScopeLogs
		var curRL *logspb.ResourceLogs
		var curSL *logspb.ScopeLogs
		for _, i := range fresh {
			rl, sl := r.raw[i].(*logspb.ResourceLogs), r.scopes[i].(*logspb.ScopeLogs)
			if rl != lastRL {
				curRL = &logspb.ResourceLogs{Resource: rl.GetResource(), SchemaUrl: rl.GetSchemaUrl()}
				req.ResourceLogs = append(req.ResourceLogs, curRL)
				lastRL, lastSL = rl, nil
			}
			if sl != lastSL {
				curSL = &logspb.ScopeLogs{Scope: sl.GetScope(), SchemaUrl: sl.GetSchemaUrl()}
				curRL.ScopeLogs = append(curRL.ScopeLogs, curSL)
				lastSL = sl
			}
			curSL.LogRecords = append(curSL.LogRecords, r.msgs[i].(*logspb.LogRecord))
		}
		msg = req
	} else {
		req := &coltracepb.ExportTraceServiceRequest{}
		var lastRS *tracepb.ResourceSpans
		var lastSS *tracepb.ScopeSpans
		var curRS *tracepb.ResourceSpans
		var curSS *tracepb.ScopeSpans
		for _, i := range fresh {
			rs, ss := r.raw[i].(*tracepb.ResourceSpans), r.scopes[i].(*tracepb.ScopeSpans)
			if rs != lastRS {
				curRS = &tracepb.ResourceSpans{Resource: rs.GetResource(), SchemaUrl: rs.GetSchemaUrl()}
				req.ResourceSpans = append(req.ResourceSpans, curRS)
				lastRS, lastSS = rs, nil
			}
			if ss != lastSS {
				curSS = &tracepb.ScopeSpans{Scope: ss.GetScope(), SchemaUrl: ss.GetSchemaUrl()}
				curRS.ScopeSpans = append(curRS.ScopeSpans, curSS)
				lastSS = ss
			}
			curSS.Spans = append(curSS.Spans, r.msgs[i].(*tracepb.Span))
		}
		msg = req
	}
	b, err := protoJSON.Marshal(msg)
	if err != nil {
		return fmt.Errorf("otelsession: spool: %w", err)
	}
	raw, err := json.Marshal(struct {
		Kind    session.Kind    `json:"kind"`
		Request json.RawMessage `json:"request"`
	}{kind, b})
	if err != nil {
		return fmt.Errorf("otelsession: spool: %w", err)
	}
	w, err := in.spoolWriter()
	if err != nil {
		return err
	}
	if _, err := w.Append(session.Event{Kind: kind, Raw: raw}); err != nil {
		return fmt.Errorf("otelsession: spool: %w", err)
	}
	return nil
}

func (in *Ingester) spoolWriter() (*recorder.Session, error) {
	in.spoolMu.Lock()
	defer in.spoolMu.Unlock()
	if in.spool != nil {
		return in.spool, nil
	}
	s, err := in.spoolStore().Create(session.Event{Kind: session.KindSessionStarted, Name: "otlp spool"}, in.spoolOpts())
	if err != nil {
		return nil, fmt.Errorf("otelsession: spool: %w", err)
	}
	in.spool = s
	return s, nil
}

// spoolOpts are the recorder options of the spool: the caller's, so the
// spool is redacted as every log is (a secret in a span never reaches the
// disk, not even on its way to a session).
func (in *Ingester) spoolOpts() recorder.Options { return in.opts.Recorder }

// rotate drops the spool once everything in it is in sessions.
func (in *Ingester) rotate() {
	in.spoolMu.Lock()
	defer in.spoolMu.Unlock()
	in.mu.Lock()
	idle := in.npending == 0 && len(in.pending) == 0
	in.mu.Unlock()
	if !idle {
		return
	}
	if in.spool != nil {
		dir := in.spool.Dir
		if err := in.spool.Close(); err == nil {
			os.RemoveAll(dir)
		}
		in.spool = nil
	}
	for _, d := range in.oldSpools {
		os.RemoveAll(d)
	}
	in.oldSpools = nil
	for _, l := range in.leases {
		l.Release()
	}
	in.leases = nil
}

// Flush writes every pending trace into its session now, settled or not
// (an import at its end; a test).
func (in *Ingester) Flush() error { return in.flush(true) }

func (in *Ingester) flush(force bool) error {
	in.matMu.Lock()
	defer in.matMu.Unlock()
	now := in.opts.Clock()
	in.mu.Lock()
	var ready []*pendingTrace
	for id, pt := range in.pending {
		if force || now.Sub(pt.last) >= in.opts.Settle {
			ready = append(ready, pt)
			delete(in.pending, id)
		}
	}
	in.mu.Unlock()
	sort.Slice(ready, func(i, j int) bool { return ready[i].first().Before(ready[j].first()) })
	var errs []error
	done := 0
	for i, pt := range ready {
		if err := in.writeTrace(pt); err != nil {
			errs = append(errs, err)
			in.mu.Lock()
			for _, back := range ready[i:] {
				if in.pending[back.id] == nil {
					in.pending[back.id] = back
				}
			}
			in.mu.Unlock()
			break
		}
		done += len(pt.spans) + len(pt.logs)
	}
	in.mu.Lock()
	in.npending -= done
	in.mu.Unlock()
	if len(errs) == 0 {
		in.rotate()
	}
	return errors.Join(errs...)
}

func (pt *pendingTrace) first() time.Time {
	var t time.Time
	for _, s := range pt.spans {
		if t.IsZero() || s.Start.Before(t) {
			t = s.Start
		}
	}
	for _, l := range pt.logs {
		if t.IsZero() || l.Time.Before(t) {
			t = l.Time
		}
	}
	return t
}

// Close writes what is pending and closes every session it has open
// (their leases released: the SIGTERM path). Traces and Logs after Close
// return ErrClosed.
func (in *Ingester) Close() error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	in.mu.Unlock()
	close(in.stop)
	<-in.done
	err := in.Flush()
	in.matMu.Lock()
	for _, s := range in.sessions {
		if s.w != nil {
			err = errors.Join(err, s.w.Close())
			s.w = nil
		}
	}
	in.matMu.Unlock()
	in.spoolMu.Lock()
	if in.spool != nil && err != nil {
		err = errors.Join(err, in.spool.Close()) // kept: the next start writes it
		in.spool = nil
	}
	for _, l := range in.leases {
		l.Release()
	}
	in.leases = nil
	in.spoolMu.Unlock()
	return err
}

// Sessions returns the ids of the sessions written since NewIngester, in
// order (for a caller that seals them into the history).
func (in *Ingester) Sessions() []string {
	in.matMu.Lock()
	defer in.matMu.Unlock()
	var ids []string
	for id := range in.touched {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
