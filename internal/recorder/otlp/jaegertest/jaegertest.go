// Package jaegertest runs a real OTLP receiver for tests and benchmarks:
// Jaeger all-in-one (built by .ci/run from tools/jaeger) on loopback
// ports, with in-memory storage, queried through its HTTP API.
//
// The binary is found through $AGENTCTL_JAEGER_BIN. A test calling Start
// is skipped when the variable is unset on a developer machine, and fails
// when it is unset in CI ($CI set), so CI always runs it. Build it once
// with:
//
//	cd tools/jaeger && go build -o /tmp/jaeger github.com/jaegertracing/jaeger/cmd/jaeger
//	export AGENTCTL_JAEGER_BIN=/tmp/jaeger
//
// Each Start runs its own Jaeger, so traces never leak between tests.
package jaegertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BinEnv names the variable holding the path of the Jaeger binary.
const BinEnv = "AGENTCTL_JAEGER_BIN"

// Jaeger is a running Jaeger all-in-one.
type Jaeger struct {
	// GRPC and HTTP are the OTLP receiver's host:port; Query is the query
	// service's HTTP host:port.
	GRPC, HTTP, Query string
	log               string
}

// Env returns the OTEL_* variables that point an exporter at j with the
// given protocol ("grpc" or "http/protobuf"). Jaeger takes no metrics, so
// they are switched off.
func (j *Jaeger) Env(protocol string) map[string]string {
	ep := "http://" + j.HTTP
	if protocol == "grpc" {
		ep = "http://" + j.GRPC
	}
	return map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": ep,
		"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
		"OTEL_METRICS_EXPORTER":       "none",
	}
}

const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: %s
    grpc:
      endpoint: %s
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// Start runs Jaeger for the rest of the test (or benchmark) and waits
// until it answers.
func Start(tb testing.TB) *Jaeger {
	tb.Helper()
	bin := os.Getenv(BinEnv)
	if bin == "" {
		if os.Getenv("CI") != "" {
			tb.Fatalf("$%s is not set: .ci/run builds Jaeger from tools/jaeger and sets it", BinEnv)
		}
		tb.Skipf("$%s is not set (see recorder/otlp/jaegertest); skipping the test against a real Jaeger", BinEnv)
	}
	var lastErr error
	for range 3 { // a port picked free may be taken before Jaeger binds it
		j, err := start(tb, bin)
		if err == nil {
			return j
		}
		lastErr = err
	}
	tb.Fatal(lastErr)
	return nil
}

func start(tb testing.TB, bin string) (*Jaeger, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	j := &Jaeger{Query: ports[0], GRPC: ports[2], HTTP: ports[3]}
	dir := tb.TempDir()
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, ports[0], ports[1], ports[2], ports[3]), 0o644); err != nil {
		return nil, err
	}
	j.log = filepath.Join(dir, "jaeger.log")
	logf, err := os.Create(j.log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", cfg)
	// Jaeger is an OpenTelemetry collector: keep the test's OTEL_*
	// variables (which point at Jaeger itself) away from its own telemetry.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("jaegertest: start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(j.log)
			return nil, fmt.Errorf("jaegertest: jaeger exited (%v): %s", err, tail(string(b)))
		default:
		}
		if j.ready() {
			tb.Cleanup(stop)
			return j, nil
		}
		if time.Now().After(deadline) {
			stop()
			b, _ := os.ReadFile(j.log)
			return nil, fmt.Errorf("jaegertest: jaeger not ready after 60s: %s", tail(string(b)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (j *Jaeger) ready() bool {
	for _, a := range []string{j.GRPC, j.HTTP} {
		c, err := net.DialTimeout("tcp", a, 100*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
	}
	resp, err := http.Get("http://" + j.Query + "/api/services")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func freePorts(n int) ([]string, error) {
	var out []string
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return strings.TrimSpace(s)
}

// Span is a span as Jaeger's HTTP API returns it, tags flattened.
type Span struct {
	TraceID, SpanID, Name string
	// Parent is the CHILD_OF reference, "" for a root.
	Parent   string
	Start    time.Time
	Duration time.Duration
	Tags     map[string]any
	Service  string
	// ProcessTags are the resource attributes other than service.name.
	ProcessTags map[string]any
	Warnings    []string
}

type apiTrace struct {
	Data []struct {
		Spans []struct {
			TraceID       string `json:"traceID"`
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			References    []struct {
				RefType string `json:"refType"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			StartTime int64 `json:"startTime"`
			Duration  int64 `json:"duration"`
			Tags      []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
			ProcessID string   `json:"processID"`
			Warnings  []string `json:"warnings"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
			Tags        []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
		} `json:"processes"`
	} `json:"data"`
}

// Trace returns the spans of trace id (32 hex digits), or none if Jaeger
// does not know it (yet).
func (j *Jaeger) Trace(ctx context.Context, id string) ([]Span, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+j.Query+"/api/traces/"+id, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jaegertest: GET /api/traces/%s: %s", id, resp.Status)
	}
	var t apiTrace
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return nil, fmt.Errorf("jaegertest: decode trace %s: %w", id, err)
	}
	var out []Span
	for _, d := range t.Data {
		for _, s := range d.Spans {
			sp := Span{TraceID: s.TraceID, SpanID: s.SpanID, Name: s.OperationName,
				Start: time.UnixMicro(s.StartTime), Duration: time.Duration(s.Duration) * time.Microsecond,
				Tags: map[string]any{}, Service: d.Processes[s.ProcessID].ServiceName, Warnings: s.Warnings}
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" {
					sp.Parent = r.SpanID
				}
			}
			for _, tg := range s.Tags {
				sp.Tags[tg.Key] = tg.Value
			}
			sp.ProcessTags = map[string]any{}
			for _, tg := range d.Processes[s.ProcessID].Tags {
				sp.ProcessTags[tg.Key] = tg.Value
			}
			out = append(out, sp)
		}
	}
	return out, nil
}

// WaitTrace polls until trace id has at least n spans and stays the same
// for a moment (so late duplicates would show), or the timeout passes.
func (j *Jaeger) WaitTrace(tb testing.TB, id string, n int) []Span {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last []Span
	stable := 0
	for {
		spans, err := j.Trace(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				tb.Fatal(err)
			}
			spans = last
		}
		if len(spans) >= n && len(spans) == len(last) {
			stable++
			if stable >= 3 {
				return spans
			}
		} else {
			stable = 0
		}
		last = spans
		if ctx.Err() != nil {
			b, _ := os.ReadFile(j.log)
			tb.Fatalf("trace %s: %d spans after 20s, want at least %d; jaeger log: %s", id, len(last), n, tail(string(b)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
