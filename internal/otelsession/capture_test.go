package otelsession

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// captures is the folder of real emitters' OTLP exports (see its README).
const captures = "../../testdata/otel"

// export is one captured OTLP request.
type export struct {
	name   string
	traces *coltracepb.ExportTraceServiceRequest
	logs   *collogspb.ExportLogsServiceRequest
	wire   []byte // a protobuf export's bytes: fed to TracesWire, as collect does
}

// loadCapture reads the requests of one emitter and protocol, in the
// order they arrived (their file names).
func loadCapture(t testing.TB, dir string) []export {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "[0-9]*-*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no captures in %s (%v)", dir, err)
	}
	sort.Strings(names)
	var out []export
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		e := export{name: filepath.Base(n)}
		isJSON := strings.HasSuffix(n, ".json")
		switch {
		case strings.Contains(e.name, "-traces"):
			if isJSON {
				e.traces, err = DecodeTracesJSON(b)
			} else {
				e.traces, e.wire = &coltracepb.ExportTraceServiceRequest{}, b
				err = proto.Unmarshal(b, e.traces)
			}
		case strings.Contains(e.name, "-logs"):
			if isJSON {
				e.logs, err = DecodeLogsJSON(b)
			} else {
				e.logs = &collogspb.ExportLogsServiceRequest{}
				err = proto.Unmarshal(b, e.logs)
			}
		default:
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out = append(out, e)
	}
	return out
}

func feed(t testing.TB, in *Ingester, exps []export) {
	t.Helper()
	for _, e := range exps {
		var res Result
		var err error
		switch {
		case e.wire != nil:
			res, err = in.TracesWire(context.Background(), e.wire)
		case e.traces != nil:
			res, err = in.Traces(context.Background(), e.traces)
		default:
			res, err = in.Logs(context.Background(), e.logs)
		}
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if len(res.Rejected) > 0 {
			t.Fatalf("%s: rejected %+v", e.name, res.Rejected)
		}
	}
}

func testOpts() Options {
	return Options{NoBackground: true, Source: "test", Recorder: recorder.Options{NoSync: true}}
}

// ingestAll maps exps into a fresh home and returns its sessions' events.
func ingestAll(t testing.TB, exps []export) (recorder.Store, map[string][]session.Event) {
	t.Helper()
	st := recorder.Store{Root: t.TempDir()}
	in, err := NewIngester(st, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	feed(t, in, exps)
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	return st, loadAll(t, st)
}

func loadAll(t testing.TB, st recorder.Store) map[string][]session.Event {
	t.Helper()
	ids, err := st.IDs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]session.Event{}
	for _, id := range ids {
		evs, _, err := st.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = evs
	}
	return out
}

func readJSONL(t testing.TB, path string) []session.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []session.Event
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var e session.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, e)
	}
	return out
}

// emitters are the apps of the captures; noToolDefs: the emitter does not
// record the tools a request offered (the OTel JS OpenAI instrumentation),
// so a call's request digest cannot be computed and is left empty.
var emitters = []struct {
	name       string
	noToolDefs bool
}{{"otel-openai", true}, {"openinference", false}, {"openllmetry", false}, {"vercel-genai", false}, {"vercel-legacy", false}}
var protocols = []string{"http-protobuf", "http-json", "grpc"}

// TestCaptures maps each real emitter's export (every protocol) and holds
// the session to what the model server saw in that run: the same model
// calls with the same request digests (the conversation as the proxy
// would have recorded it, so proxy --replay matches the app's requests),
// the same answers, tool results and tokens. The http-json session is
// also a golden file.
func TestCaptures(t *testing.T) {
	for _, em := range emitters {
		for _, p := range protocols {
			dir := filepath.Join(captures, em.name, p)
			t.Run(em.name+"/"+p, func(t *testing.T) {
				_, got := ingestAll(t, loadCapture(t, dir))
				if len(got) != 1 {
					t.Fatalf("%d sessions, want 1", len(got))
				}
				var evs []session.Event
				for _, e := range got {
					evs = e
				}
				truth := readJSONL(t, filepath.Join(dir, "model-server.jsonl"))
				if em.noToolDefs {
					truth = withoutDigests(truth)
					if !strings.Contains(string(evs[0].Attrs), `"tool_definitions"`) {
						t.Errorf("header attrs %s: not_recorded does not name tool_definitions", evs[0].Attrs)
					}
				}
				compareConversation(t, evs, truth)
				if p == "http-json" {
					golden(t, filepath.Join("testdata", em.name+".jsonl"), evs)
				}
			})
		}
	}
}

