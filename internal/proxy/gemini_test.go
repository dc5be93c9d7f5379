package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi/gemini"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
)

// geminiCLI is gemini-cli 0.61.0's two requests of one tool call, real,
// and the fake Gemini API's answers (gemini's testdata README says how).
func geminiCLI(t *testing.T) (reqs, answers [2][]byte) {
	t.Helper()
	dir := filepath.Join("..", "modelapi", "gemini", "testdata", "gemini-cli-0.61.0")
	for i, n := range []string{"1", "2"} {
		var err error
		if reqs[i], err = os.ReadFile(filepath.Join(dir, "turn"+n+".json")); err != nil {
			t.Fatal(err)
		}
		if answers[i], err = os.ReadFile(filepath.Join(dir, "turn"+n+".sse")); err != nil {
			t.Fatal(err)
		}
	}
	return reqs, answers
}

const geminiStream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"

// postGemini sends body as gemini-cli does (its key in x-goog-api-key).
func postGemini(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", "AIzaSy-client-secret-123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestGeminiRecordReplay: gemini-cli's real requests through the proxy to
// a Gemini upstream are recorded as one conversation (the call's
// synthesized id pairs it with its result, though gemini-cli put its own
// id on both), with tokens, cache and cost; a replay serves the recorded
// bytes with no upstream; a replay of the log alone (no artifacts)
// renders answers in Gemini's shape that read back as the recorded ones.
func TestGeminiRecordReplay(t *testing.T) {
	reqs, answers := geminiCLI(t)
	up := newUpstream(t, reply{200, "text/event-stream", answers[0], false}, reply{200, "text/event-stream", answers[1], false})
	b, err := NewUpstream(up.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, mem, base := startProxy(t, Config{Backend: b})
	var got [2][]byte
	for i := range reqs {
		status, _, out := postGemini(t, base+geminiStream, string(reqs[i]))
		if status != 200 || string(out) != string(answers[i]) {
			t.Fatalf("call %d: status %d, bytes differ from the upstream's:\n%s", i+1, status, out)
		}
		got[i] = out
	}
	if up.paths[0] != geminiStream || up.headers[0].Get("X-Goog-Api-Key") != "AIzaSy-client-secret-123456789" {
		t.Errorf("upstream saw %s with key %q", up.paths[0], up.headers[0].Get("X-Goog-Api-Key"))
	}
	evs := only(t, srv, mem)
	if k := kinds(evs); k != "session_started user_message assistant_message model_call tool_result assistant_message model_call" {
		t.Fatalf("recorded %s", k)
	}
	h, call, res, mc := evs[0], evs[2], evs[4], evs[3]
	if h.Provider != "gemini" || h.Model != "gemini-2.5-flash" || !strings.Contains(h.System, "Gemini CLI") {
		t.Errorf("header %s/%s", h.Provider, h.Model)
	}
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != gemini.CallID(1, 0) || call.ToolCalls[0].Name != "list_directory" {
		t.Errorf("tool call %+v", call.ToolCalls)
	}
	if res.CallID != gemini.CallID(1, 0) || res.Tool != "list_directory" || !strings.HasPrefix(res.Output, "Directory listing for ") {
		t.Errorf("tool result %+v", res)
	}
	if mc.Provider != "gemini" || mc.InputTokens != 1200 || mc.CacheReadInputTokens != 600 || mc.OutputTokens != 12 || mc.FinishReason != "tool_calls" || mc.CostUSD <= 0 {
		t.Errorf("model_call %+v", mc)
	}
	if a := mustAttr(t, mc, "api"); a != gemini.APIName {
		t.Errorf("api %s", a)
	}
	if strings.Contains(string(must(json.Marshal(evs))), "AIzaSy-client-secret") {
		t.Error("the client's key was recorded")
	}

	rec := mem.Get(mem.IDs()[0])
	for _, tc := range []struct {
		name      string
		artifacts bool
	}{{"recorded bytes", true}, {"rendered from events", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ReplayConfig{Events: rec.Events()}
			if tc.artifacts {
				cfg.Artifacts = rec.ReadArtifact
			}
			r, err := NewReplay(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, _, base := startProxy(t, Config{Backend: r})
			for i := range reqs {
				status, hdr, out := postGemini(t, base+geminiStream, string(reqs[i]))
				if status != 200 {
					t.Fatalf("call %d: %d %s", i+1, status, out)
				}
				if tc.artifacts && string(out) != string(got[i]) {
					t.Fatalf("call %d: replayed bytes differ:\n%s\nwant\n%s", i+1, out, got[i])
				}
				if !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
					t.Errorf("call %d: content type %q", i+1, hdr.Get("Content-Type"))
				}
				want, _ := gemini.Parse(got[i], true, "gemini-2.5-flash", 1+2*i)
				resp, err := gemini.Parse(out, true, "gemini-2.5-flash", 1+2*i)
				if err != nil || resp.Text != want.Text || len(resp.ToolCalls) != len(want.ToolCalls) || resp.FinishReason != want.FinishReason ||
					resp.InputTokens != want.InputTokens || resp.OutputTokens != want.OutputTokens || resp.CacheReadTokens != want.CacheReadTokens {
					t.Errorf("call %d: replayed answer %+v %v, want %+v", i+1, resp, err, want)
				}
			}
			if r.Diverged() {
				t.Errorf("findings %+v", r.Findings())
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestGeminiScriptedAndErrors: the scripted model answers Gemini's
// routes in Gemini's shape (generateContent, and streamGenerateContent
// with and without alt=sse), countTokens is answered locally, and the
// proxy's own errors (an unknown method, a divergence) come in Gemini's
// error envelope, which the Gen AI SDK reads.
func TestGeminiScriptedAndErrors(t *testing.T) {
	reqs, _ := geminiCLI(t)
	for _, tc := range []struct {
		path string
		sse  bool
	}{
		{"/v1beta/models/gemini-2.5-flash:generateContent", false},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", true},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", false},
	} {
		_, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
		status, hdr, out := postGemini(t, base+"/s/g1"+tc.path, string(reqs[0]))
		if status != 200 {
			t.Fatalf("%s: %d %s", tc.path, status, out)
		}
		resp, err := gemini.Parse(out, strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream"), "x", 1)
		if err != nil || resp.Text != "Let me look." || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" || resp.FinishReason != provider.FinishToolCalls {
			t.Errorf("%s: %+v %v\n%s", tc.path, resp, err, out)
		}
		if got := strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream"); got != tc.sse {
			t.Errorf("%s: content type %q", tc.path, hdr.Get("Content-Type"))
		}
		if mc := lastOf(mem.Get("g1").Events(), session.KindModelCall); mc.Provider != "gemini" || mc.Model != "gemini-2.5-flash" || mc.Error != "" {
			t.Errorf("%s: model_call %+v", tc.path, mc)
		}
	}

	_, _, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
	status, _, out := postGemini(t, base+"/v1beta/models/gemini-2.5-flash:countTokens", string(reqs[0]))
	if status != 200 || !strings.Contains(string(out), `"totalTokens":`) {
		t.Errorf("countTokens: %d %s", status, out)
	}
	status, _, out = postGemini(t, base+"/v1beta/models/gemini-2.5-flash:embedContent", string(reqs[0]))
	e := gemini.ParseError(status, nil, out)
	if status != 404 || e.Type != "not_found_error" || !strings.Contains(e.Message, ":streamGenerateContent") || !strings.Contains(string(out), `"status":"NOT_FOUND"`) {
		t.Errorf("unknown method: %d %s", status, out)
	}

	// A replay asked something else: a 400 replay_divergence in Gemini's shape.
	rec := &MemSink{ID: "r"}
	r, err := NewReplay(ReplayConfig{Events: []session.Event{
		{Kind: session.KindSessionStarted, Provider: "gemini", Model: "gemini-2.5-flash"},
		{Kind: session.KindUserMessage, Text: "something else"},
		{Kind: session.KindAssistantMessage, Text: "hi"},
		{Kind: session.KindModelCall, Provider: "gemini", Model: "gemini-2.5-flash", Attrs: json.RawMessage(`{"api":"gemini","stream":true}`)},
	}, Artifacts: rec.ReadArtifact})
	if err != nil {
		t.Fatal(err)
	}
	_, _, base = startProxy(t, Config{Backend: r})
	status, _, out = postGemini(t, base+geminiStream, string(reqs[0]))
	e = gemini.ParseError(status, nil, out)
	if status != 400 || e.Type != session.ErrorTypeReplayDivergence || !strings.Contains(string(out), `"status":"INVALID_ARGUMENT"`) {
		t.Errorf("divergence: %d %s", status, out)
	}
}

// TestGeminiArrayStreamReplay: streamGenerateContent without alt=sse
// answers a JSON array (application/json), not SSE: the call streamed
// though its answer is no SSE, and its replay serves the recorded bytes
// with their content type rather than diverging on "stream".
func TestGeminiArrayStreamReplay(t *testing.T) {
	reqs, _ := geminiCLI(t)
	answer := []byte(`[{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"index":0}]},` + "\r\n" +
		`{"candidates":[{"content":{"role":"model","parts":[{"text":" there."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2,"totalTokenCount":7}}]`)
	up := newUpstream(t, reply{200, "application/json; charset=UTF-8", answer, false})
	b, err := NewUpstream(up.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	const path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	srv, mem, base := startProxy(t, Config{Backend: b})
	if status, _, out := postGemini(t, base+path, string(reqs[0])); status != 200 || string(out) != string(answer) {
		t.Fatalf("record: %d %s", status, out)
	}
	evs := only(t, srv, mem)
	if am := lastOf(evs, session.KindAssistantMessage); am.Text != "Hello there." {
		t.Errorf("recorded answer %q", am.Text)
	}
	rec := mem.Get(mem.IDs()[0])
	r, err := NewReplay(ReplayConfig{Events: rec.Events(), Artifacts: rec.ReadArtifact})
	if err != nil {
		t.Fatal(err)
	}
	_, _, base = startProxy(t, Config{Backend: r})
	status, hdr, out := postGemini(t, base+path, string(reqs[0]))
	if status != 200 || string(out) != string(answer) || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Errorf("replay: %d %q %s", status, hdr.Get("Content-Type"), out)
	}
	if r.Diverged() {
		t.Errorf("findings %+v", r.Findings())
	}
}
