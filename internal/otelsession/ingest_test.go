package otelsession

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
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

// oneSession returns the events of the only session of got.
func oneSession(t *testing.T, got map[string][]session.Event) []session.Event {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("%d sessions, want 1", len(got))
	}
	for _, evs := range got {
		return evs
	}
	return nil
}

// encodeAll is the sessions' events as the log holds them (golden form).
func encodeAll(t *testing.T, evs []session.Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		line, err := session.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestArrivalOrder delivers each capture's requests in every order the
// test can make (reversed, logs first, each span its own request, last to
// first, every request twice): the session is the same, event for event.
func TestArrivalOrder(t *testing.T) {
	for _, em := range emitters {
		t.Run(em.name, func(t *testing.T) {
			exps := loadCapture(t, filepath.Join(captures, em.name, "http-json"))
			_, want := ingestAll(t, exps)
			wantText := encodeAll(t, oneSession(t, want))
			orders := map[string][]export{
				"reversed": reversed(exps),
				"twice":    append(slices.Clone(exps), exps...),
				"split":    reversed(split(exps)),
			}
			for name, order := range orders {
				_, got := ingestAll(t, order)
				if g := encodeAll(t, oneSession(t, got)); g != wantText {
					t.Errorf("%s: the session differs:\n got: %s\nwant: %s", name, g, wantText)
				}
			}
		})
	}
}

func reversed(exps []export) []export {
	out := slices.Clone(exps)
	slices.Reverse(out)
	return out
}

// split makes every span its own export request.
func split(exps []export) []export {
	var out []export
	for _, e := range exps {
		if e.traces == nil {
			out = append(out, e)
			continue
		}
		for _, rs := range e.traces.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					out = append(out, export{name: e.name + "/" + s.GetName(), traces: &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
						Resource: rs.GetResource(), ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.GetScope(), Spans: []*tracepb.Span{s}}}}}}})
				}
			}
		}
	}
	return out
}

// TestRestartDedups collects a capture, closes, opens a new Ingester on
// the same home and delivers the same exports again: a retried export
// across a restart adds nothing.
func TestRestartDedups(t *testing.T) {
	for _, em := range emitters {
		t.Run(em.name, func(t *testing.T) {
			exps := loadCapture(t, filepath.Join(captures, em.name, "http-protobuf"))
			st, first := ingestAll(t, exps)
			in, err := NewIngester(st, testOpts())
			if err != nil {
				t.Fatal(err)
			}
			feed(t, in, exps)
			if err := in.Close(); err != nil {
				t.Fatal(err)
			}
			if got := in.Sessions(); len(got) != 0 {
				t.Errorf("the second delivery wrote sessions %v, want none", got)
			}
			if a, b := encodeAll(t, oneSession(t, first)), encodeAll(t, oneSession(t, loadAll(t, st))); a != b {
				t.Errorf("the session changed:\n got: %s\nwant: %s", b, a)
			}
		})
	}
}

// TestContinuesAfterRestart writes the first trace of a capture, closes,
// and delivers the rest to a new Ingester: they join the same session, as
// one run would have written it.
func TestContinuesAfterRestart(t *testing.T) {
	exps := loadCapture(t, filepath.Join(captures, "otel-openai", "http-json"))
	_, want := ingestAll(t, exps)
	// The app makes each call its own trace: the first run gets the
	// first trace (span and content), the second the rest.
	var first []byte
	for _, e := range exps {
		if e.traces != nil && first == nil {
			first = e.traces.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0].GetTraceId()
		}
	}
	var a, b []export
	for _, e := range exps {
		x, y := byTrace(e, first)
		a, b = append(a, x), append(b, y)
	}
	st := recorder.Store{Root: t.TempDir()}
	for i, part := range [][]export{a, b} {
		in, err := NewIngester(st, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		feed(t, in, part)
		if err := in.Close(); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
	}
	if a, b := encodeAll(t, oneSession(t, want)), encodeAll(t, oneSession(t, loadAll(t, st))); a != b {
		t.Errorf("the session differs:\n got: %s\nwant: %s", b, a)
	}
}

