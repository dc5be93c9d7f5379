package oteltest_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

var update = flag.Bool("update", false, "rewrite testdata/otel/ with fresh captures of every emitter")

// answer is the final text of the conversation fixtures/otel/model.yaml
// scripts; every app prints it.
const answer = "Your order A-1042 shipped with DHL on 2026-11-28."

// capturesDir is where the real captures live (the mapping's tests read
// them).
func capturesDir() string { return filepath.Join(testenv.Root(), "testdata", "otel") }

// TestCaptures runs every emitter app once per OTLP protocol against the
// scripted model (agentctl proxy) and the capturing receiver, and checks
// what arrived: the app answered, the model server saw two calls, the
// exports decode, carry spans (and, for the log-based convention, log
// records), and name the conversation's content. With -update it writes
// them to testdata/otel/<emitter>/<protocol>/ with what the model server
// recorded (model-server.jsonl, `agentctl show --json`), and the README.
func TestCaptures(t *testing.T) {
	dir := oteltest.PrepareApps(t)
	rcv := oteltest.StartReceiver(t)
	home := t.TempDir()
	if *update {
		for _, e := range oteltest.Emitters {
			if err := os.RemoveAll(filepath.Join(capturesDir(), e.Name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, e := range oteltest.Emitters {
		for _, c := range captureRuns() {
			t.Run(e.Name+"/"+c.dir, func(t *testing.T) {
				rcv.Reset()
				for _, kv := range append(oteltest.ExportEnv(rcv.Endpoint(c.protocol), c.protocol), c.env...) {
					k, v, _ := strings.Cut(kv, "=")
					t.Setenv(k, v)
				}
				sid := fmt.Sprintf("%s-%s", e.Name, c.dir)
				args := append([]string{"proxy", "--script", oteltest.ModelScript(), "--json", "--session", sid, "--"}, oteltest.Command(dir, e)...)
				r := testcli.RunContext(context.Background(), t, home, args...)
				if r.Code != 0 {
					t.Fatalf("agentctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
				}
				if strings.TrimSpace(r.Stdout) != answer {
					t.Errorf("the app answered %q, want %q", r.Stdout, answer)
				}
				show := testcli.Must(t, home, "show", "--json", sid).Stdout
				if n := strings.Count(show, `"kind":"model_call"`); n != 2 {
					t.Errorf("the model server saw %d calls, want 2:\n%s", n, show)
				}
				reqs := waitExports(t, rcv, e, c.content)
				checkExports(t, e, reqs, c.content)
				if *update {
					writeCapture(t, filepath.Join(capturesDir(), e.Name, c.dir), reqs, show)
				}
			})
		}
	}
	if *update {
		writeReadme(t)
	}
}

// captureRun is one run of an app: over which protocol, with what more
// in its environment, into which folder.
type captureRun struct {
	dir      string
	protocol oteltest.Protocol
	env      []string
	content  bool // message content is captured
}

// captureRuns: each protocol, then two variants over HTTP protobuf:
// streamed model calls, and content capture off.
func captureRuns() []captureRun {
	var runs []captureRun
	for _, p := range oteltest.Protocols {
		runs = append(runs, captureRun{dir: p.Dir(), protocol: p, content: true})
	}
	return append(runs,
		captureRun{dir: "stream", protocol: oteltest.HTTPProtobuf, env: []string{"AGENT_STREAM=1"}, content: true},
		captureRun{dir: "no-content", protocol: oteltest.HTTPProtobuf, env: []string{"AGENT_CAPTURE_CONTENT=0"}},
	)
}

// waitExports waits (briefly: the apps flush before they exit) until the
// receiver has the traces, and the logs where the emitter sends any.
func waitExports(t *testing.T, rcv *oteltest.Receiver, e oteltest.Emitter, content bool) []oteltest.Request {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		reqs := rcv.Requests()
		var tr, lg bool
		for _, q := range reqs {
			tr = tr || q.Signal == oteltest.Traces
			lg = lg || q.Signal == oteltest.Logs
		}
		if tr && (lg || !wantsLogs(e) || !content) || time.Now().After(deadline) {
			return reqs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wantsLogs: the OpenTelemetry instrumentation writes content as log
// records; the others put it on spans.
func wantsLogs(e oteltest.Emitter) bool { return e.Name == "otel-openai" }

// checkExports decodes each export and checks the conversation is in it.
func checkExports(t *testing.T, e oteltest.Emitter, reqs []oteltest.Request, content bool) {
	t.Helper()
	var spans, records int
	var text strings.Builder
	for i, q := range reqs {
		body, err := q.Decoded()
		if err != nil {
			t.Fatalf("export %d (%s): %v", i, q.Signal, err)
		}
		text.Write(body)
		if q.IsJSON() {
			if !json.Valid(body) {
				t.Fatalf("export %d (%s) is not JSON: %.200s", i, q.Signal, body)
			}
			var m map[string][]json.RawMessage
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("export %d (%s): %v", i, q.Signal, err)
			}
			spans += strings.Count(string(body), `"spanId"`) * boolInt(q.Signal == oteltest.Traces)
			records += len(m["resourceLogs"])
			continue
		}
		switch q.Signal {
		case oteltest.Traces:
			var m coltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				t.Fatalf("export %d: traces: %v", i, err)
			}
			for _, rs := range m.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					spans += len(ss.Spans)
				}
			}
		case oteltest.Logs:
			var m collogs.ExportLogsServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				t.Fatalf("export %d: logs: %v", i, err)
			}
			for _, rl := range m.ResourceLogs {
				for _, sl := range rl.ScopeLogs {
					records += len(sl.LogRecords)
				}
			}
		}
	}
	if spans < 2 {
		t.Errorf("%d spans exported, want at least the 2 model calls", spans)
	}
	if !content {
		for _, s := range []string{"Where is my order A-1042?", "shipped with DHL", "support agent of a small web shop"} {
			if strings.Contains(text.String(), s) {
				t.Errorf("content capture is off, yet an export has %q", s)
			}
		}
		return
	}
	if wantsLogs(e) && records == 0 {
		t.Errorf("no log records exported, want the conversation's content")
	}
	for _, s := range []string{"Where is my order A-1042?", "lookup_order", "shipped with DHL"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("no export names %q (content not captured?)", s)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeCapture writes one run's exports as NNN-<signal>.pb|.json (the
// body as sent, gzip removed) and the model server's record.
func writeCapture(t *testing.T, dir string, reqs []oteltest.Request, show string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, q := range reqs {
		body, err := q.Decoded()
		if err != nil {
			t.Fatal(err)
		}
		ext := ".pb"
		if q.IsJSON() {
			ext = ".json"
		}
		name := fmt.Sprintf("%03d-%s%s", i+1, q.Signal, ext)
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "model-server.jsonl"), []byte(show), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeReadme writes testdata/otel/README.md: what each capture is, the
// package versions, the date and the command.
func writeReadme(t *testing.T) {
	t.Helper()
	node, _ := exec.Command("node", "--version").Output()
	var b strings.Builder
	fmt.Fprintf(&b, `# Real OTLP captures of real emitters

Written by `+"`go test ./internal/otelsession/oteltest -run TestCaptures -update -count=1`"+`
(with %s set, see .ci/run) on %s, node %s.

Each app of fixtures/otel runs the same conversation (fixtures/otel/model.yaml:
a system prompt, the user's "Where is my order A-1042?", a lookup_order tool
call, its result, the answer %q) against agentctl's scripted model behind
`+"`agentctl proxy`"+`, exporting traces and logs with the OpenTelemetry JS SDK
(NodeSDK, its OTLP exporters, batch processors) to a capturing receiver
(internal/otelsession/oteltest), once per protocol:

- `+"`<emitter>/http-protobuf/NNN-traces.pb`, `NNN-logs.pb`"+`: HTTP request bodies as sent
  (application/x-protobuf), numbered in arrival order;
- `+"`<emitter>/http-json/NNN-*.json`"+`: HTTP OTLP JSON bodies as sent (application/json;
  `+"`jq . FILE`"+` to read one);
- `+"`<emitter>/grpc/NNN-*.pb`"+`: the gRPC Export messages, protobuf-encoded;
- `+"`<emitter>/stream/`"+`: over HTTP protobuf, the model calls streamed (AGENT_STREAM=1);
- `+"`<emitter>/no-content/`"+`: over HTTP protobuf, content capture off
  (AGENT_CAPTURE_CONTENT=0: each app turns its instrumentation's own switch off);
- `+"`<emitter>/<run>/model-server.jsonl`"+`: what the model server saw and
  answered in that run (`+"`agentctl show --json`"+` of the proxy's session): the
  truth a mapped session is checked against.

Trace ids, timestamps, the process id and the host differ per run.

| emitter | what it writes | packages |
| --- | --- | --- |
`, oteltest.NPMEnv, time.Now().UTC().Format("2006-01-02"), strings.TrimSpace(string(node)), answer)
	for _, e := range oteltest.Emitters {
		v, err := oteltest.Versions(e.Packages)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "| %s (fixtures/otel/%s) | %s | %s |\n", e.Name, e.Script, e.Convention, strings.Join(v, ", "))
	}
	v, err := oteltest.Versions([]string{"@opentelemetry/sdk-node", "@opentelemetry/exporter-trace-otlp-proto", "@opentelemetry/exporter-trace-otlp-http", "@opentelemetry/exporter-trace-otlp-grpc", "@opentelemetry/exporter-logs-otlp-proto", "@opentelemetry/exporter-logs-otlp-http", "@opentelemetry/exporter-logs-otlp-grpc", "@opentelemetry/api"})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(v)
	fmt.Fprintf(&b, "\nThe SDK and exporters: %s.\n", strings.Join(v, ", "))
	fmt.Fprint(&b, langChainReadme(t))
	if err := os.WriteFile(filepath.Join(capturesDir(), "README.md"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLangChainCapture runs the LangChain app (oteltest.LangChain) once,
// over HTTP/JSON, against the two-orders model and the capturing
// receiver, and checks what arrived: the app answered, the model server
// saw two calls, the exports name both orders. With -update it writes
// testdata/otel/langchain/http-json/ (the mapping's test reads it).
func TestLangChainCapture(t *testing.T) {
	dir := oteltest.PrepareApps(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "langchain", "package.json")); err != nil {
		t.Fatalf("%s has no langchain (install fixtures/otel/npm's lock there): %v", oteltest.NPMEnv, err)
	}
	rcv := oteltest.StartReceiver(t)
	home := t.TempDir()
	for _, kv := range append(oteltest.ExportEnv(rcv.Endpoint(oteltest.HTTPJSON), oteltest.HTTPJSON), "AGENT_TASK="+oteltest.TwoOrdersTask) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	args := append([]string{"proxy", "--script", oteltest.TwoOrdersScript(), "--json", "--session", "langchain", "--"}, oteltest.Command(dir, oteltest.LangChain)...)
	r := testcli.RunContext(context.Background(), t, home, args...)
	if r.Code != 0 {
		t.Fatalf("agentctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	const twoAnswer = "A-1042 shipped with DHL on 2026-11-28; A-1043 is still being packed."
	if strings.TrimSpace(r.Stdout) != twoAnswer {
		t.Errorf("the app answered %q, want %q", r.Stdout, twoAnswer)
	}
	show := testcli.Must(t, home, "show", "--json", "langchain").Stdout
	if n := strings.Count(show, `"kind":"model_call"`); n != 2 {
		t.Errorf("the model server saw %d calls, want 2:\n%s", n, show)
	}
	deadline := time.Now().Add(10 * time.Second)
	var reqs []oteltest.Request
	for {
		reqs = rcv.Requests()
		var text strings.Builder
		for _, q := range reqs {
			b, err := q.Decoded()
			if err != nil {
				t.Fatal(err)
			}
			text.Write(b)
		}
		if strings.Contains(text.String(), "A-1043") && strings.Contains(text.String(), "still being packed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exports never named both orders and the answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if *update {
		out := filepath.Join(capturesDir(), oteltest.LangChain.Name, oteltest.HTTPJSON.Dir())
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
		writeCapture(t, out, reqs, show)
		readme := filepath.Join(capturesDir(), "README.md")
		b, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(string(b), "\n"+oteltest.LangChain.Name+"/")
		if err := os.WriteFile(readme, []byte(strings.TrimRight(head, "\n")+"\n"+langChainReadme(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// langChainReadme is testdata/otel/README.md's paragraph on the LangChain
// capture (TestLangChainCapture).
func langChainReadme(t *testing.T) string {
	t.Helper()
	v, err := oteltest.Versions(oteltest.LangChain.Packages)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
%s/http-json (fixtures/otel/%s, written by `+"`go test ./internal/otelsession/oteltest -run TestLangChainCapture -update -count=1`"+`):
%s, with %s. It runs fixtures/otel/model-two-orders.yaml (two
lookup_order calls in one answer) for the task %q, once, over HTTP/JSON.
`, oteltest.LangChain.Name, oteltest.LangChain.Script, oteltest.LangChain.Convention, strings.Join(v, ", "), oteltest.TwoOrdersTask)
}
