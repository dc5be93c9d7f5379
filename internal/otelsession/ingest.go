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
	"strings"
	"sync"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/session"
)

// Ingester turns OTLP export requests into sessions of one agentctl home.
// Traces and Logs are safe for concurrent use; each returns only when
// what it accepted is durable (see the package documentation, "Arrival
// and durability").
type Ingester struct {
	st   recorder.Store
	opts Options

	mu           sync.Mutex
	closed       bool
	seen         map[string]map[string]struct{} // trace id → keys of its spans and log records accepted (pending, or written into a live session)
	pending      map[string]*pendingTrace       // by trace id
	npending     int                            // records reserved, spooled or pending, not yet written
	pendingBytes int64                          // what the pending records weighed in the spool
	reservedB    int64                          // what requests between reserve and place weigh (their exports' size)
	writeRate    float64                        // bytes of spool written into sessions per second, lately (Retry-After)
	count        map[string]int                 // spans accepted per grouping (session key, else trace) of live sessions
	failing      error                          // the last write pass's failure to write (not one session's): new exports are refused until a write succeeds

	spoolMu sync.Mutex
	red     func() *redact.Redactor
	cur     *spoolGen       // the spool file requests go to now
	gens    []*spoolGen     // every spool file not yet removed (cur too)
	touched map[string]bool // sessions written since NewIngester

	matMu    sync.Mutex       // one write pass at a time; guards the fields below
	sessions map[string]*sess // the live sessions (at most Options.MaxLiveSessions after a pass)
	byKey    map[string]*sess // session key → live session
	byTrace  map[string]*sess // trace id → live session
	pass     uint64           // write passes so far: the sessions' recency
	loads    int              // sessions read back from their log since NewIngester (eviction's cost)
	decoded  []*wireBody      // exports decoded lately, the last maxDecoded: traces of one export are written one after another

	stop chan struct{}
	done chan struct{}
}

type pendingTrace struct {
	id    string
	spans []*span
	logs  []*logRec
	last  time.Time // when its latest record arrived
	began time.Time // when its first record arrived (the oldest is written first at the cap)
	// A trace whose write failed is set aside: tried again at retryAt
	// (sooner on Flush), fails times so far, while the others are written.
	retryAt time.Time
	fails   int
	gens    map[*spoolGen]int // how many of its records each spool file holds
	bytes   int64             // their share of the spool frames they came in
}

// spoolGen is one spool file and the count of its records not yet in
// sessions (plus those of appends in flight): at 0 it is removed.
type spoolGen struct {
	dir   string
	w     *spoolFile      // nil for one a killed run left
	lease *recorder.Lease // a left one's, taken at recovery
	refs  int
	// damaged: a left one that could not be read whole; once what was
	// read of it is written it is kept as <dir>.damaged, not removed.
	damaged bool

	rmu sync.Mutex
	rf  *os.File // opened to read frames back (pending spans)
}

// frame reads back the payload of the frame at off.
func (g *spoolGen) frame(off int64, n int, dst []byte) ([]byte, []byte, error) {
	g.rmu.Lock()
	defer g.rmu.Unlock()
	if g.rf == nil {
		f, err := os.Open(filepath.Join(g.dir, spoolName))
		if err != nil {
			return nil, dst, err
		}
		g.rf = f
	}
	return readFrame(g.rf, off, n, dst)
}

func (g *spoolGen) close() {
	g.rmu.Lock()
	if g.rf != nil {
		g.rf.Close()
		g.rf = nil
	}
	g.rmu.Unlock()
	if g.w != nil {
		g.w.close()
	} else {
		g.lease.Release()
	}
}

// damagedSuffix marks a spool folder set aside: a left spool file that
// could not be read whole, kept for a human once what was read of it is
// written. Recovery skips it.
const damagedSuffix = ".damaged"

// SpoolDir is where an Ingester keeps what it accepted but has not yet
// written into a session, below the home: spool files, each in a folder
// of its own (see spool.go and the package documentation).
const SpoolDir = "otlp-spool"

// collectLock is the folder under SpoolDir whose lease the one collector
// of a home holds (LockCollector); it holds no spool.
const collectLock = "collect.lock"

// LockCollector makes the caller the one collector of the home st: a
// second `collect` on the same home (another port) would acknowledge
// spans it holds without writing them, as sessions this one has live.
// It fails, naming the holder, when another process holds it; release
// frees it (a crash does too).
func LockCollector(st recorder.Store) (release func(), err error) {
	dir := filepath.Join(st.Root, SpoolDir, collectLock)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("otelsession: make %s: %w", dir, err)
	}
	l, err := recorder.AcquireLease(dir)
	var held *recorder.LeaseHeldError
	if errors.As(err, &held) {
		who := "another process"
		if held.Holder.PID != 0 {
			who = fmt.Sprintf("pid %d on %s, since %s", held.Holder.PID, held.Holder.Host, held.Holder.AcquiredAt.Format(time.RFC3339))
		}
		return nil, fmt.Errorf("another agentctl collect (%s) is collecting into %s: one collector per home; stop it, or point this one at another home (--home)", who, st.Root)
	}
	if err != nil {
		return nil, err
	}
	return func() { l.Release() }, nil
}