// TestKilled runs an Ingester in a child process, delivers a capture to
// it (each export acknowledged, none yet written into a session: Settle
// is long), kills it with SIGKILL, and opens the home again: every
// acknowledged span is in the session, once, as an unkilled run writes it.
func TestKilled(t *testing.T) {
	if home := os.Getenv("OTELSESSION_KILLED_CHILD"); home != "" {
		in, err := NewIngester(recorder.Store{Root: home}, Options{Settle: time.Hour, NoBackground: true})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		feed(t, in, loadCapture(t, filepath.Join(captures, "vercel-genai", "http-protobuf")))
		fmt.Println("acked")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilled$", "-test.count=1")
	cmd.Env = append(os.Environ(), "OTELSESSION_KILLED_CHILD="+home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "acked") {
		cmd.Process.Kill()
		t.Fatalf("child said %q", buf[:n])
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	st := recorder.Store{Root: home}
	if ids, _ := st.IDs(); len(ids) != 0 {
		t.Fatalf("sessions %v before recovery, want none (Settle is an hour)", ids)
	}
	in, err := NewIngester(st, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	_, want := ingestAll(t, loadCapture(t, filepath.Join(captures, "vercel-genai", "http-protobuf")))
	if a, b := encodeAll(t, oneSession(t, want)), encodeAll(t, oneSession(t, loadAll(t, st))); a != b {
		t.Errorf("after kill -9 the session differs:\n got: %s\nwant: %s", b, a)
	}
	if left, _ := os.ReadDir(filepath.Join(home, SpoolDir)); len(left) != 0 {
		t.Errorf("spool %v left after everything was written", left)
	}
}

// TestLimits holds a span bomb (one trace of many spans) and an oversized
// attribute to Options: past the limit each span is rejected with its
// reason, and what was accepted is written.
func TestLimits(t *testing.T) {
	exps := loadCapture(t, filepath.Join(captures, "vercel-genai", "http-protobuf"))
	base := exps[0].traces.GetResourceSpans()[0]
	tmpl := base.GetScopeSpans()[0].GetSpans()[0]
	bomb := &coltracepb.ExportTraceServiceRequest{}
	rs := &tracepb.ResourceSpans{Resource: base.GetResource()}
	ss := &tracepb.ScopeSpans{Scope: base.GetScopeSpans()[0].GetScope()}
	for i := range 500 {
		s := proto.Clone(tmpl).(*tracepb.Span)
		s.SpanId = []byte{1, 2, 3, 4, 5, 6, byte(i >> 8), byte(i)}
		ss.Spans = append(ss.Spans, s)
	}
	big := proto.Clone(tmpl).(*tracepb.Span)
	big.TraceId = []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	big.Attributes = append(big.Attributes, &commonpb.KeyValue{Key: "gen_ai.input.messages", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat("x", 3<<10)}}})
	ss.Spans = append(ss.Spans, big)
	bad := proto.Clone(tmpl).(*tracepb.Span)
	bad.TraceId = []byte{1, 2}
	ss.Spans = append(ss.Spans, bad)
	rs.ScopeSpans = []*tracepb.ScopeSpans{ss}
	bomb.ResourceSpans = []*tracepb.ResourceSpans{rs}

	st := recorder.Store{Root: t.TempDir()}
	opts := testOpts()
	opts.MaxSpansPerSession, opts.MaxAttrBytes = 100, 2<<10
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := in.Traces(context.Background(), bomb)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 100 || len(res.Rejected) != 402 {
		t.Fatalf("accepted %d, rejected %d; want 100 and 402", res.Accepted, len(res.Rejected))
	}
	reasons := map[string]int{}
	for _, r := range res.Rejected {
		switch {
		case strings.Contains(r.Reason, "the limit (MaxSpansPerSession)"):
			reasons["spans"]++
		case strings.Contains(r.Reason, "attribute gen_ai.input.messages is 3 KiB, over the 2 KiB limit"):
			reasons["attr"]++
		case strings.Contains(r.Reason, "no valid trace_id"):
			reasons["id"]++
		default:
			t.Errorf("unexpected reason %q", r.Reason)
		}
	}
	if reasons["spans"] != 400 || reasons["attr"] != 1 || reasons["id"] != 1 {
		t.Errorf("reasons = %v", reasons)
	}
	// The same bomb again: the 100 are answered as delivered, the rest
	// refused again; nothing is added.
	res, err = in.Traces(context.Background(), bomb)
	if err != nil || res.Accepted != 100 || len(res.Rejected) != 402 {
		t.Fatalf("again: accepted %d, rejected %d, %v", res.Accepted, len(res.Rejected), err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	evs := oneSession(t, loadAll(t, st))
	calls := 0
	for _, e := range evs {
		if e.Kind == session.KindModelCall {
			calls++
		}
	}
	if calls != 100 {
		t.Errorf("%d model calls written, want 100", calls)
	}
}

// TestBusy: past MaxPending a request is refused whole with ErrBusy.
func TestBusy(t *testing.T) {
	exps := loadCapture(t, filepath.Join(captures, "vercel-genai", "http-protobuf"))
	opts := testOpts()
	opts.MaxPending = 3
	st := recorder.Store{Root: t.TempDir()}
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	parts := split(exps)
	for i, p := range parts[:3] {
		if _, err := in.Traces(context.Background(), p.traces); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
	}
	// At the cap the oldest pending trace is written now, not refused.
	if _, err := in.Traces(context.Background(), parts[3].traces); err != nil {
		t.Fatalf("4th pending span: %v, want it taken (the oldest written to make room)", err)
	}
	if ids, _ := st.IDs(); len(ids) == 0 {
		t.Error("no session written to make room at the cap")
	}
	in.mu.Lock()
	n := in.npending
	in.mu.Unlock()
	if n > 3 {
		t.Errorf("%d records pending, over MaxPending 3", n)
	}
	// Refused, the exporter is told to wait what the backlog takes at
	// the rate sessions were written lately.
	in.mu.Lock()
	saved := in.pendingBytes
	in.pendingBytes, in.writeRate = 30<<20, 3<<20
	in.mu.Unlock()
	err = in.busy()
	var ra interface{ RetryAfter() time.Duration }
	if !errors.Is(err, ErrBusy) || !errors.As(err, &ra) || ra.RetryAfter() != 10*time.Second {
		t.Errorf("busy() = %v, want ErrBusy asking for 10s (30 MiB at 3 MiB/s)", err)
	}
	in.mu.Lock()
	in.pendingBytes = saved
	in.mu.Unlock()
}

// bigExport is an OTLP protobuf trace export of about size bytes: traces
// of 50 spans, each with a 10 KB attribute, ids from seed.
func bigExport(t testing.TB, seed byte, size int) []byte {
	t.Helper()
	req := &coltracepb.ExportTraceServiceRequest{}
	ss := &tracepb.ScopeSpans{}
	req.ResourceSpans = []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}
	val := strings.Repeat("select * from orders where id = ? -- ", 10_000/38)
	start := uint64(time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC).UnixNano())
	for i := 0; proto.Size(req) < size; i++ {
		tid := make([]byte, 16)
		tid[0], tid[1], tid[2] = seed, byte(i/50>>8), byte(i/50)
		sid := make([]byte, 8)
		sid[0], sid[6], sid[7] = seed, byte(i>>8), byte(i)
		ss.Spans = append(ss.Spans, &tracepb.Span{TraceId: tid, SpanId: sid, Name: "db.query",
			StartTimeUnixNano: start + uint64(i), EndTimeUnixNano: start + uint64(i) + 1000,
			Attributes: []*commonpb.KeyValue{{Key: "db.statement", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: val}}}}})
	}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Concurrent 6 MB exports, as 8 OpenTelemetry SDK apps send them, are
