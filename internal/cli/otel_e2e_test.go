package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
	"github.com/agentctl/agentctl/internal/session"
)

// TestOTelEmittersEndToEnd is issue 30's end-to-end test with real
// emitters: each app of fixtures/otel (the OpenTelemetry, OpenInference
// and OpenLLMetry OpenAI instrumentations, Vercel's AI SDK with
// @ai-sdk/otel in its GenAI and legacy modes) runs its tool-using agent
// against the scripted model behind `agentctl proxy` (the fake model
// server, which records what it saw), exporting over HTTP protobuf, HTTP
// JSON and gRPC to a real `agentctl collect`. The one session collect
// wrote must hold the conversation the model server saw: the system
// prompt and task, each call's tokens, finish reason and tool calls, the
// tool's result, the final text (`show --json`, and `query` for the
// calls). Then the same app runs again against `agentctl proxy --replay`
// of the collected session, the model server gone, and must finish with
// the same answer and no divergence.
//
// Needs the emitters .ci/run installs (AGENTCTL_NPM_OTEL; unset: skipped).
func TestOTelEmittersEndToEnd(t *testing.T) {
	t.Parallel() // long, and self-contained: it overlaps the scripts' tail
	dir := oteltest.PrepareApps(t)
	for _, e := range oteltest.Emitters {
		for _, p := range oteltest.Protocols {
			t.Run(e.Name+"/"+p.Dir(), func(t *testing.T) {
				collectedFromRealApp(t, dir, e, p)
			})
		}
		// Streamed model calls: the instrumentations assemble the
		// answer from the chunks, and the replay serves it as a stream.
		t.Run(e.Name+"/stream", func(t *testing.T) {
			collectedFromRealApp(t, dir, e, oteltest.HTTPProtobuf, "AGENT_STREAM=1")
		})
	}
}