// The event kinds of the spool earlier versions wrote (a recorder log
// under otlp-spool/sessions/, each request as OTLP JSON), read at
// recovery so what they acknowledged is not lost to an upgrade.
const (
	legacySpoolTraces session.Kind = "otlp_traces"
	legacySpoolLogs   session.Kind = "otlp_logs"
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
		seen: map[string]map[string]struct{}{}, pending: map[string]*pendingTrace{}, count: map[string]int{},
		sessions: map[string]*sess{}, touched: map[string]bool{}, byKey: map[string]*sess{}, byTrace: map[string]*sess{},
		stop: make(chan struct{}), done: make(chan struct{}),
		red: opts.Recorder.Redactors(),
	}
	if err := in.recoverSessions(); err != nil {
		return nil, err
	}
	if err := in.recoverSpool(); err != nil {
		return nil, err
	}
	// What cannot be written now (a session another process holds, a
	// damaged one, a full disk) is set aside and said (Options.Logf):
	// the Ingester starts, and writes it once it can.
	_ = in.Flush()
	if opts.NoBackground {
		close(in.done)
	} else {
		go in.background()
	}
	return in, nil
}

func (in *Ingester) spoolRoot() string { return filepath.Join(in.st.Root, SpoolDir) }

func (in *Ingester) background() {
	defer close(in.done)
	t := time.NewTicker(in.opts.Settle / 2)
	defer t.Stop()
	for {
		select {
		case <-in.stop:
			return
		case <-t.C:
			_ = in.flush(false) // a failure is said (Options.Logf) and retried; Close reports it
		}
	}
}

// recoverSessions makes live the sessions an Ingester wrote (header
// attrs imported_from "otlp") that were written last, up to
// Options.MaxLiveSessions: an app goes on with the conversation it had
// when the collector stopped. Older ones are read when a trace names them
// (sessionFor).
func (in *Ingester) recoverSessions() error {
	ids, err := in.st.IDs()
	if err != nil {
		return fmt.Errorf("otelsession: list sessions: %w", err)
	}
	type recent struct {
		id, key string
		mod     time.Time
	}
	var ours []recent
	for _, id := range ids {
		fi, err := os.Stat(in.st.LogPath(id))
		if err != nil {
			continue
		}
		if key, ok := in.ourHeader(id); ok {
			ours = append(ours, recent{id, key, fi.ModTime()})
		}
	}
	sort.Slice(ours, func(i, j int) bool { return ours[i].mod.After(ours[j].mod) })
	for i, r := range ours {
		if i == in.opts.MaxLiveSessions {
			break
		}
		if _, err := in.sessOf(r.id, r.key); err != nil { // its header is read
			// One damaged session does not stop the others: a trace for
			// it is set aside until it is repaired.
			in.opts.Logf("agentctl %s: %v", in.opts.Source, err)
		}
	}
	return nil
}

// ourHeader reads the header of session id and says whether an Ingester
// wrote it, and under which key.
func (in *Ingester) ourHeader(id string) (string, bool) {
	h, err := in.st.Header(id)
	if err != nil || h.Kind != session.KindSessionStarted {
		return "", false
	}
	var ha struct {
		ImportedFrom string `json:"imported_from"`
		Key          string `json:"source_session_id"`
	}
	if json.Unmarshal(h.Attrs, &ha) != nil || ha.ImportedFrom != FormatOTLP {
		return "", false
	}
	return ha.Key, true
}

// load makes the session id an earlier run (or this one, before it was
// evicted) wrote live: its conversation so far, and the spans in it (each
// event of a span carries attrs trace_id and span_id; kept spans, in
// otel_spans, too), so a span sent again adds nothing. It returns nil
// when there is no such session.
func (in *Ingester) load(id string) (*sess, error) {
	key, ok := in.ourHeader(id)
	if !ok {
		return nil, nil
	}
	return in.sessOf(id, key)
}

// sessOf reads session id, written by an Ingester under key, and makes it
// live.
func (in *Ingester) sessOf(id, key string) (*sess, error) {
	evs, _, err := in.st.Load(id)
	if err != nil {
		return nil, fmt.Errorf("otelsession: read collected session %s: %w (repair it or move it aside; its traces wait in the spool meanwhile)", id, err)
	}
	in.loads++
	s := newSess(id, key)
	s.onDisk = true
	s.restore(evs)
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
			s.traces[x.TraceID] = true
			if x.SpanID != "" {
				s.spans[x.TraceID+"/"+x.SpanID] = true
				s.before[x.TraceID+"/"+x.SpanID] = true
			}
		}
	}
	in.live(s)
	return s, nil
}