// all taken while the collector has time to write them: at the pending
// cap the oldest traces are written instead of the exports refused, and
// the cap holds for requests in flight together.
func TestConcurrentLargeExports(t *testing.T) {
	opts := testOpts()
	opts.NoBackground = false // settle by time, as collect does
	st := recorder.Store{Root: t.TempDir()}
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	const apps, each = 8, 2
	var bodies [apps][each][]byte
	spans := 0
	for a := range apps {
		for e := range each {
			bodies[a][e] = bigExport(t, byte(1+a*each+e), 6<<20)
			var req coltracepb.ExportTraceServiceRequest
			proto.Unmarshal(bodies[a][e], &req)
			spans += len(req.ResourceSpans[0].ScopeSpans[0].Spans)
		}
	}
	stop := make(chan struct{})
	peak := make(chan int64)
	go func() {
		most := int64(0)
		for {
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(time.Millisecond):
			}
			in.mu.Lock()
			most = max(most, in.pendingBytes+in.reservedB)
			in.mu.Unlock()
		}
	}()
	errs := make(chan error, apps*each)
	for a := range apps {
		go func() {
			for e := range each {
				_, err := in.TracesWire(context.Background(), bodies[a][e])
				errs <- err
			}
		}()
	}
	for range apps * each {
		if err := <-errs; err != nil {
			t.Errorf("export: %v, want it taken", err)
		}
	}
	close(stop)
	// One export alone may pass the cap; two together may not.
	if p := <-peak; p > opts.withDefaults().MaxPendingBytes+7<<20 {
		t.Errorf("pending and in flight peaked at %d MiB, over the %d MiB cap and one export", p>>20, opts.withDefaults().MaxPendingBytes>>20)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, evs := range loadAll(t, st) {
		for _, e := range evs {
			var a struct {
				Kept []json.RawMessage `json:"otel_spans"`
			}
			json.Unmarshal(e.Attrs, &a)
			got += len(a.Kept)
		}
	}
	if got != spans {
		t.Errorf("%d spans in sessions, want all %d", got, spans)
	}
}