// TestStreamed maps each emitter's run with streamed model calls: the
// same conversation as the model server saw. Tokens are held to it only
// where the emitter exports them for a streamed call (OpenInference and
// OpenLLMetry export none: the calls then have 0, not invented ones).
func TestStreamed(t *testing.T) {
	for _, em := range emitters {
		t.Run(em.name, func(t *testing.T) {
			dir := filepath.Join(captures, em.name, "stream")
			evs := oneSession(t, func() map[string][]session.Event { _, g := ingestAll(t, loadCapture(t, dir)); return g }())
			truth := readJSONL(t, filepath.Join(dir, "model-server.jsonl"))
			if em.noToolDefs {
				truth = withoutDigests(truth)
			}
			if !hasTokens(evs) {
				truth = withoutTokens(truth)
			}
			if !hasResponseIDs(evs) {
				// OpenInference keeps the response id in output.value,
				// which a streamed call has none of.
				truth = withoutResponseIDs(truth)
			}
			compareConversation(t, evs, truth)
		})
	}
}

func hasTokens(evs []session.Event) bool {
	for _, e := range evs {
		if e.Kind == session.KindModelCall && e.InputTokens+e.OutputTokens > 0 {
			return true
		}
	}
	return false
}

func hasResponseIDs(evs []session.Event) bool {
	for _, e := range evs {
		if e.Kind == session.KindModelCall && e.ResponseID != "" {
			return true
		}
	}
	return false
}

func withoutTokens(evs []session.Event) []session.Event {
	out := append([]session.Event(nil), evs...)
	for i := range out {
		out[i].InputTokens, out[i].OutputTokens = 0, 0
	}
	return out
}

// TestNoContent maps each emitter's run with content capture off (each
// instrumentation's own switch): the model calls are all there, with
// their model, tokens and latency, no message is invented, and every
// session's header says content was not captured.
func TestNoContent(t *testing.T) {
	for _, em := range emitters {
		t.Run(em.name, func(t *testing.T) {
			dir := filepath.Join(captures, em.name, "no-content")
			_, got := ingestAll(t, loadCapture(t, dir))
			truth := readJSONL(t, filepath.Join(dir, "model-server.jsonl"))
			var want, calls []session.Event
			for _, e := range truth {
				if e.Kind == session.KindModelCall {
					want = append(want, e)
				}
			}
			for _, evs := range got {
				if !strings.Contains(string(evs[0].Attrs), `"content_captured":false`) {
					t.Errorf("header attrs %s do not say content was not captured", evs[0].Attrs)
				}
				for _, e := range evs {
					switch e.Kind {
					case session.KindModelCall:
						calls = append(calls, e)
					case session.KindUserMessage, session.KindAssistantMessage:
						t.Errorf("%s with content capture off: %+v", e.Kind, e)
					}
				}
			}
			sort.Slice(calls, func(i, j int) bool { return calls[i].TS.Before(calls[j].TS) })
			if len(calls) != len(want) {
				t.Fatalf("%d model calls, want %d", len(calls), len(want))
			}
			for i := range calls {
				g, w := calls[i], want[i]
				if g.Model != w.Model || (g.InputTokens != 0 && (g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens)) || g.LatencyMS <= 0 {
					t.Errorf("call %d: %s in %d out %d %dms, want %s in %d out %d", i+1, g.Model, g.InputTokens, g.OutputTokens, g.LatencyMS, w.Model, w.InputTokens, w.OutputTokens)
				}
			}
		})
	}
}