// live registers s as a live session.
func (in *Ingester) live(s *sess) {
	in.sessions[s.id] = s
	if s.key != "" {
		in.byKey[s.key] = s
	}
	for t := range s.traces {
		in.byTrace[t] = s
	}
	s.used, s.usedAt = in.pass, in.opts.Clock()
}

// evict closes the sessions written longest ago until at most
// Options.MaxLiveSessions are live, forgetting what they hold (their
// conversation, their spans seen): a long collect keeps bounded memory and
// open files however many sessions it writes. A session with a trace
// still pending stays, and so does one written within EvictIdle unless
// 4x MaxLiveSessions are live: evicting a conversation that goes on
// means reading its whole log back for its next trace, and with more
// conversations going on than MaxLiveSessions, evicting on every pass
// read each one back every pass. An evicted session is read again if a
// trace comes for it.
func (in *Ingester) evict() error {
	if len(in.sessions) <= in.opts.MaxLiveSessions {
		return nil
	}
	now := in.opts.Clock()
	hard := 4 * in.opts.MaxLiveSessions
	all := make([]*sess, 0, len(in.sessions))
	for _, s := range in.sessions {
		all = append(all, s)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used < all[j].used })
	in.mu.Lock()
	defer in.mu.Unlock()
	var errs []error
	n := len(in.sessions)
	for _, s := range all {
		if n <= in.opts.MaxLiveSessions {
			break
		}
		busy := false
		for t := range s.traces {
			if in.pending[t] != nil {
				busy = true
				break
			}
		}
		if busy || (n <= hard && now.Sub(s.usedAt) < in.opts.EvictIdle) {
			continue
		}
		if s.w != nil {
			errs = append(errs, s.w.Close())
			s.w = nil
		}
		delete(in.sessions, s.id)
		if s.key != "" {
			delete(in.byKey, s.key)
			delete(in.count, groupOf(s.key, ""))
		}
		for t := range s.traces {
			delete(in.byTrace, t)
			delete(in.seen, t)
			delete(in.count, groupOf("", t))
		}
		n--
	}
	return errors.Join(errs...)
}

// recoverSpool reads the spool files a previous run left and takes their
// records as pending (the ones already written are seen and skipped).
// The files stay until those records are written.
func (in *Ingester) recoverSpool() error {
	entries, err := os.ReadDir(in.spoolRoot())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("otelsession: list the spool: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if e.Name() == collectLock {
			continue
		}
		if e.Name() == "sessions" {
			if err := in.recoverLegacySpool(); err != nil {
				return err
			}
			continue
		}
		if strings.HasSuffix(e.Name(), damagedSuffix) {
			continue // set aside by an earlier start, for a human
		}
		dir := filepath.Join(in.spoolRoot(), e.Name())
		// A spool another live Ingester holds (collect running while an
		// import runs on the same home) is its own: left alone.
		lease, err := recorder.AcquireLease(dir)
		if errors.Is(err, recorder.ErrLeaseHeld) {
			continue
		}
		if err != nil {
			return fmt.Errorf("otelsession: spool %s: %w", dir, err)
		}
		g := &spoolGen{dir: dir, lease: lease}
		in.gens = append(in.gens, g)
		err = readSpool(filepath.Join(dir, spoolName), func(kind byte, off int64, payload []byte) error {
			if err := in.acceptFrame(g, kind, off, payload); err != nil {
				// A whole frame that is not what it should be: the
				// others are still read.
				g.damaged = true
				in.opts.Logf("agentctl %s: the spool %s holds a frame at byte %d that cannot be read (%v); the rest is written, and the file is kept as %s%s", in.opts.Source, dir, off, err, dir, damagedSuffix)
			}
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			// One damaged spool file does not stop the start: what was
			// read before the damage is written, the file set aside.
			g.damaged = true
			in.opts.Logf("agentctl %s: %v: what comes before the damage is written; the file is kept as %s%s (what comes after it was acknowledged and is not in a session)", in.opts.Source, err, dir, damagedSuffix)
		}
	}
	in.mu.Lock()
	in.npending = 0
	for _, pt := range in.pending {
		in.npending += len(pt.spans) + len(pt.logs)
	}
	in.mu.Unlock()
	return nil
}

func (in *Ingester) acceptFrame(g *spoolGen, kind byte, off int64, payload []byte) error {
	switch kind {
	case frameTraces:
		// Read from its bytes, its spans left in the file until written.
		r, err := traceRecordsWire(payload, in.opts, func([]byte) bool { return false })
		if err != nil {
			return err
		}
		r.body.at(g, off, len(payload))
		in.accept(r, g, len(payload))
	case frameLogs:
		var req collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(payload, &req); err != nil {
			return err
		}
		in.accept(logRecords(&req, in.opts), g, len(payload))
	}
	return nil
}