func collectedFromRealApp(t *testing.T, dir string, e oteltest.Emitter, p oteltest.Protocol, appEnv ...string) {
	chome, mhome := t.TempDir(), t.TempDir()
	c := startCollector(t, chome)
	endpoint := c.http
	if p == oteltest.GRPC {
		endpoint = "http://" + c.grpc
	}

	// The app against the fake model server, exporting to collect.
	out, stderr, err := runUnderProxy(t, mhome, []string{"--script", oteltest.ModelScript(), "--session", "truth"}, dir, e, append(oteltest.ExportEnv(endpoint, p), appEnv...)...)
	if err != nil {
		t.Fatalf("the app under the scripted model: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	answer := strings.TrimSpace(out)
	sum := c.stop(t)
	st, _ := sum["stats"].(map[string]any)
	if st["rejected_spans"] != 0.0 || st["rejected_log_records"] != 0.0 || st["invalid"] != 0.0 || st["sink_errors"] != 0.0 {
		t.Errorf("collect refused some of the app's telemetry: %v", st)
	}

	truth := conversationOf(t, showEvents(t, mhome, "truth"))
	if len(truth.Calls) != 2 || len(truth.Tools) != 1 || truth.Final == "" || truth.Final != answer {
		t.Fatalf("the model server saw %+v, want fixtures/otel/model.yaml's two calls, one tool result and the answer %q", truth, answer)
	}
	want := truth
	want.Calls = slices.Clone(truth.Calls)
	if slices.Contains(appEnv, "AGENT_STREAM=1") && noStreamUsage[e.Name] {
		// The telemetry has no tokens to give (see noStreamUsage).
		for i := range want.Calls {
			want.Calls[i].InputTokens, want.Calls[i].OutputTokens = 0, 0
		}
	}
	ids := sessionIDs(t, chome)
	if len(ids) != 1 {
		t.Fatalf("collect wrote %d sessions (%v), want the one conversation\ncollect stderr:\n%s", len(ids), ids, c.stderr.String())
	}
	id := ids[0]
	got := conversationOf(t, showEvents(t, chome, id))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the collected session is not the conversation the model server saw:\ncollected: %+v\nserver:    %+v", got, want)
	}
	if got.Final != answer {
		t.Errorf("collected final text %q, the app answered %q", got.Final, answer)
	}
	q := fmt.Sprintf("select count(*) as calls, sum(input_tokens) as input, sum(output_tokens) as output from events where session_id = '%s' and kind = 'model_call'", id)
	if gotQ, wantQ := queryOne(t, chome, q), wantCalls(want); gotQ != wantQ {
		t.Errorf("query of the collected calls = %s, want %s", gotQ, wantQ)
	}

	// The same app against a replay of the collected session, offline:
	// the model server is gone, the telemetry goes nowhere.
	off := append([]string{"OTEL_TRACES_EXPORTER=none", "OTEL_LOGS_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"}, appEnv...)
	rout, rerr, err := runUnderProxy(t, chome, []string{"--replay", id, "--session", "replayed"}, dir, e, off...)
	if err != nil {
		t.Fatalf("the app against proxy --replay %s: %v\nstdout:\n%s\nstderr:\n%s", id, err, rout, rerr)
	}
	if strings.TrimSpace(rout) != answer {
		t.Errorf("replayed, the app answered %q, want %q", strings.TrimSpace(rout), answer)
	}
	if strings.Contains(rerr, "DIVERGED") {
		t.Errorf("the replay diverged:\n%s", rerr)
	}
	if r := conversationOf(t, showEvents(t, chome, "replayed")); !reflect.DeepEqual(r, want) {
		t.Errorf("the replayed session is not the conversation:\nreplayed: %+v\nserver:   %+v", r, want)
	}
}

// callPerTrace are the emitters whose model calls are each a trace of its
// own (the app has no span around the conversation): OpenLLMetry's and
// the OpenTelemetry instrumentation's. With content, the mapping joins
// the traces by conversation; without, it has nothing to join them by.
var callPerTrace = map[string]bool{"openllmetry": true, "otel-openai": true}

// noStreamUsage are the emitters whose spans of a streamed call carry no
// token counts, though the stream ends with its usage
// (stream_options.include_usage): OpenInference 4.2.7 and OpenLLMetry
// 0.27.0 (testdata/otel/<emitter>/stream has no llm.token_count.* nor
// gen_ai.usage.*). Their streamed sessions have calls without tokens.
var noStreamUsage = map[string]bool{"openinference": true, "openllmetry": true}

// wantCalls is the row the query of the model calls answers for c.
func wantCalls(c otelConv) string {
	in, out := "null", "null"
	if c.input() > 0 || c.output() > 0 {
		in, out = fmt.Sprint(c.input()), fmt.Sprint(c.output())
	}
	return fmt.Sprintf(`{"calls":%d,"input":%s,"output":%s}`, len(c.Calls), in, out)
}

// runUnderProxy runs `agentctl --home HOME proxy ARGS --json -- node APP`
// with env added, and returns the app's stdout and the proxy's stderr.
func runUnderProxy(t *testing.T, home string, args []string, dir string, e oteltest.Emitter, env ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	full := append(append([]string{"--home", home, "proxy"}, args...), "--json", "--")
	cmd := exec.CommandContext(ctx, "agentctl", append(full, oteltest.Command(dir, e)...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// agentctl runs the CLI in its own process and returns stdout; it fails t
// unless the command exits 0.
func agentctlOut(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command("agentctl", append([]string{"--home", home}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("agentctl %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

func showEvents(t *testing.T, home, id string) []session.Event {
	t.Helper()
	var evs []session.Event
	sc := bufio.NewScanner(strings.NewReader(agentctlOut(t, home, "show", "--json", id)))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e session.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("show --json %s: %v: %s", id, err, sc.Bytes())
		}
		evs = append(evs, e)
	}
	return evs
}

func sessionIDs(t *testing.T, home string) []string {
	t.Helper()
	var rows []struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(agentctlOut(t, home, "sessions", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.SessionID)
	}
	return ids
}

// queryOne is the one row a query answers, as compact JSON.
func queryOne(t *testing.T, home, sql string) string {
	t.Helper()
	return strings.TrimSpace(agentctlOut(t, home, "query", sql, "--format", "jsonl"))
}

// otelConv is what a session says happened, in the terms every
// source must agree on: the model server's record, collect's mapping of
// the app's telemetry, and a replay.
type otelConv struct {
	Model  string
	System string
	Task   string
	Calls  []otelCall
	Tools  []otelTool
	Final  string
}

type otelCall struct {
	InputTokens, OutputTokens int64
	FinishReason              string
	ToolCalls                 []string // name(args)
	Text                      string
}

type otelTool struct {
	Tool, Output, Status string
}

func (c otelConv) input() (n int64) {
	for _, k := range c.Calls {
		n += k.InputTokens
	}
	return n
}

func (c otelConv) output() (n int64) {
	for _, k := range c.Calls {
		n += k.OutputTokens
	}
	return n
}

// conversationOf reads the conversation from a session's events: each
// model_call with the assistant_message before it, the tool results, the
// last assistant text.
func conversationOf(t *testing.T, evs []session.Event) otelConv {
	t.Helper()
	var c otelConv
	var last *session.Event
	// Tool results are kept in the order of the calls they answer, found
	// by call id: tools an app runs in parallel finish in any order, and
	// the log keeps the order they finished in, while the model's request
	// lists them in call order. A result paired with the wrong call moves
	// out of place and the comparison fails.
	callAt := map[string]int{}
	var toolAt []int
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case session.KindSessionStarted:
			c.Model, c.System, c.Task = e.Model, e.System, e.Text
		case session.KindAssistantMessage:
			last = e
			for _, tc := range e.ToolCalls {
				if _, ok := callAt[tc.ID]; !ok && tc.ID != "" {
					callAt[tc.ID] = len(callAt)
				}
			}
		case session.KindModelCall:
			k := otelCall{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, FinishReason: e.FinishReason}
			if last != nil {
				k.Text = last.Text
				for _, tc := range last.ToolCalls {
					k.ToolCalls = append(k.ToolCalls, fmt.Sprintf("%s(%s)", tc.Name, compactJSON(tc.Args)))
				}
				if last.Text != "" {
					c.Final = last.Text
				}
			}
			last = nil
			c.Calls = append(c.Calls, k)
		case session.KindToolResult:
			at, ok := callAt[e.CallID]
			if !ok {
				at = len(callAt) + len(toolAt)
			}
			toolAt = append(toolAt, at)
			c.Tools = append(c.Tools, otelTool{Tool: e.Tool, Output: e.Output, Status: e.Status})
		}
	}
	order := make([]int, len(c.Tools))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return toolAt[order[a]] < toolAt[order[b]] })
	tools := make([]otelTool, len(c.Tools))
	for i, j := range order {
		tools[i] = c.Tools[j]
	}
	c.Tools = tools
	return c
}

func compactJSON(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// TestOTelEmittersContentOff: each app with its instrumentation's content
// capture turned off (AGENT_CAPTURE_CONTENT=0) still gives, through a real
// `agentctl collect`, one session with every model call, its tokens and
// finish reason, that says content was not captured (session_started
// attrs content_captured false, not_recorded naming content) and holds
// no text of the conversation.
func TestOTelEmittersContentOff(t *testing.T) {
	dir := oteltest.PrepareApps(t)
	for _, e := range oteltest.Emitters {
		t.Run(e.Name, func(t *testing.T) {
			chome, mhome := t.TempDir(), t.TempDir()
			c := startCollector(t, chome)
			env := append(oteltest.ExportEnv(c.http, oteltest.HTTPProtobuf), "AGENT_CAPTURE_CONTENT=0")
			if out, stderr, err := runUnderProxy(t, mhome, []string{"--script", oteltest.ModelScript(), "--session", "truth"}, dir, e, env...); err != nil {
				t.Fatalf("the app under the scripted model: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
			}
			c.stop(t)
			truth := conversationOf(t, showEvents(t, mhome, "truth"))
			ids := sessionIDs(t, chome)
			if len(ids) != 1 && !callPerTrace[e.Name] || len(ids) == 0 {
				t.Fatalf("collect wrote %d sessions (%v), want one\ncollect stderr:\n%s", len(ids), ids, c.stderr.String())
			}
			// Without content, calls in traces of their own cannot be
			// joined into a conversation: their sessions, in start order,
			// hold the calls.
			var sessions [][]session.Event
			for _, id := range ids {
				sessions = append(sessions, showEvents(t, chome, id))
			}
			sort.Slice(sessions, func(i, j int) bool { return sessions[i][0].TS.Before(sessions[j][0].TS) })
			var got otelConv
			for _, evs := range sessions {
				got.Calls = append(got.Calls, conversationOf(t, evs).Calls...)
			}
			if len(got.Calls) != len(truth.Calls) {
				t.Fatalf("collected %d model calls, the model server saw %d", len(got.Calls), len(truth.Calls))
			}
			for i, k := range got.Calls {
				w := truth.Calls[i]
				if k.InputTokens != w.InputTokens || k.OutputTokens != w.OutputTokens || k.FinishReason != w.FinishReason {
					t.Errorf("call %d: tokens %d/%d finish %q, the model server saw %d/%d %q", i+1, k.InputTokens, k.OutputTokens, k.FinishReason, w.InputTokens, w.OutputTokens, w.FinishReason)
				}
			}
			var hdr struct {
				ContentCaptured *bool    `json:"content_captured"`
				NotRecorded     []string `json:"not_recorded"`
			}
			for i, evs := range sessions {
				if evs[0].Kind != session.KindSessionStarted {
					t.Fatalf("session %s does not begin with session_started: %+v", evs[0].SessionID, evs[0])
				}
				hdr.ContentCaptured, hdr.NotRecorded = nil, nil
				json.Unmarshal(evs[0].Attrs, &hdr)
				if hdr.ContentCaptured == nil || *hdr.ContentCaptured || !slices.Contains(hdr.NotRecorded, "content") {
					t.Errorf("session %s: session_started attrs %s: want content_captured false and not_recorded naming content", ids[i], evs[0].Attrs)
				}
			}
			for _, id := range ids {
				all := agentctlOut(t, chome, "show", "--json", id)
				for _, s := range []string{truth.Task, truth.Final, truth.System} {
					if strings.Contains(all, s) {
						t.Errorf("content capture was off, yet session %s has %q", id, s)
					}
				}
			}
		})
	}
}

// TestOTelLangChainEndToEnd: LangChain.js's createAgent traced by
// OpenInference's LangChain instrumentation (fixtures/otel/langchain-agent.mjs)
// asks the scripted model about two orders; the model calls lookup_order
// twice in one answer. Its telemetry gives the calls no ids and the
// results as serialized ToolMessages; the session a real `agentctl collect`
// writes must still hold both calls, each with the tool's real output as
// the app sent it back to the model, and show, sessions and query must
// count the same calls.
//
// Needs the emitters .ci/run installs (AGENTCTL_NPM_OTEL; unset: skipped).
func TestOTelLangChainEndToEnd(t *testing.T) {
	dir := oteltest.PrepareApps(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "langchain", "package.json")); err != nil {
		t.Fatalf("%s has no langchain (install fixtures/otel/npm's lock there): %v", oteltest.NPMEnv, err)
	}
	chome, mhome := t.TempDir(), t.TempDir()
	c := startCollector(t, chome)
	env := append(oteltest.ExportEnv(c.http, oteltest.HTTPProtobuf), "AGENT_TASK="+oteltest.TwoOrdersTask)
	out, stderr, err := runUnderProxy(t, mhome, []string{"--script", oteltest.TwoOrdersScript(), "--session", "truth"}, dir, oteltest.LangChain, env...)
	if err != nil {
		t.Fatalf("the app under the scripted model: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	c.stop(t)

	truth := conversationOf(t, showEvents(t, mhome, "truth"))
	if len(truth.Calls) != 2 || len(truth.Tools) != 2 || truth.Final != strings.TrimSpace(out) {
		t.Fatalf("the model server saw %+v, want two calls, two tool results and the answer %q", truth, out)
	}
	ids := sessionIDs(t, chome)
	if len(ids) != 1 {
		t.Fatalf("collect wrote %d sessions (%v), want the one conversation\ncollect stderr:\n%s", len(ids), ids, c.stderr.String())
	}
	id := ids[0]
	evs := showEvents(t, chome, id)
	got := conversationOf(t, evs)
	if !reflect.DeepEqual(got.Tools, truth.Tools) {
		t.Errorf("the collected tool results are not the ones the app sent the model:\ncollected: %+v\nserver:    %+v", got.Tools, truth.Tools)
	}
	if !reflect.DeepEqual(got, truth) {
		t.Errorf("the collected session is not the conversation the model server saw:\ncollected: %+v\nserver:    %+v", got, truth)
	}
	// Every way of counting the calls agrees: show's tool calls and
	// intents, the sessions list, the tool_calls view.
	calls, intents := map[string]bool{}, 0
	for _, e := range evs {
		for _, tc := range e.ToolCalls {
			if tc.ID == "" {
				t.Errorf("a tool call without an id: %+v", e)
			}
			calls[tc.ID] = true
		}
		if e.Kind == session.KindToolIntent {
			intents++
			if !calls[e.CallID] {
				t.Errorf("intent for call %s, which no assistant message made", e.CallID)
			}
		}
	}
	var rows []struct {
		SessionID string `json:"session_id"`
		ToolCalls int    `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(agentctlOut(t, chome, "sessions", "--json")), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("sessions --json: %v %+v", err, rows)
	}
	q := queryOne(t, chome, fmt.Sprintf("select count(*) as n, count(args) as with_args from tool_calls where session_id = '%s'", id))
	if len(calls) != 2 || intents != 2 || rows[0].ToolCalls != 2 || q != `{"n":2,"with_args":2}` {
		t.Errorf("calls in show %d, intents %d, sessions.tool_calls %d, tool_calls view %s; want 2 each", len(calls), intents, rows[0].ToolCalls, q)
	}

	// The app against a replay of the collected session, offline: the
	// calls' synthesized ids are the ones it sends back.
	off := []string{"OTEL_TRACES_EXPORTER=none", "OTEL_LOGS_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "AGENT_TASK=" + oteltest.TwoOrdersTask}
	rout, rerr, err := runUnderProxy(t, chome, []string{"--replay", id, "--session", "replayed"}, dir, oteltest.LangChain, off...)
	if err != nil || strings.TrimSpace(rout) != truth.Final || strings.Contains(rerr, "DIVERGED") {
		t.Errorf("the app against proxy --replay %s: %v, answered %q (want %q)\nstderr:\n%s", id, err, rout, truth.Final, rerr)
	}
}

// TestOTelContentBeforeSpans: the OpenTelemetry OpenAI instrumentation
// sends message content as log records (exported every 1 s) and its
// spans every 5 s, a call's span once the call ended; with model calls
// of 3 s and the SDK's own export intervals, the content of a call
// reaches collect seconds before its span. It must still be one session
// holding the conversation the model server saw (the user's message,
// the tool call and its result, the answer), not a session per call
// without them.
func TestOTelContentBeforeSpans(t *testing.T) {
	dir := oteltest.PrepareApps(t)
	e, _ := oteltest.EmitterNamed("otel-openai")
	script := filepath.Join(t.TempDir(), "slow-model.yaml")
	b, err := os.ReadFile(oteltest.ModelScript())
	if err != nil {
		t.Fatal(err)
	}
	// Every turn of the scripted model takes 3 s.
	slow := strings.ReplaceAll(string(b), "    usage:", "    delay: 3s\n    usage:")
	if strings.Count(slow, "delay: 3s") != 2 {
		t.Fatalf("fixtures/otel/model.yaml changed shape: %s", b)
	}
	if err := os.WriteFile(script, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	chome, mhome := t.TempDir(), t.TempDir()
	c := startCollector(t, chome)
	// The SDK's default batch delays (spans 5 s, log records 1 s).
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + c.http, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_EXPORTER=otlp", "OTEL_LOGS_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=none"}
	began := time.Now()
	out, stderr, err := runUnderProxy(t, mhome, []string{"--script", script, "--session", "truth"}, dir, e, env...)
	if err != nil {
		t.Fatalf("the app under the slow scripted model: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	if d := time.Since(began); d < 6*time.Second {
		t.Fatalf("the app took %s, want the two 3 s calls", d)
	}
	c.stop(t)
	truth := conversationOf(t, showEvents(t, mhome, "truth"))
	ids := sessionIDs(t, chome)
	if len(ids) != 1 {
		t.Fatalf("collect wrote %d sessions (%v), want the one conversation\ncollect stderr:\n%s", len(ids), ids, c.stderr.String())
	}
	got := conversationOf(t, showEvents(t, chome, ids[0]))
	if !reflect.DeepEqual(got, truth) {
		t.Errorf("the collected session is not the conversation the model server saw:\ncollected: %+v\nserver:    %+v", got, truth)
	}
}
