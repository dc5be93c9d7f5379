package proxy

import (
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
