package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/recorder"
)

// dbTrace is an ordinary instrumented request: one trace of n database
// spans, each with a db.statement of stmt bytes.
func dbTrace(seed byte, n, stmt int) tracetest.SpanStubs {
	var tid trace.TraceID
	for i := range tid {
		tid[i] = seed
	}
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	out := make(tracetest.SpanStubs, n)
	for i := range n {
		var sid trace.SpanID
		sid[0], sid[6], sid[7] = seed, byte(i>>8), byte(i)
		q := fmt.Sprintf("SELECT * FROM orders WHERE id = %d AND note = '%s'", i, strings.Repeat("x", stmt))
		out[i] = tracetest.SpanStub{
			Name:        "SELECT orders",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
			StartTime:   start.Add(time.Duration(i) * time.Millisecond), EndTime: start.Add(time.Duration(i+1) * time.Millisecond),
			Attributes:           []attribute.KeyValue{attribute.String("db.system", "postgresql"), attribute.String("db.statement", q[:min(len(q), stmt)])},
			Resource:             resource.NewSchemaless(attribute.String("service.name", "orders-api")),
			InstrumentationScope: instrumentation.Scope{Name: "pg"},
		}
	}
	return out
}

// spanIDsIn collects every "trace_id/span_id" the events of the home's
// sessions name (in attrs, and in attrs.otel_spans).
func spanIDsIn(t *testing.T, st recorder.Store, skip ...string) map[string]int {
	t.Helper()
	ids, err := st.IDs()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if tid, ok := x["trace_id"].(string); ok {
				if sid, ok := x["span_id"].(string); ok {
					got[tid+"/"+sid]++
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, id := range ids {
		if slices.Contains(skip, id) {
			continue
		}
		evs, _, err := st.Load(id)
		if err != nil {
			t.Fatalf("session %s: %v", id, err)
		}
		for _, e := range evs {
			var a any
			if len(e.Attrs) > 0 && json.Unmarshal(e.Attrs, &a) == nil {
				walk(a)
			}
		}
	}
	return got
}

// TestOversizedTrace: a trace whose spans, mapped, weigh more than one
// log record may hold (3,000 database spans of 6 KB statements, sent by
// the SDK's own exporter through the HTTP receiver) lands whole: every
// span is in the session, a home whose spool holds it starts and writes
// it, and the exports after it land too.
func TestOversizedTrace(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	in, err := otelsession.NewIngester(st, otelsession.Options{Source: "collect", NoBackground: true, Settle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	srv := newServer(t, Config{Sink: in})
	httpAddr, _ := start(t, srv)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpoint(httpAddr), otlptracehttp.WithInsecure(), otlptracehttp.WithRetry(fastRetry.http))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	big := dbTrace(21, 3000, 6<<10)
	if err := exp.ExportSpans(context.Background(), big.Snapshots()); err != nil {
		t.Fatalf("export of the large trace: %v", err)
	}

	// A collector killed now leaves the trace in its spool: a home that
	// holds that spool starts, and writes it.
	home2 := t.TempDir()
	copyTree(t, filepath.Join(home, otelsession.SpoolDir), filepath.Join(home2, otelsession.SpoolDir))
	st2 := recorder.Store{Root: home2}
	in2, err := otelsession.NewIngester(st2, otelsession.Options{Source: "collect", NoBackground: true})
	if err != nil {
		t.Fatalf("start on a home whose spool holds the large trace: %v", err)
	}
	if err := in2.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	checkAll(t, "recovered", st2, big)

	if err := in.Flush(); err != nil {
		t.Fatalf("write the large trace: %v", err)
	}
	checkAll(t, "collected", st, big)
	next := stubs(22, 5)
	if err := exp.ExportSpans(context.Background(), next.Snapshots()); err != nil {
		t.Fatalf("export after the large trace: %v", err)
	}
	if err := in.Flush(); err != nil {
		t.Fatalf("write the next trace: %v", err)
	}
	checkAll(t, "next", st, next)
}

// checkAll says whether every span of ss is in the home's sessions, once.
func checkAll(t *testing.T, when string, st recorder.Store, ss tracetest.SpanStubs, skip ...string) {
	t.Helper()
	got := spanIDsIn(t, st, skip...)
	missing := 0
	for _, s := range ss {
		if got[key(s)] != 1 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d spans not in a session exactly once", when, missing, len(ss))
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