// recoverLegacySpool reads the spool of earlier versions: recorder logs
// under otlp-spool/sessions/, one event per request in OTLP JSON.
func (in *Ingester) recoverLegacySpool() error {
	sp := recorder.Store{Root: in.spoolRoot()}
	ids, err := sp.IDs()
	if err != nil {
		return fmt.Errorf("otelsession: list spool: %w", err)
	}
	for _, id := range ids {
		lease, err := recorder.AcquireLease(sp.SessionDir(id))
		if errors.Is(err, recorder.ErrLeaseHeld) {
			continue
		}
		if err != nil {
			return fmt.Errorf("otelsession: spool %s: %w", id, err)
		}
		g := &spoolGen{dir: sp.SessionDir(id), lease: lease}
		in.gens = append(in.gens, g)
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
			case legacySpoolTraces:
				var req coltracepb.ExportTraceServiceRequest
				if protoJSON.Unmarshal(rec.Request, &req) == nil {
					in.accept(traceRecords(&req, in.opts), g, len(rec.Request))
				}
			case legacySpoolLogs:
				var req collogspb.ExportLogsServiceRequest
				if protoJSON.Unmarshal(rec.Request, &req) == nil {
					in.accept(logRecords(&req, in.opts), g, len(rec.Request))
				}
			}
		}
	}
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
	logsReq  bool
	req      proto.Message // the request they came in (nil when read from its bytes)
	wire     []byte        // its protobuf bytes as received, when the caller has them
	secret   bool          // read from its bytes, and a string in them holds a secret
	body     *wireBody     // where its spans are until written (trace exports)
	evs      [][]byte      // traceRecordsWire's scratch
	res      []any         // *tracepb.ResourceSpans or *logspb.ResourceLogs per record, for the spool
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
	r := &records{req: req, body: &wireBody{req: req}}
	for i, rs := range req.GetResourceSpans() {
		res := toAttrs(rs.GetResource().GetAttributes())
		for j, ss := range rs.GetScopeSpans() {
			for k, s := range ss.GetSpans() {
				tid, sid := hex.EncodeToString(s.GetTraceId()), hex.EncodeToString(s.GetSpanId())
				if !validID(s.GetTraceId(), 16) || !validID(s.GetSpanId(), 8) {
					r.rejected = append(r.rejected, Rejection{TraceID: tid, SpanID: sid, Reason: "the span has no valid trace_id (16 bytes) and span_id (8 bytes)"})
					continue
				}
				if why := tooLarge(opts, s.GetAttributes(), s.GetEvents()); why != "" {
					r.rejected = append(r.rejected, Rejection{TraceID: tid, SpanID: sid, Reason: why})
					continue
				}
				sp := thinSpan(res, ss.GetScope().GetName(), s)
				sp.ref = &wireRef{body: r.body, rs: i, ss: j, index: k}
				r.spans = append(r.spans, sp)
				r.keys = append(r.keys, tid+"/"+sid)
				r.groups = append(r.groups, groupOf(sessionKey(sp), tid))
				r.res, r.scopes, r.msgs = append(r.res, rs), append(r.scopes, ss), append(r.msgs, s)
			}
		}
	}
	return r
}