// compareConversation holds a mapped session to the proxy's recording of
// the same run: calls, digests, answers, tool results, tokens.
func compareConversation(t *testing.T, got, want []session.Event) {
	t.Helper()
	pick := func(evs []session.Event, k session.Kind) []session.Event {
		var out []session.Event
		for _, e := range evs {
			if e.Kind == k && !isFromRequest(e) {
				out = append(out, e)
			}
		}
		return out
	}
	gc, wc := pick(got, session.KindModelCall), pick(want, session.KindModelCall)
	if len(gc) != len(wc) {
		t.Fatalf("%d model calls, want %d", len(gc), len(wc))
	}
	for i := range gc {
		g, w := gc[i], wc[i]
		if g.RequestDigest != w.RequestDigest {
			t.Errorf("call %d: request_digest = %s, want %s (the proxy's)", i+1, g.RequestDigest, w.RequestDigest)
		}
		if g.Model != w.Model || g.Provider != w.Provider || g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens || g.FinishReason != w.FinishReason || g.ResponseID != w.ResponseID {
			t.Errorf("call %d: %s/%s in %d out %d finish %q id %q, want %s/%s in %d out %d finish %q id %q", i+1,
				g.Provider, g.Model, g.InputTokens, g.OutputTokens, g.FinishReason, g.ResponseID,
				w.Provider, w.Model, w.InputTokens, w.OutputTokens, w.FinishReason, w.ResponseID)
		}
	}
	ga, wa := pick(got, session.KindAssistantMessage), pick(want, session.KindAssistantMessage)
	if len(ga) != len(wa) {
		t.Fatalf("%d assistant messages, want %d", len(ga), len(wa))
	}
	for i := range ga {
		if ga[i].Text != wa[i].Text || !sameCalls(ga[i].ToolCalls, wa[i].ToolCalls) {
			t.Errorf("answer %d: %q %s, want %q %s", i+1, ga[i].Text, js(ga[i].ToolCalls), wa[i].Text, js(wa[i].ToolCalls))
		}
	}
	gr, wr := results(got), results(want)
	if js(gr) != js(wr) {
		t.Errorf("tool results = %s, want %s", js(gr), js(wr))
	}
	gu, wu := pick(got, session.KindUserMessage), pick(want, session.KindUserMessage)
	if len(gu) != len(wu) || (len(gu) > 0 && gu[0].Text != wu[0].Text) {
		t.Errorf("user messages = %s, want %s", js(gu), js(wu))
	}
	if got[0].System != want[0].System || got[0].Model != want[0].Model || got[0].Text != want[0].Text {
		t.Errorf("header system/model/text = %q/%q/%q, want %q/%q/%q", got[0].System, got[0].Model, got[0].Text, want[0].System, want[0].Model, want[0].Text)
	}
}

func withoutDigests(evs []session.Event) []session.Event {
	out := append([]session.Event(nil), evs...)
	for i := range out {
		out[i].RequestDigest = ""
	}
	return out
}

func isFromRequest(e session.Event) bool {
	var a struct {
		FromRequest bool `json:"from_request"`
	}
	return len(e.Attrs) > 0 && json.Unmarshal(e.Attrs, &a) == nil && a.FromRequest && e.Kind == session.KindAssistantMessage
}

func sameCalls(a, b []session.ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Name != b[i].Name || !session.SameJSON(a[i].Args, b[i].Args) {
			return false
		}
	}
	return true
}

func results(evs []session.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == session.KindToolResult {
			out = append(out, e.CallID+" "+e.Tool+" "+e.Status+" "+e.Output)
		}
	}
	return out
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// golden compares evs, one JSON line each, with the file at path
// (-update rewrites it).
func golden(t *testing.T, path string, evs []session.Event) {
	t.Helper()
	var b bytes.Buffer
	for _, e := range evs {
		line, err := session.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("%s differs (run with -update to accept):\n got: %s\nwant: %s", path, b.String(), want)
	}
}

var _ = time.Second

// TestLangChainToolCallsWithoutIDs maps the real capture of LangChain.js's
// agent traced by OpenInference (testdata/otel/langchain: two lookup_order
// calls in one answer). Its LLM spans give the calls no tool_call.id and
// the next request's tool messages no tool_call_id; its TOOL spans' output
// is LangChain's serialized ToolMessage. The session must still hold two
// calls with ids of their own, each with one intent and one result whose
// output is the tool's (the model server's record: what the app sent
// back), and the fold must count two calls, each answered.
//
// The two tool spans start in the same millisecond and end in either
// order (the run as captured, and the other order, which a loaded CI
// machine gave): the results are the calls' either way, written in the
// order of the calls, as the app sends them back.
func TestLangChainToolCallsWithoutIDs(t *testing.T) {
	for _, swap := range []bool{false, true} {
		t.Run(fmt.Sprintf("second_ends_first=%v", swap), func(t *testing.T) {
			dir := filepath.Join(captures, "langchain", "http-json")
			exps := loadCapture(t, dir)
			if swap {
				swapToolEnds(t, exps)
			}
			checkLangChainToolCalls(t, dir, exps)
		})
	}
}