// TestMalformedJSON: OTLP/JSON that is not valid is an error naming why,
// and nothing is ingested.
func TestMalformedJSON(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"0102030405060708"}]}]}]}`, `traceId "zz" is not hex`},
		{`{"resourceSpans":[`, "unexpected EOF"},
		{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":7}]}]}]}`, "name"},
	} {
		_, err := DecodeTracesJSON([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeTracesJSON(%s) = %v, want an error with %q", tt.in, err, tt.want)
		}
	}
}

// TestContentOff: the OTel JS OpenAI instrumentation's spans without its
// content log records (capture off) still give the calls, tokens and
// timings, and the header says content was not captured.
func TestContentOff(t *testing.T) {
	var traces []export
	for _, e := range loadCapture(t, filepath.Join(captures, "otel-openai", "http-json")) {
		if e.traces != nil {
			traces = append(traces, e)
		}
	}
	_, got := ingestAll(t, traces)
	// Each call is its own trace, and with no content nothing joins them.
	if len(got) != 2 {
		t.Fatalf("%d sessions, want 2 (one per trace)", len(got))
	}
	tokens := int64(0)
	for _, evs := range got {
		if !strings.Contains(string(evs[0].Attrs), `"content_captured":false`) || !strings.Contains(string(evs[0].Attrs), `"content"`) {
			t.Errorf("header attrs %s do not say content was not captured", evs[0].Attrs)
		}
		for _, e := range evs {
			switch e.Kind {
			case session.KindModelCall:
				tokens += e.InputTokens + e.OutputTokens
				if e.LatencyMS <= 0 || e.Model != "gpt-4o-mini" {
					t.Errorf("model_call %+v: no latency or model", e)
				}
			case session.KindAssistantMessage, session.KindUserMessage:
				t.Errorf("a %s with content capture off", e.Kind)
			}
		}
	}
	if tokens != 142+19+198+17 {
		t.Errorf("tokens = %d, want %d", tokens, 142+19+198+17)
	}
}

// TestRedacted: a secret in a span's content is redacted in the session,
// and in the spool on its way there.
func TestRedacted(t *testing.T) {
	const secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
	exps := loadCapture(t, filepath.Join(captures, "vercel-genai", "http-json"))
	for _, rs := range exps[0].traces.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				for _, kv := range s.GetAttributes() {
					if kv.GetKey() == "gen_ai.input.messages" {
						kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Replace(kv.GetValue().GetStringValue(), "Where is my order", "My key is "+secret+". Where is my order", 1)}}
					}
				}
			}
		}
	}
	st := recorder.Store{Root: t.TempDir()}
	opts := testOpts()
	r := redact.New(redact.FromEnv([]string{"OPENAI_API_KEY=" + secret})...)
	opts.Recorder.Redact = func() *redact.Redactor { return r }
	opts.Settle = time.Hour
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	feed(t, in, exps)
	walk := func(when string) {
		filepath.Walk(st.Root, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
					t.Errorf("%s: %s holds the secret", when, p)
				}
			}
			return nil
		})
	}
	walk("spooled")
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	walk("written")
	evs := oneSession(t, loadAll(t, st))
	if !strings.Contains(encodeAll(t, evs), "[REDACTED") {
		t.Errorf("no redaction marker in the session")
	}
}

// byTrace splits an export into the part of trace id and the rest.
func byTrace(e export, id []byte) (in, out export) {
	in, out = export{name: e.name}, export{name: e.name}
	if e.traces != nil {
		in.traces, out.traces = &coltracepb.ExportTraceServiceRequest{}, &coltracepb.ExportTraceServiceRequest{}
		for _, rs := range e.traces.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					dst := out.traces
					if string(s.GetTraceId()) == string(id) {
						dst = in.traces
					}
					dst.ResourceSpans = append(dst.ResourceSpans, &tracepb.ResourceSpans{Resource: rs.GetResource(), ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.GetScope(), Spans: []*tracepb.Span{s}}}})
				}
			}
		}
		return in, out
	}
	in.logs, out.logs = &collogspb.ExportLogsServiceRequest{}, &collogspb.ExportLogsServiceRequest{}
	for _, rl := range e.logs.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, l := range sl.GetLogRecords() {
				dst := out.logs
				if string(l.GetTraceId()) == string(id) {
					dst = in.logs
				}
				dst.ResourceLogs = append(dst.ResourceLogs, &logspb.ResourceLogs{Resource: rl.GetResource(), ScopeLogs: []*logspb.ScopeLogs{{Scope: sl.GetScope(), LogRecords: []*logspb.LogRecord{l}}}})
			}
		}
	}
	return in, out
}

