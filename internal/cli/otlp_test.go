package cli_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/recorder/otlp/jaegertest"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// agentctl runs the command tree in process and returns its exit code,
// stdout and stderr.
func agentctl(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	r := testcli.Run(t, home, args...)
	return r.Code, r.Stdout, r.Stderr
}

func setenv(t *testing.T, env map[string]string) {
	for k, v := range env {
		t.Setenv(k, v)
	}
}

func fixture(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "fixtures", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tree indexes spans by name and checks that every parent is in the trace.
func tree(t *testing.T, spans []jaegertest.Span) (byName map[string][]jaegertest.Span, byID map[string]jaegertest.Span) {
	t.Helper()
	byName, byID = map[string][]jaegertest.Span{}, map[string]jaegertest.Span{}
	for _, s := range spans {
		if _, dup := byID[s.SpanID]; dup {
			t.Errorf("span %s (%s) stored twice", s.SpanID, s.Name)
		}
		byID[s.SpanID] = s
		byName[s.Name] = append(byName[s.Name], s)
	}
	for _, s := range spans {
		if s.Parent != "" {
			if _, ok := byID[s.Parent]; !ok {
				t.Errorf("span %s (%s): parent %s not in the trace", s.SpanID, s.Name, s.Parent)
			}
		}
		if len(s.Warnings) > 0 && !outlivesParent(s, byID) {
			t.Errorf("span %s (%s): jaeger warnings %v", s.SpanID, s.Name, s.Warnings)
		}
	}
	return byName, byID
}

// outlivesParent reports an await_approval span that ends after the run
// that asked (which stopped to wait), with only Jaeger's clock-skew note
// as warning: Jaeger computes a skew for a child that does not fit in its
// parent, and says it does not apply it. OpenTelemetry allows a child to
// end after its parent; that is what a wait across runs is.
func outlivesParent(s jaegertest.Span, byID map[string]jaegertest.Span) bool {
	p, ok := byID[s.Parent]
	if !ok || !strings.HasPrefix(s.Name, "await_approval ") || !s.Start.Add(s.Duration).After(p.Start.Add(p.Duration)) {
		return false
	}
	for _, w := range s.Warnings {
		if !strings.HasPrefix(w, "clock skew adjustment disabled; not applying calculated delta") {
			return false
		}
	}
	return true
}

func tag(s jaegertest.Span, k string) string {
	v, ok := s.Tags[k]
	if !ok {
		return "<missing>"
	}
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// A fixture agent run with the OTLP variables pointing at a real Jaeger:
// the trace is there with the conventions' span tree, names and attributes.
func TestOTLPRunToJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			setenv(t, j.Env(proto))
			t.Setenv("OTEL_SERVICE_NAME", "agentctl-test")
			home := t.TempDir()
			sid := map[string]string{"grpc": "00000000000a1001", "http/protobuf": "00000000000a1002"}[proto]
			code, _, stderr := agentctl(t, home, "run", fixture(t, "agents/fix-typo.yaml"), "-q", "--session-id", sid)
			if code != 0 || stderr != "" {
				t.Fatalf("run exit %d, stderr %q", code, stderr)
			}
			spans := j.WaitTrace(t, otlp.TraceID(sid).String(), 6)
			byName, byID := tree(t, spans)
			roots := byName["invoke_agent fix-typo"]
			if len(roots) != 1 || roots[0].Parent != "" {
				t.Fatalf("invoke_agent spans = %d, want one root (names: %v)", len(roots), keysOf(byName))
			}
			root := roots[0]
			if root.Service != "agentctl-test" {
				t.Errorf("service = %q, want OTEL_SERVICE_NAME", root.Service)
			}
			for k, want := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "fix-typo",
				"gen_ai.conversation.id": sid, "gen_ai.provider.name": "scripted", "gen_ai.request.model": "scripted-1",
				"agentctl.session.status": "done", "span.kind": "internal"} {
				if got := tag(root, k); got != want {
					t.Errorf("invoke_agent %s = %q, want %q", k, got, want)
				}
			}
			chats := byName["chat scripted-1"]
			if len(chats) != 3 {
				t.Errorf("chat spans = %d, want 3", len(chats))
			}
			var in int
			for _, c := range chats {
				if c.Parent != root.SpanID {
					t.Errorf("chat %s parent = %s, want the invoke_agent span", c.SpanID, c.Parent)
				}
				for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted",
					"gen_ai.request.model": "scripted-1", "gen_ai.response.model": "scripted-1", "gen_ai.conversation.id": sid,
					"span.kind": "client"} {
					if got := tag(c, k); got != want {
						t.Errorf("chat %s = %q, want %q", k, got, want)
					}
				}
				if tag(c, "gen_ai.usage.output_tokens") == "<missing>" || tag(c, "gen_ai.response.finish_reasons") == "<missing>" {
					t.Errorf("chat without usage or finish reasons: %v", c.Tags)
				}
				n, _ := c.Tags["gen_ai.usage.input_tokens"].(float64)
				in += int(n)
			}
			if got := tag(root, "gen_ai.usage.input_tokens"); got != jsonInt(in) {
				t.Errorf("invoke_agent input tokens = %s, want the sum of its chats %d", got, in)
			}
			for _, tool := range []string{"read_file", "edit_file"} {
				ts := byName["execute_tool "+tool]
				if len(ts) != 1 {
					t.Errorf("execute_tool %s spans = %d, want 1", tool, len(ts))
					continue
				}
				s := ts[0]
				if s.Parent != root.SpanID || tag(s, "gen_ai.tool.name") != tool || tag(s, "gen_ai.operation.name") != "execute_tool" ||
					!strings.HasPrefix(tag(s, "gen_ai.tool.call.id"), "call_") && tag(s, "gen_ai.tool.call.id") == "<missing>" {
					t.Errorf("execute_tool %s = %+v", tool, s)
				}
			}
			if len(byID) != 6 {
				t.Errorf("spans = %d, want 6", len(byID))
			}
			// content is opt-in
			for _, s := range spans {
				for k := range s.Tags {
					if strings.Contains(k, "messages") || strings.Contains(k, "arguments") || strings.Contains(k, "result") {
						t.Errorf("%s carries %s without the opt-in", s.Name, k)
					}
				}
			}
		})
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

