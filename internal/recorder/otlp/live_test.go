package otlp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/agentctl/agentctl/internal/session"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func testConfig(t *testing.T, env map[string]string) Config {
	t.Helper()
	cfg, err := ConfigFromEnv(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type spanKey struct {
	name, id, parent string
	start, end       int64
	attrs            int
}

func keys(spans tracetest.SpanStubs) []spanKey {
	var out []spanKey
	for _, s := range spans {
		out = append(out, spanKey{s.Name, s.SpanContext.SpanID().String(), s.Parent.SpanID().String(),
			s.StartTime.UnixNano(), s.EndTime.UnixNano(), len(s.Attributes)})
	}
	slices.SortFunc(out, func(a, b spanKey) int { return strings.Compare(a.id, b.id) })
	return out
}

// The live exporter, across a run, an approval between runs and a resume,
// sends exactly the spans an export of the finished log sends.
func TestLiveMatchesExport(t *testing.T) {
	cfg := testConfig(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"})
	evs := twoRuns()
	mem := keepExporter{tracetest.NewInMemoryExporter()}

	run1, err := newLive(cfg, mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs[:10] { // through session_finished awaiting_approval
		run1.Event(e)
	}
	if r := run1.Shutdown(context.Background()); r.Dropped != 0 || r.Spans != 4 || r.Warning() != "" {
		t.Errorf("run 1 report = %+v, want 4 spans (the approval wait is still open), none dropped", r)
	}
	run2, err := newLive(cfg, mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	run2.Resume(evs[0].SessionID, evs[:11]) // the grant was written by approve
	for _, e := range evs[11:] {
		run2.Event(e)
	}
	if r := run2.Shutdown(context.Background()); r.Dropped != 0 {
		t.Errorf("run 2 report = %+v", r)
	}
	var live tracetest.SpanStubs
	for _, s := range mem.GetSpans() {
		live = append(live, s)
	}
	got, want := keys(live), keys(cfg.SessionSpans(evs[0].SessionID, evs))
	if !slices.Equal(got, want) {
		t.Errorf("live spans differ from the export:\n got %v\nwant %v", got, want)
	}
}

func TestLiveMetrics(t *testing.T) {
	cfg := testConfig(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SERVICE_NAME": "ci-agents"})
	reader := sdkmetric.NewManualReader()
	l, err := newLive(cfg, nil, reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range twoRuns() {
		l.Event(e)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if v, _ := rm.Resource.Set().Value(semconv.ServiceNameKey); v.AsString() != "ci-agents" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME", v.AsString())
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = true
			switch m.Name {
			case "gen_ai.client.token.usage":
				h := m.Data.(metricdata.Histogram[int64])
				if m.Unit != "{token}" || !slices.Equal(h.DataPoints[0].Bounds, TokenBuckets) {
					t.Errorf("%s: unit %q bounds %v", m.Name, m.Unit, h.DataPoints[0].Bounds)
				}
				var in, out int64
				for _, dp := range h.DataPoints {
					tt, _ := dp.Attributes.Value(semconv.GenAITokenTypeKey)
					if op, _ := dp.Attributes.Value(semconv.GenAIOperationNameKey); op.AsString() != "chat" {
						t.Errorf("token usage without gen_ai.operation.name=chat: %v", dp.Attributes)
					}
					switch tt.AsString() {
					case "input":
						in += dp.Sum
					case "output":
						out += dp.Sum
					}
				}
				// the failed call recorded no usage
				if in != 340 || out != 60 {
					t.Errorf("token sums = %d in, %d out; want 340, 60", in, out)
				}
			case "gen_ai.client.operation.duration":
				h := m.Data.(metricdata.Histogram[float64])
				if m.Unit != "s" || !slices.Equal(h.DataPoints[0].Bounds, DurationBuckets) {
					t.Errorf("%s: unit %q bounds %v", m.Name, m.Unit, h.DataPoints[0].Bounds)
				}
				var n uint64
				errs := 0
				for _, dp := range h.DataPoints {
					n += dp.Count
					if et, ok := dp.Attributes.Value(semconv.ErrorTypeKey); ok && et.AsString() == "server_error" {
						errs++
					}
				}
				if n != 4 || errs != 1 {
					t.Errorf("durations: %d points (want 4), %d with error.type server_error (want 1)", n, errs)
				}
			}
		}
	}
	if !found["gen_ai.client.token.usage"] || !found["gen_ai.client.operation.duration"] {
		t.Errorf("metrics = %v", found)
	}
	_ = l.Shutdown(context.Background())
}

// manyEvents is a run of n turns, each a model call and a tool call.
func manyEvents(n int) []session.Event {
	evs := []session.Event{{Kind: session.KindSessionStarted, SessionID: "b0b0b0b0b0b0b0b0", Name: "bench", Provider: "scripted", Model: "m"}}
	for i := 0; i < n; i++ {
		evs = append(evs,
			session.Event{Kind: session.KindModelCall, Provider: "scripted", Model: "m", LatencyMS: 1, InputTokens: 10, OutputTokens: 5},
			session.Event{Kind: session.KindToolIntent, CallID: "c", Tool: "read_file"},
			session.Event{Kind: session.KindToolResult, CallID: "c", Tool: "read_file", Status: "ok"})
	}
	evs = append(evs, session.Event{Kind: session.KindSessionFinished, Status: "done"})
	for i := range evs {
		evs[i].Seq = int64(i + 1)
		evs[i].TS = t0.Add(time.Duration(i) * time.Millisecond)
	}
	return evs
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A collector that is down costs the run nothing but the warning.
func TestLiveCollectorDown(t *testing.T) {
	for _, proto := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(proto, func(t *testing.T) {
			cfg := testConfig(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + closedPort(t),
				"OTEL_EXPORTER_OTLP_PROTOCOL": proto})
			l, err := NewLive(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			evs := manyEvents(3000) // 6001 spans: more than the queue holds
			began := time.Now()
			for _, e := range evs {
				l.Event(e)
			}
			// An event costs a durable append (an fsync, milliseconds);
			// handing its span over must stay far below that even while the
			// exporter fails in the background on the same cores.
			if d := time.Since(began); d/time.Duration(len(evs)) > time.Millisecond {
				t.Errorf("%d events took %s to hand over with the collector down", len(evs), d)
			}
			began = time.Now()
			r := l.Shutdown(context.Background())
			if d := time.Since(began); d > FlushTimeout+time.Second {
				t.Errorf("shutdown took %s, want at most about %s", d, FlushTimeout)
			}
			if r.Spans != 6001 || r.Dropped != 6001 || r.MetricsErr == nil {
				t.Errorf("report = %+v, want 6001 of 6001 spans dropped and metrics not delivered", r)
			}
			w := r.Warning()
			if !strings.Contains(w, "6001 of 6001 spans dropped") || !strings.Contains(w, "agentctl export otlp b0b0b0b0b0b0b0b0") || strings.Contains(w, "\n") {
				t.Errorf("warning = %q", w)
			}
		})
	}
}

// A collector that accepts connections and never answers: the flush at the
// end is cut at FlushTimeout.
func TestLiveCollectorSlow(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	cfg := testConfig(t, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/v1/traces"})
	l, err := NewLive(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range manyEvents(100) {
		l.Event(e)
	}
	began := time.Now()
	r := l.Shutdown(context.Background())
	if d := time.Since(began); d > FlushTimeout+time.Second {
		t.Errorf("shutdown took %s with a hung collector, want about %s", d, FlushTimeout)
	}
	if r.Dropped != 201 || r.Warning() == "" {
		t.Errorf("report = %+v, want all 201 spans dropped", r)
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env             map[string]string
		traces, metrics bool
		proto           string
		content         bool
		err             string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318"}, traces: true, metrics: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h:4318/v1/traces"}, traces: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_METRICS_EXPORTER": "none"}, traces: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, traces: true, metrics: true, proto: "grpc"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", CaptureContentEnv: "true"}, traces: true, metrics: true, content: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: "http/json"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, err: "TIMEOUT"},
	} {
		c, err := ConfigFromEnv(envOf(tc.env))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ConfigFromEnv(%v) error = %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || c.Traces != tc.traces || c.Metrics != tc.metrics || c.TracesProtocol != tc.proto || c.CaptureContent != tc.content {
			t.Errorf("ConfigFromEnv(%v) = %+v, %v", tc.env, c, err)
		}
	}
}

func TestResourceFromEnv(t *testing.T) {
	cfg := testConfig(t, map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,team=a%20b", "OTEL_SERVICE_NAME": "bots"})
	set := cfg.Resource().Set()
	for k, want := range map[string]string{"service.name": "bots", "deployment.environment": "ci", "team": "a b"} {
		if v, _ := set.Value(attributeKey(k)); v.AsString() != want {
			t.Errorf("resource %s = %q, want %q", k, v.AsString(), want)
		}
	}
}

func attributeKey(k string) attribute.Key { return attribute.Key(k) }

// keepExporter keeps its spans across Shutdown, so two runs can share it.
type keepExporter struct{ *tracetest.InMemoryExporter }

func (keepExporter) Shutdown(context.Context) error { return nil }