// TestEviction: with room for one live session, every emitter's session
// is written, closed and forgotten as the next one comes, and delivering
// everything again (an exporter's retries after the sessions were
// evicted) adds nothing: the home holds what a run that kept every
// session live writes.
func TestEviction(t *testing.T) {
	run := func(live int) (map[string][]session.Event, int) {
		st := recorder.Store{Root: t.TempDir()}
		opts := testOpts()
		opts.MaxLiveSessions = live
		opts.EvictIdle = time.Nanosecond // every session idle enough: evicted as soon as over the count
		in, err := NewIngester(st, opts)
		if err != nil {
			t.Fatal(err)
		}
		most := 0
		for range 2 {
			for _, em := range emitters {
				feed(t, in, loadCapture(t, filepath.Join(captures, em.name, "http-protobuf")))
				if err := in.Flush(); err != nil {
					t.Fatal(err)
				}
				most = max(most, len(in.sessions))
			}
		}
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
		return loadAll(t, st), most
	}
	want, _ := run(0)
	got, most := run(1)
	if most != 1 {
		t.Errorf("%d sessions live after a write pass, want at most 1", most)
	}
	if len(want) < len(emitters) {
		t.Fatalf("%d sessions, want one per emitter at least", len(want))
	}
	for id, evs := range want {
		if a, b := encodeAll(t, evs), encodeAll(t, got[id]); a != b {
			t.Errorf("session %s differs with eviction:\n got: %s\nwant: %s", id, b, a)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d sessions with eviction, want %d", len(got), len(want))
	}
}

// TestContentWaitsForSpan: the OpenTelemetry OpenAI instrumentation's
// content log records are exported (every 1 s) before their spans (every
// 5 s, once the call ended): a trace holding only log records past
// Settle is not written alone but waits for its span (SpanWait), and the
// session is what all of it at once makes. Past SpanWait it is written
// as it is.
func TestContentWaitsForSpan(t *testing.T) {
	exps := loadCapture(t, filepath.Join(captures, "otel-openai", "http-protobuf"))
	_, want := ingestAll(t, exps)
	var logs, traces []export
	for _, e := range exps {
		if e.logs != nil {
			logs = append(logs, e)
		} else {
			traces = append(traces, e)
		}
	}
	if len(logs) == 0 || len(traces) == 0 {
		t.Fatal("the capture has no log records or no spans")
	}
	now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	st := recorder.Store{Root: t.TempDir()}
	opts := testOpts()
	opts.Clock = func() time.Time { return now }
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	feed(t, in, logs)
	// The model call takes 3 s, and its span leaves 5 s after it ended.
	for range 8 {
		now = now.Add(time.Second)
		if err := in.flush(false); err != nil {
			t.Fatal(err)
		}
	}
	if ids, _ := st.IDs(); len(ids) != 0 {
		t.Fatalf("%d sessions written from content records alone, before their spans came", len(ids))
	}
	feed(t, in, traces)
	now = now.Add(opts.withDefaults().Settle)
	if err := in.flush(false); err != nil {
		t.Fatal(err)
	}
	got := loadAll(t, st)
	if len(got) != len(want) {
		t.Fatalf("%d sessions, want %d", len(got), len(want))
	}
	for id, evs := range want {
		if a, b := encodeAll(t, evs), encodeAll(t, got[id]); a != b {
			t.Errorf("session %s, content before spans:\n got: %s\nwant: %s", id, b, a)
		}
	}
	in.Close()

	// A span that never comes: the content is written after SpanWait.
	st2 := recorder.Store{Root: t.TempDir()}
	in2, err := NewIngester(st2, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in2.Close()
	feed(t, in2, logs)
	now = now.Add(opts.withDefaults().SpanWait)
	if err := in2.flush(false); err != nil {
		t.Fatal(err)
	}
	if ids, _ := st2.IDs(); len(ids) == 0 {
		t.Error("content records whose span never came are not written after SpanWait")
	}
}

// TestEvictionNoThrash: more conversations going on at once than
// MaxLiveSessions are not evicted and read back on every write pass
// (collect's CPU per span grew 2.7x past 64 live conversations): a
// session is evicted only once idle for EvictIdle, and the sessions are
// what keeping everything live writes.
func TestEvictionNoThrash(t *testing.T) {
	var rounds [][]export
	for _, em := range []string{"vercel-genai", "vercel-legacy", "openinference"} {
		for i, p := range split(loadCapture(t, filepath.Join(captures, em, "http-protobuf"))) {
			if i == len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[i] = append(rounds[i], p)
		}
	}
	run := func(live int) (map[string][]session.Event, *Ingester) {
		now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
		st := recorder.Store{Root: t.TempDir()}
		opts := testOpts()
		opts.MaxLiveSessions = live
		opts.Clock = func() time.Time { return now }
		in, err := NewIngester(st, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close() })
		// A span of each conversation a round, each round written
		// before the next (3 s apart: past Settle).
		for _, r := range rounds {
			feed(t, in, r)
			now = now.Add(3 * time.Second)
			if err := in.flush(false); err != nil {
				t.Fatal(err)
			}
		}
		got := loadAll(t, st)
		// Idle past EvictIdle, they go.
		now = now.Add(opts.withDefaults().EvictIdle)
		if err := in.flush(false); err != nil {
			t.Fatal(err)
		}
		return got, in
	}
	want, _ := run(100)
	got, in := run(1)
	if in.loads != 0 {
		t.Errorf("%d sessions read back from their logs over %d passes, want 0 (conversations evicted while going on)", in.loads, len(rounds))
	}
	if len(got) != len(want) {
		t.Errorf("%d sessions, want %d", len(got), len(want))
	}
	// An unmapped span's note is stamped when written (wall clock).
	wall := regexp.MustCompile(`"ts":"[^"]*","kind":"error","reason":"unmapped_spans"`)
	for id, evs := range want {
		a, b := wall.ReplaceAllString(encodeAll(t, evs), "WALL"), wall.ReplaceAllString(encodeAll(t, got[id]), "WALL")
		if a != b {
			t.Errorf("session %s:\n got: %s\nwant: %s", id, b, a)
		}
	}
	if n := len(in.sessions); n > 1 {
		t.Errorf("%d sessions live after EvictIdle, want at most MaxLiveSessions 1", n)
	}
}

// oneTraceCalls are the otel-openai capture's model calls as one trace
// (an app with a span around its conversation): for each call, in order,
// a logs export of its content records and a trace export of its span.
func oneTraceCalls(t *testing.T) (logs []*collogspb.ExportLogsServiceRequest, spans []*coltracepb.ExportTraceServiceRequest) {
	t.Helper()
	tid := []byte("one-conversation")
	byspan := map[string]*collogspb.ExportLogsServiceRequest{}
	for _, e := range loadCapture(t, filepath.Join(captures, "otel-openai", "http-protobuf")) {
		if e.logs != nil {
			for _, rl := range e.logs.ResourceLogs {
				for _, sl := range rl.ScopeLogs {
					for _, l := range sl.LogRecords {
						l.TraceId = tid
						k := string(l.SpanId)
						if byspan[k] == nil {
							byspan[k] = &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{Resource: rl.Resource, ScopeLogs: []*logspb.ScopeLogs{{Scope: sl.Scope}}}}}
						}
						rls := byspan[k].ResourceLogs[0].ScopeLogs[0]
						rls.LogRecords = append(rls.LogRecords, l)
					}
				}
			}
			continue
		}
		req := e.traces
		if req == nil {
			req = &coltracepb.ExportTraceServiceRequest{}
			if err := proto.Unmarshal(e.wire, req); err != nil {
				t.Fatal(err)
			}
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					sp.TraceId = tid
					spans = append(spans, &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: rs.Resource, ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.Scope, Spans: []*tracepb.Span{sp}}}}}})
				}
			}
		}
	}
	slices.SortStableFunc(spans, func(a, b *coltracepb.ExportTraceServiceRequest) int {
		return cmp.Compare(a.ResourceSpans[0].ScopeSpans[0].Spans[0].StartTimeUnixNano, b.ResourceSpans[0].ScopeSpans[0].Spans[0].StartTimeUnixNano)
	})
	for _, r := range spans {
		sp := r.ResourceSpans[0].ScopeSpans[0].Spans[0]
		if byspan[string(sp.SpanId)] == nil {
			t.Fatalf("no content records of span %x", sp.SpanId)
		}
		logs = append(logs, byspan[string(sp.SpanId)])
	}
	if len(spans) != 2 {
		t.Fatalf("%d model calls in the capture, want 2", len(spans))
	}
	return logs, spans
}