func keysOf(m map[string][]jaegertest.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// export otlp of a recorded fixture, twice, and trace --json posted as
// OTLP/JSON: one trace id, every span once, the recorded timestamps.
func TestOTLPExportTwice(t *testing.T) {
	j := jaegertest.Start(t)
	home := fixture(t, "home")
	const sid = "5e55100000000001"
	var want []string
	code, stdout, _ := agentctl(t, home, "trace", sid, "--json")
	if code != 0 {
		t.Fatalf("trace --json exit %d", code)
	}
	var req struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					SpanID            string `json:"spanId"`
					StartTimeUnixNano string `json:"startTimeUnixNano"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal([]byte(stdout), &req); err != nil {
		t.Fatalf("trace --json is not JSON: %v", err)
	}
	starts := map[string]string{}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				want = append(want, s.SpanID)
				starts[s.SpanID] = s.StartTimeUnixNano
			}
		}
	}
	for i, proto := range []string{"http/protobuf", "grpc"} {
		setenv(t, j.Env(proto))
		code, out, stderr := agentctl(t, home, "export", "otlp", sid, "--json")
		if code != 0 {
			t.Fatalf("export %d: exit %d: %s", i+1, code, stderr)
		}
		var res struct {
			TraceID string `json:"trace_id"`
			Spans   int    `json:"spans"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.TraceID != otlp.TraceID(sid).String() || res.Spans != len(want) {
			t.Errorf("export %d printed %q, want trace %s with %d spans", i+1, out, otlp.TraceID(sid), len(want))
		}
	}
	// The OTLP/JSON body is accepted by the collector as is.
	resp, err := http.Post("http://"+j.HTTP+"/v1/traces", "application/json", strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST trace --json to /v1/traces: %s", resp.Status)
	}
	spans := j.WaitTrace(t, otlp.TraceID(sid).String(), len(want))
	_, byID := tree(t, spans)
	if len(spans) != len(want) {
		t.Errorf("jaeger holds %d spans after two exports and a JSON post, want %d (no duplicates)", len(spans), len(want))
	}
	for _, id := range want {
		s, ok := byID[id]
		if !ok {
			t.Errorf("span %s missing", id)
			continue
		}
		// Jaeger keeps microseconds.
		if got := jsonInt(int(s.Start.UnixMicro())); got+"000" != starts[id] && !strings.HasPrefix(starts[id], got) {
			t.Errorf("span %s starts at %s µs, recorded %s ns", id, got, starts[id])
		}
	}
}

