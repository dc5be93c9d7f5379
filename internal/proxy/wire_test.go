package proxy

import (
	"github.com/agentctl/agentctl/internal/modelapi"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestUnknownWireRefused: a call whose api no registered wire speaks (a
// log written by a newer agentctl, say) is an error naming the known ones,
// never read as OpenAI or Anthropic. Before the registry, parseAnswer's
// default branch read any such answer as Anthropic's.
func TestUnknownWireRefused(t *testing.T) {
	body := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	h := http.Header{"Content-Type": {"application/json"}}
	c := &Call{API: "gemnii", Model: "m", Body: []byte(`{"model":"m"}`)}
	if _, err := parseAnswer(c, 200, body, h); err == nil || !strings.Contains(err.Error(), `"gemnii"`) || !strings.Contains(err.Error(), "chat_completions") {
		t.Errorf("parseAnswer(api gemnii) = %v, want an error naming it and the known apis", err)
	}
	if err := parseCall(c); err == nil || !strings.Contains(err.Error(), `"gemnii"`) {
		t.Errorf("parseCall(api gemnii) = %v, want an error naming it", err)
	}
	if got := string(errorBody("gemnii", "api_error", "boom")); got != `{"error":{"message":"boom","type":"api_error"}}` {
		t.Errorf("errorBody(gemnii) = %s, want the neutral envelope", got)
	}
}

// TestUnroutableErrorShape: a request no route serves is answered in the
// shape of the wire its path or headers claim, else in the neutral
// envelope, not in a guessed provider's (before, OpenAI's).
func TestUnroutableErrorShape(t *testing.T) {
	_, _, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
	for _, tc := range []struct {
		name, path string
		header     http.Header
		want       string
	}{
		{"anthropic path", "/v1/messages/batches", nil, `"type":"not_found_error"},"type":"error"}`},
		{"anthropic headers", "/v1/complete", http.Header{"Anthropic-Version": {"2023-06-01"}}, `"type":"not_found_error"},"type":"error"}`},
		{"openai path", "/v1/chat/completions/x", nil, `"param":null,"type":"not_found_error"}}`},
		{"nobody's", "/v1/complete", nil, `{"error":{"message":"agentctl proxy: no such endpoint: POST /v1/complete`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, base+tc.path, strings.NewReader(`{}`))
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), tc.want) {
				t.Errorf("POST %s = %d %s, want 404 containing %s", tc.path, resp.StatusCode, b, tc.want)
			}
			if tc.name == "nobody's" && (strings.Contains(string(b), `"param"`) || strings.Contains(string(b), `"type":"error"}`)) {
				t.Errorf("POST %s = %s: a guessed provider's shape", tc.path, b)
			}
		})
	}
}

// pathModelWire is a test wire that names the model in its path, as
// Gemini's does: Chat Completions bodies under another route.
type pathModelWire struct{ modelapi.Wire }

func (pathModelWire) Routes() []modelapi.Route {
	return []modelapi.Route{{Method: http.MethodPost, Path: "/vtest/models/{model}:chat", Op: modelapi.OpGenerate, API: "path_model_test"}}
}

func (w pathModelWire) ParseRequest(c *modelapi.Call) error {
	err := w.Wire.ParseRequest(c)
	c.Model = c.Vars["model"]
	return err
}

func (pathModelWire) SetModel(path string, body []byte, model string) (string, []byte, error) {
	return "/vtest/models/" + model + ":chat", body, nil
}

func init() {
	chat, _, err := modelapi.LookupWire("chat_completions")
	if err != nil {
		panic(err)
	}
	modelapi.Register(modelapi.API{Name: "path_model_test", Provider: "pathmodeltest", Wire: pathModelWire{chat.Wire}})
}

// TestWithModelInPath: a fork's --model reaches a wire that names the
// model in its path through its ModelSetter (before, only the body's
// "model" was rewritten, which such a wire does not read), and the
// recorded call carries the model from the path.
func TestWithModelInPath(t *testing.T) {
	up := newUpstream(t, reply{200, "text/event-stream", corpusFile(t, oaDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin"), false})
	b, err := NewUpstream(up.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, mem, base := startProxy(t, Config{Backend: WithModel(b, "m2")})
	status, _ := post(t, base+"/vtest/models/m1:chat", chatBody(true))
	if status != 200 {
		t.Fatalf("status = %d", status)
	}
	if got := up.paths[0]; got != "/vtest/models/m2:chat" {
		t.Errorf("upstream saw %s, want the fork's model in the path", got)
	}
	evs := only(t, srv, mem)
	if evs[0].Model != "m1" {
		t.Errorf("session header model = %q, want the client's m1 (from the path)", evs[0].Model)
	}
}