func logRecords(req *collogspb.ExportLogsServiceRequest, opts Options) *records {
	r := &records{logsReq: true, req: req}
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
				r.res, r.scopes, r.msgs = append(r.res, rl), append(r.scopes, sl), append(r.msgs, l)
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

// TracesWire is Traces for a request that came as protobuf, body: it is
// read without being decoded (see wire.go) and spooled as it came when
// every span is taken and none holds a secret. The Ingester keeps body;
// the caller must not change it. Bytes that are not an OTLP trace export
// give an error wrapping ErrMalformed, and nothing is taken.
func (in *Ingester) TracesWire(ctx context.Context, body []byte) (Result, error) {
	holds := in.red().Holds
	r, err := traceRecordsWire(body, in.opts, holds)
	if err != nil {
		return Result{}, err
	}
	return in.ingest(ctx, r)
}

// LogsWire is Logs for a request that came as protobuf, decoded in req,
// its bytes in body: spooled as they came when every record is taken and
// none holds a secret. (Content log records are few beside spans: they
// are decoded.)
func (in *Ingester) LogsWire(ctx context.Context, req *collogspb.ExportLogsServiceRequest, body []byte) (Result, error) {
	r := logRecords(req, in.opts)
	r.wire = body
	return in.ingest(ctx, r)
}

// Logs maps an OTLP logs export: content events of the earlier GenAI
// conventions, and gen_ai.client.inference.operation.details, joined to
// their spans by trace and span id in whatever order they arrive.
func (in *Ingester) Logs(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (Result, error) {
	return in.ingest(ctx, logRecords(req, in.opts))
}

// roomWait bounds how long a request waits for room under the pending
// caps (the oldest traces written, or requests in flight placed) before
// it is refused with ErrBusy: under an exporter's 10 s timeout.
const roomWait = 5 * time.Second

func (in *Ingester) ingest(ctx context.Context, r *records) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	w := r.weight()
	var (
		res     Result
		fresh   []int
		err     error
		waiting time.Time
	)
	for {
		res, fresh, err = in.reserve(r, w)
		if !errors.Is(err, errFull) {
			break
		}
		// At the cap: the oldest pending traces are written now rather
		// than at their settle time, so a burst is slowed by the
		// writing, not refused while the collector idles.
		wrote, werr := in.makeRoom(w, len(r.keys))
		if werr != nil {
			return Result{}, werr
		}
		if wrote {
			continue
		}
		// The room is held by requests being spooled: they are placed
		// (and can be written) in a moment.
		if waiting.IsZero() {
			waiting = time.Now()
		} else if time.Since(waiting) > roomWait {
			return Result{}, in.busy()
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err != nil || len(fresh) == 0 {
		return res, err
	}
	sp, err := in.spoolAppend(r, fresh)
	if err != nil {
		in.unreserve(r, fresh, w)
		return Result{}, err
	}
	in.mu.Lock()
	in.place(sp.r, sp.fresh, sp.gen, sp.size)
	in.reservedB -= w
	in.mu.Unlock()
	return res, nil
}

// weight is what r's export weighs against MaxPendingBytes until it is
// placed: its size as it came.
func (r *records) weight() int64 {
	if r.wire != nil {
		return int64(len(r.wire))
	}
	if r.req != nil {
		return int64(proto.Size(r.req))
	}
	return 0
}

// errFull: the request does not fit under the pending caps now.
var errFull = errors.New("otelsession: pending caps full")

// busyError is ErrBusy with the wait it suggests: the backlog over the
// rate sessions are written at lately.
type busyError struct{ after time.Duration }

func (e *busyError) Error() string {
	return fmt.Sprintf("%v (about %s of writing queued)", ErrBusy, e.after)
}
func (e *busyError) Is(target error) bool { return target == ErrBusy }

// RetryAfter is how long the exporter should wait (Retry-After).
func (e *busyError) RetryAfter() time.Duration { return e.after }

func (in *Ingester) busy() error {
	in.mu.Lock()
	backlog, rate := in.pendingBytes+in.reservedB, in.writeRate
	in.mu.Unlock()
	after := in.opts.Settle
	if rate > 0 {
		after = time.Duration(float64(backlog) / rate * float64(time.Second))
	}
	return &busyError{after: min(max(after, time.Second), time.Minute).Round(time.Second)}
}

// makeRoom writes the pending traces that arrived first until a request
// of weight w and n records fits under the caps, and says whether it
// wrote any (none: the room is held by requests not yet placed, or
// another request made it meanwhile).
func (in *Ingester) makeRoom(w int64, n int) (bool, error) {
	in.matMu.Lock()
	defer in.matMu.Unlock()
	in.mu.Lock()
	overB := in.pendingBytes + in.reservedB + w - in.opts.MaxPendingBytes
	overN := in.npending + n - in.opts.MaxPending
	if overB <= 0 && overN <= 0 {
		in.mu.Unlock()
		return true, nil // made by another request: try again
	}
	all := make([]*pendingTrace, 0, len(in.pending))
	for _, pt := range in.pending {
		all = append(all, pt)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].began.Before(all[j].began) })
	var ready []*pendingTrace
	for _, pt := range all {
		if overB <= 0 && overN <= 0 {
			break
		}
		ready = append(ready, pt)
		delete(in.pending, pt.id)
		overB -= pt.bytes
		overN -= len(pt.spans) + len(pt.logs)
	}
	in.mu.Unlock()
	if len(ready) == 0 {
		return false, nil
	}
	return true, in.write(ready)
}

// reserve checks r against what was seen and the limits, and marks the
// new records seen; fresh are their indexes.
func (in *Ingester) reserve(r *records, w int64) (Result, []int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return Result{}, nil, ErrClosed
	}
	if in.failing != nil {
		return Result{}, nil, fmt.Errorf("%w: %v", ErrWritesFailing, in.failing)
	}
	n := len(r.keys)
	// The caps count what is pending and what requests being spooled
	// will add, so concurrent requests cannot all pass them at once; a
	// request alone may pass them (else a large one never would).
	if (in.npending+n > in.opts.MaxPending || in.pendingBytes+in.reservedB+w > in.opts.MaxPendingBytes) && (in.npending > 0 || in.reservedB > 0) && in.anyNew(r) {
		return Result{}, nil, errFull
	}
	res := Result{Rejected: r.rejected}
	var fresh []int
	for i, k := range r.keys {
		tid, _ := in.ids(r, i)
		if _, ok := in.seen[tid][k]; ok {
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
		in.see(tid, k)
		fresh = append(fresh, i)
		res.Accepted++
	}
	in.npending += len(fresh)
	if len(fresh) > 0 {
		in.reservedB += w
	}
	return res, fresh, nil
}

// anyNew says whether r holds a record not seen (a retry of what was
// taken passes the caps: it adds nothing). Caller holds mu.
func (in *Ingester) anyNew(r *records) bool {
	for i, k := range r.keys {
		tid, _ := in.ids(r, i)
		if _, ok := in.seen[tid][k]; !ok {
			return true
		}
	}
	return false
}

// see marks key of trace tid seen. Caller holds mu.
func (in *Ingester) see(tid, key string) {
	m := in.seen[tid]
	if m == nil {
		m = map[string]struct{}{}
		in.seen[tid] = m
	}
	m[key] = struct{}{}
}

func (in *Ingester) ids(r *records, i int) (string, string) {
	if r.logsReq {
		return r.logs[i].TraceID, r.logs[i].SpanID
	}
	return r.spans[i].TraceID, r.spans[i].SpanID
}

func (in *Ingester) unreserve(r *records, fresh []int, w int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.reservedB -= w
	for _, i := range fresh {
		tid, _ := in.ids(r, i)
		delete(in.seen[tid], r.keys[i])
		in.count[r.groups[i]]--
	}
	in.npending -= len(fresh)
}

// place puts the fresh records of r, which spool file g holds in a frame
// of size bytes, into their pending traces. Caller holds mu.
func (in *Ingester) place(r *records, fresh []int, g *spoolGen, size int) {
	now := in.opts.Clock()
	each := int64(size / max(len(fresh), 1))
	in.pendingBytes += each * int64(len(fresh))
	for _, i := range fresh {
		tid, _ := in.ids(r, i)
		pt := in.pending[tid]
		if pt == nil {
			pt = &pendingTrace{id: tid, gens: map[*spoolGen]int{}, began: now}
			in.pending[tid] = pt
		}
		pt.gens[g]++
		pt.bytes += each
		if r.logsReq {
			pt.logs = append(pt.logs, r.logs[i])
		} else {
			pt.spans = append(pt.spans, r.spans[i])
		}
		pt.last = now
	}
}

// accept takes the records of spool file g that a killed run left as
// pending, skipping the ones seen. (The file stays until they are
// written.)
func (in *Ingester) accept(r *records, g *spoolGen, size int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var fresh []int
	for i, k := range r.keys {
		tid, _ := in.ids(r, i)
		if _, ok := in.seen[tid][k]; ok {
			continue
		}
		in.see(tid, k)
		in.count[r.groups[i]]++
		fresh = append(fresh, i)
	}
	in.place(r, fresh, g, size)
	in.spoolMu.Lock()
	g.refs += len(fresh)
	in.spoolMu.Unlock()
}

// spoolAppend writes the fresh records of r to the spool as one OTLP
// request, redacted, and returns when it is durable, with the spool file
// that holds it and the frame's size.
func (in *Ingester) spoolAppend(r *records, fresh []int) (spooled, error) {
	sp, b, err := in.spoolPayload(r, fresh)
	if err != nil {
		return sp, fmt.Errorf("otelsession: spool: %w", err)
	}
	g, err := in.spoolFile(len(fresh))
	if err != nil {
		return sp, err
	}
	off, err := g.w.append(sp.kind, b)
	if err != nil {
		in.release(map[*spoolGen]int{g: len(fresh)})
		return sp, fmt.Errorf("otelsession: %w", err)
	}
	sp.gen, sp.size = g, len(b)
	if body := sp.r.body; body != nil && sp.whole {
		// The frame is the request, span for span: its pending spans
		// are read from the spool when written, so memory does not keep
		// the request meanwhile.
		body.at(g, off, len(b))
		for _, i := range sp.fresh {
			sp.r.spans[i].msg = nil
		}
	}
	return sp, nil
}

// spooled is one request's frame: what was spooled and where.
type spooled struct {
	kind  byte
	r     *records // the records to place (r, or r rebuilt from its decoding)
	fresh []int    // their indexes
	whole bool     // the frame holds r's request as it is, span for span
	gen   *spoolGen
	size  int
}

// spoolPayload is the frame of r's fresh records: the request's bytes as
// they came when all of it is taken and nothing in it needs redacting (no
// second encoding), else the fresh records rebuilt into a request,
// redacted, encoded.
func (in *Ingester) spoolPayload(r *records, fresh []int) (spooled, []byte, error) {
	kind := byte(frameTraces)
	if r.logsReq {
		kind = frameLogs
	}
	whole := len(fresh) == len(r.keys) && len(r.rejected) == 0
	sp := spooled{kind: kind, r: r, fresh: fresh, whole: whole}
	if whole && r.wire != nil && r.req == nil && !r.secret {
		// Read from its bytes (traceRecordsWire), every string shown to
		// the redactor on the way: secret says whether one holds a
		// secret. A decoded request (LogsWire) is checked below.
		return sp, r.wire, nil
	}
	if r.req == nil {
		// Read from its bytes (traceRecordsWire): decoded now to be cut
		// or redacted, its records matched by key.
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(r.wire, req); err != nil {
			return sp, nil, err
		}
		keep := map[string]bool{}
		for _, i := range fresh {
			keep[r.keys[i]] = true
		}
		full := traceRecords(req, in.opts)
		fresh = fresh[:0:0]
		for i, k := range full.keys {
			if keep[k] {
				fresh = append(fresh, i)
			}
		}
		r = full
		sp.r, sp.fresh = r, fresh
	}
	if !whole {
		// A frame of part of the request: its spans stay in memory,
		// decoded (refs into the request would not find them in it).
		for _, i := range fresh {
			if i < len(r.spans) {
				r.spans[i].ref = nil
			}
		}
	}
	var msg proto.Message
	switch {
	case whole && r.logsReq:
		msg = redacted(r.req.(*collogspb.ExportLogsServiceRequest), redactLogs, in.red().String)
	case whole:
		msg = redacted(r.req.(*coltracepb.ExportTraceServiceRequest), redactTraces, in.red().String)
	case r.logsReq:
		req := &collogspb.ExportLogsServiceRequest{}
		var lastRL *logspb.ResourceLogs
		var lastSL *logspb.ScopeLogs
		var curRL *logspb.ResourceLogs
		var curSL *logspb.ScopeLogs
		for _, i := range fresh {
			rl, sl := r.res[i].(*logspb.ResourceLogs), r.scopes[i].(*logspb.ScopeLogs)
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
		msg = redacted(req, redactLogs, in.red().String)
	default:
		req := &coltracepb.ExportTraceServiceRequest{}
		var lastRS *tracepb.ResourceSpans
		var lastSS *tracepb.ScopeSpans
		var curRS *tracepb.ResourceSpans
		var curSS *tracepb.ScopeSpans
		for _, i := range fresh {
			rs, ss := r.res[i].(*tracepb.ResourceSpans), r.scopes[i].(*tracepb.ScopeSpans)
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
		msg = redacted(req, redactTraces, in.red().String)
	}
	if whole && msg == r.req && r.wire != nil {
		return sp, r.wire, nil
	}
	b, err := proto.Marshal(msg)
	return sp, b, err
}

// spoolFile returns the spool file the next request goes to, counting n
// records in it: the current one, or a new one when there is none, it is
// full or it failed (a failed file stays until what it holds is written).
func (in *Ingester) spoolFile(n int) (*spoolGen, error) {
	in.spoolMu.Lock()
	defer in.spoolMu.Unlock()
	if in.cur != nil && in.cur.w.full() {
		in.cur = nil
	}
	if in.cur == nil {
		w, err := createSpool(in.spoolRoot(), in.opts.Recorder.NoSync)
		if err != nil {
			return nil, fmt.Errorf("otelsession: spool: %w", err)
		}
		in.cur = &spoolGen{dir: w.dir, w: w}
		in.gens = append(in.gens, in.cur)
	}
	in.cur.refs += n
	return in.cur, nil
}

// release counts records of spool files as written.
func (in *Ingester) release(gens map[*spoolGen]int) {
	in.spoolMu.Lock()
	defer in.spoolMu.Unlock()
	for g, n := range gens {
		g.refs -= n
	}
}

// rotate removes the spool files whose records are all in sessions.
func (in *Ingester) rotate() {
	in.spoolMu.Lock()
	defer in.spoolMu.Unlock()
	kept := in.gens[:0]
	for _, g := range in.gens {
		if g.refs > 0 {
			kept = append(kept, g)
			continue
		}
		if g == in.cur {
			in.cur = nil
		}
		g.close()
		if g.damaged {
			os.Rename(g.dir, g.dir+damagedSuffix)
			continue
		}
		os.RemoveAll(g.dir)
	}
	in.gens = kept
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
		if !force && now.Before(pt.retryAt) {
			continue // set aside after a failed write: not yet
		}
		if force || in.settled(pt, now) {
			ready = append(ready, pt)
			delete(in.pending, id)
		}
	}
	in.mu.Unlock()
	return in.write(ready)
}

// settled says whether pt is ready to be written at now: quiet for
// Settle, or, when it holds content log records whose span has not come,
// quiet for SpanWait (an SDK exports log records sooner than spans, and a
// span only once its call ended: written without it, the content would
// start a session of its own, or be kept aside in attrs). Caller holds
// matMu and mu.
func (in *Ingester) settled(pt *pendingTrace, now time.Time) bool {
	wait := in.opts.Settle
	if in.awaitsSpan(pt) {
		wait = max(wait, in.opts.SpanWait)
	}
	return now.Sub(pt.last) >= wait
}

// awaitsSpan says whether a log record of pt names a span neither pt
// nor the session its trace went to holds. Caller holds matMu and mu.
func (in *Ingester) awaitsSpan(pt *pendingTrace) bool {
	if len(pt.logs) == 0 {
		return false
	}
	have := make(map[string]bool, len(pt.spans))
	for _, sp := range pt.spans {
		have[sp.SpanID] = true
	}
	s := in.byTrace[pt.id]
	for _, l := range pt.logs {
		if l.SpanID == "" || have[l.SpanID] || (s != nil && s.spans[pt.id+"/"+l.SpanID]) {
			continue
		}
		return true
	}
	return false
}

// write writes the traces ready into their sessions, the earliest first,
// as one pass. Caller holds matMu.
func (in *Ingester) write(ready []*pendingTrace) error {
	began := time.Now()
	sort.Slice(ready, func(i, j int) bool { return ready[i].first().Before(ready[j].first()) })
	var errs []error
	var ioErr error // a failure to write, not one session's
	wrote := false
	done, doneBytes := 0, int64(0)
	for i, pt := range ready {
		if err := in.writeTrace(pt); err != nil {
			// Set aside: the others are written, this one is tried
			// again later (its records stay pending and spooled).
			errs = append(errs, fmt.Errorf("trace %s: %w", pt.id, err))
			if !sessionBound(err) && ioErr == nil {
				ioErr = err
			}
			in.setAside(pt, began)
			continue
		}
		wrote = true
		done += len(pt.spans) + len(pt.logs)
		doneBytes += pt.bytes
		in.release(pt.gens)
		ready[i] = nil // written: its spans, expanded now, can go before the pass ends
	}
	in.mu.Lock()
	in.npending -= done
	in.pendingBytes -= doneBytes
	was := in.failing
	switch {
	case wrote, len(ready) > 0 && ioErr == nil:
		in.failing = nil // the disk takes writes (a session's own failure is not the disk's)
	case ioErr != nil:
		in.failing = ioErr
	}
	now2 := in.failing
	if d := time.Since(began).Seconds(); doneBytes > 0 && d > 0 {
		rate := float64(doneBytes) / d
		if in.writeRate == 0 {
			in.writeRate = rate
		} else {
			in.writeRate = 0.7*in.writeRate + 0.3*rate
		}
	}
	in.mu.Unlock()
	for _, b := range in.decoded {
		b.release()
	}
	in.decoded = in.decoded[:0]
	in.rotate() // a trace set aside keeps its spool file
	in.pass++
	if len(errs) > 0 {
		in.opts.Logf("agentctl %s: %d of %d traces not written now, set aside and tried again later (what they hold stays in the spool): %v", in.opts.Source, len(errs), len(ready), errs[0])
	}
	if was != nil && now2 == nil {
		in.opts.Logf("agentctl %s: writing sessions again", in.opts.Source)
	}
	errs = append(errs, in.evict())
	return errors.Join(errs...)
}

// maxRetryDelay bounds how long a trace set aside waits between tries.
const maxRetryDelay = 30 * time.Second

// setAside puts pt back among the pending traces after its write failed,
// to be tried again after a delay that doubles with each failure (merged
// with records of its trace that came meanwhile).
func (in *Ingester) setAside(pt *pendingTrace, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	pt.fails++
	d := in.opts.Settle << min(pt.fails-1, 5)
	pt.retryAt = now.Add(min(d, maxRetryDelay))
	if cur := in.pending[pt.id]; cur != nil {
		cur.spans = append(pt.spans, cur.spans...)
		cur.logs = append(pt.logs, cur.logs...)
		for g, n := range pt.gens {
			cur.gens[g] += n
		}
		cur.bytes += pt.bytes
		cur.retryAt, cur.fails = pt.retryAt, pt.fails
		return
	}
	in.pending[pt.id] = pt
}

// sessionBound reports whether a write failed for its session alone (a
// lease another process holds, a damaged log): other traces are written
// meanwhile, and the receiver goes on acknowledging. Any other failure
// (a full disk, an I/O error) is the disk's: new exports are refused
// with ErrWritesFailing until a write succeeds again.
func sessionBound(err error) bool {
	for _, e := range []error{recorder.ErrLeaseHeld, recorder.ErrCorrupt, recorder.ErrUnsupportedVersion, recorder.ErrTornTail, recorder.ErrTooLarge, recorder.ErrNotStarted} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
	if err == nil {
		in.rotate()
	}
	in.spoolMu.Lock()
	for _, g := range in.gens {
		g.close() // kept: the next start writes what it holds
	}
	in.gens, in.cur = nil, nil
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