// TestContentWaitsForItsSpanInATrace: in a conversation that is one
// trace, the next call's content records come while the trace is quiet
// (its span leaves 5 s after the call ended, the call takes 3 s): the
// trace waits for that span rather than being written with the content
// set aside in attrs, and the session is what all of it at once makes.
func TestContentWaitsForItsSpanInATrace(t *testing.T) {
	logs, spans := oneTraceCalls(t)
	want := func() string {
		st := recorder.Store{Root: t.TempDir()}
		in, err := NewIngester(st, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		for i := range spans {
			in.Logs(context.Background(), logs[i])
			in.Traces(context.Background(), spans[i])
		}
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
		return encodeAll(t, oneSession(t, loadAll(t, st)))
	}()
	now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	st := recorder.Store{Root: t.TempDir()}
	opts := testOpts()
	opts.Clock = func() time.Time { return now }
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	step := func(d time.Duration) {
		now = now.Add(d)
		if err := in.flush(false); err != nil {
			t.Fatal(err)
		}
	}
	in.Logs(context.Background(), logs[0])
	step(time.Second)
	in.Traces(context.Background(), spans[0])
	in.Logs(context.Background(), logs[1])
	step(3 * time.Second) // quiet past Settle: call 2's span not here yet
	step(3 * time.Second)
	in.Traces(context.Background(), spans[1])
	step(3 * time.Second)
	if got := encodeAll(t, oneSession(t, loadAll(t, st))); got != want {
		t.Errorf("content before its span in one trace:\n got: %s\nwant: %s", got, want)
	}
}

// TestLateContentJoins: content records that come after their call's
// span was written (a log exporter held back, past SpanWait) join the
// conversation, the tool's result and the answer as events, instead of
// being set aside in attrs; a call's content that comes once the
// conversation went on past it stays aside.
func TestLateContentJoins(t *testing.T) {
	logs, spans := oneTraceCalls(t)
	now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	st := recorder.Store{Root: t.TempDir()}
	opts := testOpts()
	opts.Clock = func() time.Time { return now }
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	step := func() {
		now = now.Add(3 * time.Second)
		if err := in.flush(false); err != nil {
			t.Fatal(err)
		}
	}
	in.Logs(context.Background(), logs[0])
	in.Traces(context.Background(), spans[0])
	step()
	in.Traces(context.Background(), spans[1]) // its content held back
	step()
	in.Logs(context.Background(), logs[1])
	step()
	evs := oneSession(t, loadAll(t, st))
	var answer, result bool
	for _, e := range evs {
		if e.Kind == session.KindAssistantMessage && strings.Contains(e.Text, "shipped with DHL") {
			answer = true
		}
		if e.Kind == session.KindToolResult && strings.Contains(e.Output, "A-1042") {
			result = true
		}
		if strings.Contains(string(e.Attrs), "late_log_record") {
			t.Errorf("content set aside in attrs: %s", e.Attrs)
		}
	}
	if !answer || !result {
		t.Errorf("late content not in the conversation (answer %v, tool result %v):\n%s", answer, result, encodeAll(t, evs))
	}
	// Call 1's content again, now that the conversation went on past
	// it: set aside, not a second copy of the conversation.
	in.mu.Lock()
	for tid := range in.seen {
		for k := range in.seen[tid] {
			if strings.HasPrefix(k, "log/") {
				delete(in.seen[tid], k)
			}
		}
	}
	in.mu.Unlock()
	in.Logs(context.Background(), logs[0])
	step()
	again := oneSession(t, loadAll(t, st))
	users := 0
	for _, e := range again {
		if e.Kind == session.KindUserMessage {
			users++
		}
	}
	if users != 1 || !strings.Contains(encodeAll(t, again[len(evs):]), "late_log_record") {
		t.Errorf("stale content: %d user messages, want 1 and the records kept in attrs:\n%s", users, encodeAll(t, again[len(evs):]))
	}
}

// TestAttributeOverRecord: with MaxAttrBytes raised past what one log
// record holds, a model call whose input is larger than a record is
// written with its text cut and a note (attrs cut_to_fit), not refused
// at write time after it was acknowledged; the trace after it lands too.
func TestAttributeOverRecord(t *testing.T) {
	exps := loadCapture(t, filepath.Join(captures, "vercel-genai", "http-json"))
	huge := strings.Repeat("x", recorder.MaxRecordSize+(2<<20))
	for _, rs := range exps[0].traces.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				for _, kv := range s.GetAttributes() {
					if kv.GetKey() == "gen_ai.input.messages" {
						kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Replace(kv.GetValue().GetStringValue(), "Where is my order", "Where is my order "+huge, 1)}}
					}
				}
			}
		}
	}
	st := recorder.Store{Root: t.TempDir()}
	opts := testOpts()
	opts.MaxAttrBytes = 64 << 20
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	feed(t, in, exps)
	if err := in.Close(); err != nil {
		t.Fatalf("write a trace with an attribute over the record limit: %v", err)
	}
	evs := oneSession(t, loadAll(t, st))
	cut := false
	for _, e := range evs {
		if strings.Contains(string(e.Attrs), `"cut_to_fit"`) && strings.Contains(e.Text, "…[cut by agentctl: ") {
			cut = true
		}
	}
	if !cut || len(evs) < 3 {
		t.Errorf("%d events, an event cut with its note: %v; want the session written with the long text cut and noted", len(evs), cut)
	}
}

