package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
)

// TestUpstreamPaths: the path a request reaches the provider at is the
// proxy's route below the upstream's base path, once; a model id that
// climbs out of /v1/models (.., encoded or not, an encoded slash) is
// refused before anything is sent, so the client's key never reaches
// another path of the provider's host.
func TestUpstreamPaths(t *testing.T) {
	models := `{"object":"list","data":[]}`
	for _, tc := range []struct {
		name, base, method, path string
		status                   int
		want                     string // what the upstream saw; "" nothing
	}{
		{"list", "/v1", "GET", "/v1/models", 200, "/v1/models"},
		{"one model", "/v1", "GET", "/v1/models/gpt-4o", 200, "/v1/models/gpt-4o"},
		{"one model, session prefix", "", "GET", "/s/abc/v1/models/claude-sonnet-4-5", 200, "/v1/models/claude-sonnet-4-5"},
		{"fine-tuned id", "/v1", "GET", "/v1/models/ft:gpt-4o-mini:acme::abc123", 200, "/v1/models/ft:gpt-4o-mini:acme::abc123"},
		{"base path kept", "/openai/v1", "GET", "/v1/models/gpt-4o", 200, "/openai/v1/models/gpt-4o"},
		{"chat with query", "/v1", "POST", "/v1/chat/completions?api-version=1", 200, "/v1/chat/completions?api-version=1"},
		{"dot dot", "/v1", "GET", "/v1/models/../../admin/keys", 404, ""},
		{"dot dot at the end", "/v1", "GET", "/v1/models/..", 404, ""},
		{"encoded dot dot", "/v1", "GET", "/v1/models/%2e%2e/%2e%2e/admin", 404, ""},
		{"encoded slash", "/v1", "GET", "/v1/models/..%2f..%2fadmin", 404, ""},
		{"encoded slash in an id", "/v1", "GET", "/v1/models/a%2Fb", 404, ""},
		{"subpath", "/v1", "GET", "/v1/models/gpt-4o/versions", 404, ""},
		{"empty id", "/v1", "GET", "/v1/models/", 404, ""},
		{"backslash", "/v1", "GET", "/v1/models/..%5c..%5cadmin", 404, ""},
		{"control byte", "/v1", "GET", "/v1/models/a%00b", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, reply{status: 200, ctype: "application/json", body: []byte(models)})
			u, err := NewUpstream(up.URL+tc.base, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _, base := startProxy(t, Config{Backend: u})
			var body io.Reader
			if tc.method == "POST" {
				body = strings.NewReader(chatBody(false))
			}
			req, err := http.NewRequest(tc.method, base+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer sk-client-secret-123456789")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.status, b)
			}
			up.mu.Lock()
			defer up.mu.Unlock()
			var got string
			if len(up.paths) > 0 {
				got = up.paths[0]
			}
			if got != tc.want || len(up.paths) > 1 {
				t.Errorf("upstream saw %q, want %q", up.paths, tc.want)
			}
		})
	}
}

// TestBrowserRequestsRefused: a web page the user visits can reach a
// loopback proxy (a form's text/plain POST, a fetch, DNS rebinding with
// a foreign Host); the proxy serves no pages, so a request a browser
// marks as coming from one, or naming a host that is not loopback, is
// refused (403) unless a token is required, which such a page cannot
// know. The SDKs send none of these headers.
func TestBrowserRequestsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		token   string
		host    string
		headers map[string]string
		status  int
		says    string
	}{
		{"sdk", "", "", map[string]string{"Sec-Fetch-Mode": "cors", "anthropic-dangerous-direct-browser-access": "true"}, 200, ""},
		{"localhost", "", "localhost:4141", nil, 200, ""},
		{"ipv6 loopback", "", "[::1]:4141", nil, 200, ""},
		{"no port", "", "127.0.0.1", nil, 200, ""},
		{"origin", "", "", map[string]string{"Origin": "https://evil.example"}, 403, "Origin"},
		{"origin null", "", "", map[string]string{"Origin": "null"}, 403, "Origin"},
		{"loopback origin", "", "", map[string]string{"Origin": "http://127.0.0.1:8000"}, 403, "Origin"},
		{"cross-site fetch", "", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "Sec-Fetch-Site"},
		{"same-site fetch", "", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, "Sec-Fetch-Site"},
		{"same-origin fetch", "", "", map[string]string{"Sec-Fetch-Site": "same-origin"}, 403, "Sec-Fetch-Site"},
		{"typed url", "", "", map[string]string{"Sec-Fetch-Site": "none"}, 200, ""},
		{"dns rebinding", "", "rebind.evil.example:4141", nil, 403, "Host"},
		{"lan address", "", "192.168.1.20:4141", nil, 403, "Host"},
		{"loopback-looking name", "", "127.0.0.1.evil.example", nil, 403, "Host"},
		{"token lets a foreign host in", "s3cret", "proxy.internal:4141", map[string]string{"X-Agentctl-Token": "s3cret"}, 200, ""},
		{"token lets an origin in", "s3cret", "", map[string]string{"X-Agentctl-Token": "s3cret", "Origin": "https://app.internal"}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), ""), Token: tc.token})
			req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(messagesBody(false)))
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("X-Api-Key", "sk-ant-test")
			if tc.host != "" {
				req.Host = tc.host
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			waitIdle(t, srv)
			if tc.status == 403 {
				if !strings.Contains(string(b), tc.says) || !strings.Contains(string(b), "--token") || !strings.Contains(string(b), `"type":"permission_error"`) {
					t.Errorf("refusal %s: want the reason (%s), the way out (--token), in the provider's error shape", b, tc.says)
				}
				if ids := mem.IDs(); len(ids) != 0 {
					t.Errorf("a refused request recorded sessions %v", ids)
				}
			}
		})
	}
	// A real SDK client still works.
	_, _, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
	acl := anthropicClient(base)
	m, err := acl.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Read the readme."))}})
	if err != nil || len(m.Content) == 0 {
		t.Fatalf("anthropic SDK through the proxy: %+v, %v", m, err)
	}
	ocl := openaiClient(base)
	if _, err := ocl.Models.List(context.Background()); err != nil {
		t.Fatalf("openai SDK through the proxy: %v", err)
	}
}
