package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
)

// fake is a Gemini API stand-in: it answers each call with the next of
// its scripted responses and keeps the requests it got.
type fake struct {
	mu     sync.Mutex
	resps  []fakeResp
	reqs   []*http.Request
	bodies [][]byte
}

type fakeResp struct {
	status int
	ct     string
	body   string
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.bodies = append(f.bodies, b)
	n := len(f.reqs)
	f.mu.Unlock()
	if n > len(f.resps) {
		http.Error(w, "no more answers", 500)
		return
	}
	fr := f.resps[n-1]
	ct := fr.ct
	if ct == "" {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	if fr.status != 0 {
		w.WriteHeader(fr.status)
	}
	io.WriteString(w, fr.body)
}

func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		fmt.Fprintf(&b, "data: %s\r\n\r\n", c)
	}
	return b.String()
}

func newClient(t *testing.T, f *fake) provider.Provider {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	p, err := New(Config{BaseURL: srv.URL, APIKey: "k-test", MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	p.(*client).retryBase = 0
	return p
}

// TestClientToolCallRoundTrip: a streamed answer with text, a function
// call and usage with cached and thought tokens reads as the session
// records it; the call gets its synthesized id, and the next request
// sends the call and its result in Gemini's shape, which ParseRequest
// (the proxy's reading) maps back onto the same messages and ids.
func TestClientToolCallRoundTrip(t *testing.T) {
	f := &fake{resps: []fakeResp{
		{body: sse(
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking…","thought":true}]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me "}]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"look."},{"functionCall":{"name":"read_file","args":{"path":"a.txt"}},"thoughtSignature":"c2ln"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1200,"candidatesTokenCount":30,"cachedContentTokenCount":1000,"thoughtsTokenCount":12,"totalTokenCount":1242},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
		)},
		{body: sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"It says hi."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1300,"candidatesTokenCount":5,"totalTokenCount":1305},"modelVersion":"gemini-2.5-flash"}`)},
	}}
	p := newClient(t, f)
	msgs := []session.Message{{Role: session.RoleSystem, Content: "be brief"}, {Role: session.RoleUser, Content: "what is in a.txt?"}}
	tools := []provider.ToolDef{{Name: "read_file", Description: "read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}}
	var deltas []string
	r, err := p.Complete(context.Background(), provider.Request{Model: "gemini-2.5-flash", Messages: msgs, Tools: tools}, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	wantCall := session.ToolCall{ID: CallID(1, 0), Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}
	if r.Text != "Let me look." || r.Thinking != "thinking…" || !reflect.DeepEqual(deltas, []string{"Let me ", "look."}) {
		t.Errorf("text %q thinking %q deltas %q", r.Text, r.Thinking, deltas)
	}
	if len(r.ToolCalls) != 1 || !reflect.DeepEqual(r.ToolCalls[0], wantCall) {
		t.Errorf("tool calls %+v, want %+v", r.ToolCalls, wantCall)
	}
	if r.InputTokens != 1200 || r.CacheReadTokens != 1000 || r.OutputTokens != 42 || r.FinishReason != provider.FinishToolCalls ||
		r.Model != "gemini-2.5-flash" || r.ResponseID != "r1" {
		t.Errorf("usage/finish: %+v", r)
	}
	if want := (200*0.30 + 1000*0.03 + 42*2.50) / 1e6; r.CostUSD < want-1e-12 || r.CostUSD > want+1e-12 {
		t.Errorf("cost %v, want %v", r.CostUSD, want)
	}
	req := f.reqs[0]
	if req.URL.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || req.URL.RawQuery != "alt=sse" || req.Header.Get("x-goog-api-key") != "k-test" {
		t.Errorf("request %s ?%s key %q", req.URL.Path, req.URL.RawQuery, req.Header.Get("x-goog-api-key"))
	}
	var sent map[string]any
	if err := json.Unmarshal(f.bodies[0], &sent); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sent["systemInstruction"]); !strings.Contains(got, "be brief") {
		t.Errorf("systemInstruction %s", got)
	}
	if !strings.Contains(string(f.bodies[0]), `"parametersJsonSchema":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}`) {
		t.Errorf("tools not sent as functionDeclarations: %s", f.bodies[0])
	}

	// The next turn: the call and its result go back.
	msgs = append(msgs, session.Message{Role: session.RoleAssistant, Content: r.Text, ToolCalls: r.ToolCalls},
		session.Message{Role: session.RoleTool, ToolCallID: wantCall.ID, Name: "read_file", Content: "hi"})
	r2, err := p.Complete(context.Background(), provider.Request{Model: "gemini-2.5-flash", Messages: msgs, Tools: tools}, nil)
	if err != nil || r2.Text != "It says hi." || r2.FinishReason != provider.FinishStop {
		t.Fatalf("second turn: %+v %v", r2, err)
	}
	body := string(f.bodies[1])
	for _, want := range []string{`{"role":"model","parts":[{"text":"Let me look."},{"functionCall":{"name":"read_file","args":{"path":"a.txt"}}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"hi"}}}]}`} {
		if !strings.Contains(body, want) {
			t.Errorf("second request lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "gemini-call-") {
		t.Errorf("a synthesized id was sent to the API: %s", body)
	}
	c, err := ParseRequest("gemini-2.5-flash", MethodStream, f.bodies[1])
	if err != nil {
		t.Fatal(err)
	}
	if c.System != "be brief" || !reflect.DeepEqual(c.Tools, []string{"read_file"}) || !c.Stream {
		t.Errorf("parsed call: %+v", c)
	}
	if !reflect.DeepEqual(c.Messages, msgs[1:]) {
		t.Errorf("parsed messages\n%+v\nwant\n%+v", c.Messages, msgs[1:])
	}
}

// TestFinishAndBlocks: Gemini's finish and block reasons normalised.
func TestFinishAndBlocks(t *testing.T) {
	for _, tt := range []struct {
		name, chunk           string
		text, refusal, finish string
	}{
		{"max tokens", `{"candidates":[{"content":{"role":"model","parts":[{"text":"cut"}]},"finishReason":"MAX_TOKENS","index":0}]}`, "cut", "", provider.FinishLength},
		{"safety without text", `{"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"SAFETY","index":0}]}`, "", BlockedWithoutText + "finishReason SAFETY)", provider.FinishContentFilter},
		{"recitation with text", `{"candidates":[{"content":{"role":"model","parts":[{"text":"partial"}]},"finishReason":"RECITATION","index":0}]}`, "", "partial", provider.FinishContentFilter},
		{"prohibited", `{"candidates":[{"finishReason":"PROHIBITED_CONTENT","index":0}]}`, "", BlockedWithoutText + "finishReason PROHIBITED_CONTENT)", provider.FinishContentFilter},
		{"blocklist", `{"candidates":[{"finishReason":"BLOCKLIST","index":0}]}`, "", BlockedWithoutText + "finishReason BLOCKLIST)", provider.FinishContentFilter},
		{"prompt blocked", `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}}`, "", BlockedWithoutText + "promptFeedback.blockReason SAFETY)", provider.FinishContentFilter},
		{"unsupported language", `{"candidates":[{"content":{"role":"model","parts":[{"text":"y"}]},"finishReason":"LANGUAGE","index":0}]}`, "y", "", "language"},
		{"other", `{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"MALFORMED_FUNCTION_CALL","index":0}]}`, "x", "", "malformed_function_call"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newClient(t, &fake{resps: []fakeResp{{body: sse(tt.chunk)}}})
			r, err := p.Complete(context.Background(), provider.Request{Model: "gemini-2.5-flash", Messages: []session.Message{{Role: session.RoleUser, Content: "q"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != tt.text || r.Refusal != tt.refusal || r.FinishReason != tt.finish {
				t.Errorf("text %q refusal %q finish %q; want %q %q %q", r.Text, r.Refusal, r.FinishReason, tt.text, tt.refusal, tt.finish)
			}
		})
	}
}

// TestErrors: the error envelope read as every provider's errors are,
// retried when it is worth it.
func TestErrors(t *testing.T) {
	quota := fakeResp{status: 429, ct: "application/json", body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`}
	ok := fakeResp{body: sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"fine"}]},"finishReason":"STOP","index":0}]}`)}
	for _, tt := range []struct {
		name      string
		resps     []fakeResp
		text      string
		status    int
		typ       string
		inStream  bool
		retryable bool
		attempts  int
	}{
		{"429 retried", []fakeResp{quota, ok}, "fine", 0, "", false, false, 1},
		{"429 for good", []fakeResp{quota, quota, quota}, "", 429, "RESOURCE_EXHAUSTED", false, true, 2},
		{"bad key", []fakeResp{{status: 400, ct: "application/json", body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`}},
			"", 400, "API_KEY_INVALID", false, false, 0},
		{"error mid-stream", []fakeResp{{body: sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"par"}]},"index":0}]}`, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`)}},
			"par", 0, "UNAVAILABLE", true, true, 0},
		{"empty 200", []fakeResp{{body: ""}}, "", 0, provider.ErrEmptyStream, false, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newClient(t, &fake{resps: tt.resps})
			r, err := p.Complete(context.Background(), provider.Request{Model: "gemini-2.5-flash", Messages: []session.Message{{Role: session.RoleUser, Content: "q"}}}, nil)
			if r.Text != tt.text || len(r.Attempts) != tt.attempts {
				t.Errorf("text %q attempts %d; want %q %d", r.Text, len(r.Attempts), tt.text, tt.attempts)
			}
			if tt.typ == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want a *provider.Error", err)
			}
			if pe.Provider != Name || pe.Status != tt.status || pe.Type != tt.typ || pe.InStream != tt.inStream || pe.Retryable != tt.retryable || pe.Message == "" {
				t.Errorf("error %+v", pe)
			}
		})
	}
}

// TestEncoderRoundTrip: an answer rendered in each of the API's shapes
// reads back as the same answer, and renders to the same bytes twice.
func TestEncoderRoundTrip(t *testing.T) {
	answers := []provider.Response{
		{Text: "hello there", FinishReason: provider.FinishStop, InputTokens: 100, CacheReadTokens: 40, OutputTokens: 7},
		{Text: "one moment", ToolCalls: []session.ToolCall{{ID: CallID(3, 0), Name: "ls", Args: json.RawMessage(`{"dir":"."}`)}, {ID: CallID(3, 1), Name: "cat", Args: json.RawMessage(`{}`)}},
			FinishReason: provider.FinishToolCalls, InputTokens: 10, OutputTokens: 2},
		{Text: "long", FinishReason: provider.FinishLength, InputTokens: 1, OutputTokens: 1},
		{Refusal: BlockedWithoutText + "finishReason SAFETY)", FinishReason: provider.FinishContentFilter},
	}
	for _, a := range answers {
		a.Model, a.ResponseID = "gemini-2.5-flash", "resp-1"
		for _, shape := range []struct {
			method, query string
			stream        bool
		}{{MethodStream, "alt=sse", true}, {MethodStream, "", false}, {MethodGenerate, "", false}} {
			render := func() (string, []byte) {
				w := httptest.NewRecorder()
				e := NewEncoder(w, shape.method, shape.query, "resp-1", "gemini-2.5-flash")
				for _, piece := range strings.SplitAfter(a.Text, " ") {
					e.Text(piece)
				}
				e.Finish(a)
				return w.Header().Get("Content-Type"), w.Body.Bytes()
			}
			ct, b1 := render()
			_, b2 := render()
			if string(b1) != string(b2) {
				t.Errorf("%s?%s: two renders differ", shape.method, shape.query)
			}
			got, err := Parse(b1, strings.HasPrefix(ct, "text/event-stream"), "x", 3)
			if err != nil {
				t.Fatalf("%s?%s: %v\n%s", shape.method, shape.query, err, b1)
			}
			a.CostUSD = got.CostUSD
			if !reflect.DeepEqual(got, a) {
				t.Errorf("%s?%s:\n got %+v\nwant %+v\n%s", shape.method, shape.query, got, a, b1)
			}
		}
	}
}

// TestErrorBodyRoundTrip: the proxy's own errors (a replay divergence)
// keep their type through the API's envelope.
func TestErrorBodyRoundTrip(t *testing.T) {
	e := ParseError(400, nil, ErrorBody(400, "replay_divergence", "turn 2 diverges"))
	if e.Type != "replay_divergence" || e.Message != "turn 2 diverges" || e.Status != 400 {
		t.Errorf("%+v", e)
	}
	e = ParseError(429, nil, ErrorBody(429, "RESOURCE_EXHAUSTED", "slow down"))
	if e.Type != "RESOURCE_EXHAUSTED" || !e.Retryable {
		t.Errorf("%+v", e)
	}
}

// TestRoute reads the API's paths and refuses the ones it cannot serve.
func TestRoute(t *testing.T) {
	for _, tt := range []struct {
		path          string
		model, method string
		ok, bad       bool
	}{
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", "gemini-2.5-flash", MethodStream, true, false},
		{"/v1beta/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro", MethodGenerate, true, false},
		{"/v1beta/models/gemini-2.5-pro:countTokens", "gemini-2.5-pro", MethodCount, true, false},
		{"/v1beta/models/gemini-2.5-pro:embedContent", "gemini-2.5-pro", "embedContent", true, true},
		{"/v1beta/models/..:generateContent", "..", MethodGenerate, true, true},
		{"/v1/chat/completions", "", "", false, false},
		{"/v1beta/models", "", "", false, false},
	} {
		model, method, ok, err := Route(tt.path)
		if model != tt.model || method != tt.method || ok != tt.ok || (err != nil) != tt.bad {
			t.Errorf("Route(%q) = %q %q %v %v", tt.path, model, method, ok, err)
		}
	}
}

// TestGeminiCLIRequests reads the real requests of gemini-cli 0.61.0
// (testdata/gemini-cli-0.61.0, see its README): turn 2 repeats turn 1
// and its answer exactly (session.Extends), although gemini-cli put an
// id of its own on the call and its response; the result answers the
// call, named after its tool.
func TestGeminiCLIRequests(t *testing.T) {
	dir := filepath.Join("testdata", "gemini-cli-0.61.0")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c1, err := ParseRequest("gemini-2.5-flash", MethodStream, read("turn1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c1.Messages) != 1 || c1.Messages[0].Role != session.RoleUser || !strings.HasSuffix(c1.Messages[0].Content, "List the files here.") ||
		!strings.Contains(c1.System, "Gemini CLI") || !slices.Contains(c1.Tools, "list_directory") || !c1.Stream {
		t.Fatalf("turn 1: %d messages, system %.60q, tools %v", len(c1.Messages), c1.System, c1.Tools)
	}
	a1, err := Parse(read("turn1.sse"), true, c1.Model, len(c1.Messages))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := ParseRequest("gemini-2.5-flash", MethodStream, read("turn2.json"))
	if err != nil {
		t.Fatal(err)
	}
	history := append(append([]session.Message{}, c1.Messages...), session.Message{Role: session.RoleAssistant, Content: a1.Text, ToolCalls: a1.ToolCalls})
	if !session.Extends(history, c2.Messages) {
		t.Fatalf("turn 2 does not extend turn 1 and its answer:\n%+v\n%+v", history, c2.Messages)
	}
	if len(c2.Messages) != 3 {
		t.Fatalf("turn 2: %d messages, want 3", len(c2.Messages))
	}
	res := c2.Messages[2]
	if res.Role != session.RoleTool || res.ToolCallID != a1.ToolCalls[0].ID || res.Name != "list_directory" ||
		!strings.HasPrefix(res.Content, "Directory listing for ") || c2.Failed[res.ToolCallID] {
		t.Errorf("tool result %+v", res)
	}
	if a1.InputTokens != 1200 || a1.CacheReadTokens != 600 || a1.OutputTokens != 12 {
		t.Errorf("usage %+v", a1)
	}
}