// TestDamagedSpoolStarts: a spool file a killed run left, damaged in the
// middle, does not stop the start: what comes before the damage is
// written, the file is kept aside (and said), and the next start does not
// read it again.
func TestDamagedSpoolStarts(t *testing.T) {
	home := t.TempDir()
	opts := testOpts()
	opts.Settle = time.Hour
	in, err := NewIngester(recorder.Store{Root: home}, opts)
	if err != nil {
		t.Fatal(err)
	}
	exps := loadCapture(t, filepath.Join(captures, "otel-openai", "http-protobuf"))
	feed(t, in, exps)
	// A killed run: its spool copied as the crash left it, one byte of
	// the last frame but one flipped.
	home2 := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(home, SpoolDir, "*", spoolName))
	if len(files) != 1 {
		t.Fatalf("spool files %v, want one", files)
	}
	var offs []int64
	if err := readSpool(files[0], func(kind byte, off int64, payload []byte) error {
		offs = append(offs, off)
		return nil
	}); err != nil || len(offs) < 2 {
		t.Fatalf("frames at %v (%v), want two or more", offs, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b[offs[len(offs)-2]+frameHeader+3] ^= 0xff
	dir := filepath.Join(home2, SpoolDir, filepath.Base(filepath.Dir(files[0])))
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, spoolName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	var said []string
	opts2 := testOpts()
	opts2.Logf = func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	in2, err := NewIngester(recorder.Store{Root: home2}, opts2)
	if err != nil {
		t.Fatalf("start with a damaged spool: %v", err)
	}
	if err := in2.Close(); err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "damaged") || !strings.Contains(said[0], ".damaged") {
		t.Errorf("said %q, want one line naming the damage and where the file is kept", said)
	}
	if _, err := os.Stat(dir + ".damaged"); err != nil {
		t.Errorf("the damaged spool is not kept aside: %v", err)
	}
	if ids, _ := (recorder.Store{Root: home2}).IDs(); len(offs) > 2 && len(ids) == 0 {
		t.Errorf("nothing written of the frames before the damage")
	}
	said = nil
	in3, err := NewIngester(recorder.Store{Root: home2}, opts2)
	if err != nil {
		t.Fatal(err)
	}
	in3.Close()
	if len(said) != 0 {
		t.Errorf("the next start said %q: the file set aside was read again", said)
	}
	in.Close()
}