// A run that waits for approval, is approved, and resumed: two runs in one
// trace, the approval wait between them, and a later export adds nothing.
func TestOTLPApprovalResume(t *testing.T) {
	j := jaegertest.Start(t)
	setenv(t, j.Env("http/protobuf"))
	home := t.TempDir()
	const sid = "00000000000a2001"
	code, _, stderr := agentctl(t, home, "run", fixture(t, "agents/run-migration.yaml"), "-q", "--session-id", sid)
	if code != cli.ExitAwaitingApproval {
		t.Fatalf("run exit %d, want %d: %s", code, cli.ExitAwaitingApproval, stderr)
	}
	if code, _, stderr = agentctl(t, home, "approve", sid); code != 0 {
		t.Fatalf("approve exit %d: %s", code, stderr)
	}
	for code == 0 || code == cli.ExitAwaitingApproval {
		// run-migration may ask again for the next gated call.
		if code, _, stderr = agentctl(t, home, "resume", sid, "-q"); code == cli.ExitAwaitingApproval {
			if c, _, e := agentctl(t, home, "approve", sid); c != 0 {
				t.Fatalf("approve exit %d: %s", c, e)
			}
			continue
		}
		break
	}
	if code != 0 || stderr != "" {
		t.Fatalf("resume exit %d, stderr %q", code, stderr)
	}
	_, out, _ := agentctl(t, home, "trace", sid, "--json")
	n := strings.Count(out, `"startTimeUnixNano"`)
	spans := j.WaitTrace(t, otlp.TraceID(sid).String(), n)
	byName, byID := tree(t, spans)
	if len(byName["invoke_agent run-migration"]) < 2 {
		t.Errorf("invoke_agent spans = %d, want one per run (>= 2); names %v", len(byName["invoke_agent run-migration"]), keysOf(byName))
	}
	waits := 0
	for name, ss := range byName {
		if strings.HasPrefix(name, "await_approval ") {
			for _, s := range ss {
				waits++
				if tag(s, "agentctl.approval.outcome") != "granted" {
					t.Errorf("%s outcome = %s", name, tag(s, "agentctl.approval.outcome"))
				}
				if p, ok := byID[s.Parent]; !ok || p.Name != "invoke_agent run-migration" {
					t.Errorf("%s parent = %q (%s), want the run that asked", name, s.Parent, p.Name)
				}
			}
		}
	}
	if waits == 0 {
		t.Errorf("no await_approval span; names %v", keysOf(byName))
	}
	if len(spans) != n {
		t.Errorf("live export sent %d spans, trace --json builds %d", len(spans), n)
	}
	if code, _, stderr := agentctl(t, home, "export", "otlp", sid); code != 0 {
		t.Fatalf("export exit %d: %s", code, stderr)
	}
	spans = j.WaitTrace(t, otlp.TraceID(sid).String(), n)
	if len(spans) != len(byID) {
		t.Errorf("after re-export: %d spans, want %d (the live ones, deduplicated)", len(spans), len(byID))
	}
}

// With the collector down the run takes as long as without export, and
// says in one line what it dropped.
func TestOTLPCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	spec := fixture(t, "agents/fix-typo.yaml")

	timed := func(id string) (time.Duration, int, string) {
		began := time.Now()
		code, _, stderr := agentctl(t, t.TempDir(), "run", spec, "-q", "--session-id", id)
		return time.Since(began), code, stderr
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if os.Getenv(k) != "" {
			t.Setenv(k, "")
		}
	}
	base, code, stderr := timed("00000000000a3001")
	if code != 0 || stderr != "" {
		t.Fatalf("run without export: exit %d, stderr %q", code, stderr)
	}
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+down)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			d, code, stderr := timed("00000000000a3002")
			if code != 0 {
				t.Fatalf("run with the collector down: exit %d: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "warning: otlp: 6 of 6 spans dropped, metrics not delivered") ||
				!strings.Contains(lines[0], "agentctl export otlp 00000000000a3002") {
				t.Errorf("stderr = %q, want one warning line with the drop count", stderr)
			}
			if d > base+time.Second {
				t.Errorf("run took %s with the collector down, %s without export", d, base)
			}
			t.Logf("run: %s without export, %s with the collector down", base, d)
		})
	}
}