// swapToolEnds swaps the end times of the capture's two TOOL spans.
func swapToolEnds(t *testing.T, exps []export) {
	var tools []*tracepb.Span
	for _, e := range exps {
		if e.traces == nil {
			continue
		}
		for _, rs := range e.traces.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					for _, kv := range sp.Attributes {
						if kv.Key == "openinference.span.kind" && kv.Value.GetStringValue() == "TOOL" {
							tools = append(tools, sp)
						}
					}
				}
			}
		}
	}
	if len(tools) != 2 || tools[0].StartTimeUnixNano != tools[1].StartTimeUnixNano || tools[0].EndTimeUnixNano >= tools[1].EndTimeUnixNano {
		t.Fatalf("want two TOOL spans starting together, the first ending first; the capture has %d", len(tools))
	}
	tools[0].EndTimeUnixNano, tools[1].EndTimeUnixNano = tools[1].EndTimeUnixNano, tools[0].EndTimeUnixNano
}

func checkLangChainToolCalls(t *testing.T, dir string, exps []export) {
	truth := readJSONL(t, filepath.Join(dir, "model-server.jsonl"))
	_, got := ingestAll(t, exps)
	evs := oneSession(t, got)
	var calls []session.ToolCall
	var intents, results []session.Event
	for _, e := range evs {
		switch e.Kind {
		case session.KindAssistantMessage:
			calls = append(calls, e.ToolCalls...)
		case session.KindToolIntent:
			intents = append(intents, e)
		case session.KindToolResult:
			results = append(results, e)
		}
	}
	var wantCalls []session.ToolCall
	var wantOut []string
	for _, e := range truth {
		switch e.Kind {
		case session.KindAssistantMessage:
			wantCalls = append(wantCalls, e.ToolCalls...)
		case session.KindToolResult:
			wantOut = append(wantOut, e.Output)
		}
	}
	if len(calls) != 2 || len(wantCalls) != 2 {
		t.Fatalf("calls %s, the model server's %s; want 2 each", js(calls), js(wantCalls))
	}
	ids := map[string]bool{}
	for i, c := range calls {
		if c.ID == "" || ids[c.ID] {
			t.Errorf("call %d has id %q: want an id of its own", i, c.ID)
		}
		ids[c.ID] = true
		if c.Name != wantCalls[i].Name || js(c.Args) != js(wantCalls[i].Args) {
			t.Errorf("call %d is %s, the model server's %s", i, js(c), js(wantCalls[i]))
		}
	}
	if len(intents) != 2 || len(results) != 2 {
		t.Fatalf("%d tool_intent and %d tool_result events, want 2 each:\n%s", len(intents), len(results), encodeAll(t, evs))
	}
	for i := range 2 {
		if intents[i].CallID != calls[i].ID || js(intents[i].Args) != js(calls[i].Args) {
			t.Errorf("intent %d is %s(%s) for call %s, want call %s's args %s", i, intents[i].Tool, intents[i].Args, intents[i].CallID, calls[i].ID, calls[i].Args)
		}
		if results[i].CallID != calls[i].ID || results[i].Tool != "lookup_order" || results[i].Output != wantOut[i] || results[i].Status != session.ResultOK {
			t.Errorf("result %d is %s %s %q (%s), want call %s's output %q", i, results[i].CallID, results[i].Tool, results[i].Output, results[i].Status, calls[i].ID, wantOut[i])
		}
	}
	if evs[0].System != truth[0].System || truth[0].System == "" {
		t.Errorf("system prompt %q, the model server's %q", evs[0].System, truth[0].System)
	}
	for _, e := range evs {
		if (e.Kind == session.KindModelCall || e.Kind == session.KindSessionStarted) && e.Provider != "openai" {
			t.Errorf("%s has provider %q, want openai (LangChain's metadata.ls_provider)", e.Kind, e.Provider)
		}
	}
	st := session.Fold(evs)
	if len(st.Calls) != 2 {
		t.Errorf("the fold counts %d calls, want 2", len(st.Calls))
	}
	for _, c := range st.Calls {
		if c.ResultSeq == 0 {
			t.Errorf("call %s has no result in the fold", c.ID)
		}
	}
}