// traceIDs gives the trace ids of exps' spans in the order they first
// appear.
func traceIDs(exps []export) [][]byte {
	var ids [][]byte
	seen := map[string]bool{}
	for _, e := range exps {
		for _, rs := range e.traces.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					if !seen[string(s.GetTraceId())] {
						seen[string(s.GetTraceId())] = true
						ids = append(ids, s.GetTraceId())
					}
				}
			}
		}
	}
	return ids
}

// TestKeylessClientsKeptApart: two processes (the otel-openai app run
// twice, captured over HTTP/JSON and gRPC: different process.pid and
// service.instance.id) hold the same conversation, as two users asking
// the same first question do, with no session key; each model call is
// its own trace. Written interleaved (the first call of each, then the
// second of each), in both orders, each process's calls still join into
// one session, and that session is the one its capture alone gives: the
// content alone does not join traces of different processes.
func TestKeylessClientsKeptApart(t *testing.T) {
	a := loadCapture(t, filepath.Join(captures, "otel-openai", "http-json"))
	b := loadCapture(t, filepath.Join(captures, "otel-openai", "grpc"))
	_, wantA := ingestAll(t, a)
	_, wantB := ingestAll(t, b)
	want := []string{encodeAll(t, oneSession(t, wantA)), encodeAll(t, oneSession(t, wantB))}
	// byTraces splits a capture into its traces' parts, in trace order.
	byTraces := func(exps []export) [][]export {
		var parts [][]export
		for _, id := range traceIDs(exps) {
			var part []export
			for _, e := range exps {
				in, _ := byTrace(e, id)
				part = append(part, in)
			}
			parts = append(parts, part)
		}
		return parts
	}
	pa, pb := byTraces(a), byTraces(b)
	if len(pa) != 2 || len(pb) != 2 {
		t.Fatalf("traces %d and %d, want 2 each (one per model call)", len(pa), len(pb))
	}
	for _, order := range [][2][][]export{{pa, pb}, {pb, pa}} {
		st := recorder.Store{Root: t.TempDir()}
		in, err := NewIngester(st, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			for _, parts := range order {
				feed(t, in, parts[i])
				if err := in.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
		got := loadAll(t, st)
		if len(got) != 2 {
			t.Fatalf("%d sessions, want 2 (one per process)", len(got))
		}
		var have []string
		for _, evs := range got {
			have = append(have, encodeAll(t, evs))
		}
		for _, w := range want {
			if !slices.Contains(have, w) {
				t.Errorf("no session is the one its process's capture alone gives:\nwant: %s\nhave: %s", w, strings.Join(have, "\n---\n"))
			}
		}
	}
}
