package otelsession

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// chatRequests rebuilds the app's requests of a run from the model
// server's recording (the proxy's session): at each model_call, the
// conversation so far in OpenAI's chat format, with the tools it offered.
func chatRequests(t *testing.T, truth []session.Event) [][]byte {
	t.Helper()
	var tools []string
	var ha struct {
		Tools []string `json:"tools"`
	}
	_ = json.Unmarshal(truth[0].Attrs, &ha)
	tools = ha.Tools
	var defs []any
	for _, n := range tools {
		defs = append(defs, map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}})
	}
	var out [][]byte
	for i, e := range truth {
		if e.Kind != session.KindModelCall {
			continue
		}
		// The request is what came before the answer to it.
		before := truth[:i]
		for len(before) > 0 && before[len(before)-1].Kind == session.KindAssistantMessage {
			before = before[:len(before)-1]
		}
		var msgs []any
		for _, m := range session.Project(before, truth[0].System) {
			w := map[string]any{"role": m.Role, "content": m.Content}
			if m.ToolCallID != "" {
				w["tool_call_id"] = m.ToolCallID
			}
			var calls []any
			for _, tc := range m.ToolCalls {
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": string(tc.Args)}})
			}
			if calls != nil {
				w["tool_calls"] = calls
			}
			msgs = append(msgs, w)
		}
		body, _ := json.Marshal(map[string]any{"model": truth[0].Model, "messages": msgs, "tools": defs})
		out = append(out, body)
	}
	return out
}

// TestProxyReplay serves each collected session with the proxy's replay
// backend (agentctl proxy --replay) to the app's requests of the same
// run: every call is answered with no model server at all, the answers
// are the recorded ones, and the replay's own recording has the request
// digests of the collected session (the app's requests match the
// collected conversation).
func TestProxyReplay(t *testing.T) {
	for _, em := range emitters {
		t.Run(em.name, func(t *testing.T) {
			dir := filepath.Join(captures, em.name, "http-json")
			_, got := ingestAll(t, loadCapture(t, dir))
			var collected []session.Event
			for _, evs := range got {
				collected = evs
			}
			truth := readJSONL(t, filepath.Join(dir, "model-server.jsonl"))
			r, err := proxy.NewReplay(proxy.ReplayConfig{Events: collected})
			if err != nil {
				t.Fatal(err)
			}
			replays := recorder.Store{Root: t.TempDir()}
			srv, err := proxy.New(proxy.Config{Backend: r, Open: proxy.StoreSessions{Store: replays, Options: recorder.Options{NoSync: true}}.Open})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			for i, body := range chatRequests(t, truth) {
				resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("call %d: %d %s", i+1, resp.StatusCode, b)
				}
			}
			if r.Diverged() {
				t.Fatalf("replay diverged: %+v", r.Findings())
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			ids, _ := replays.IDs()
			if len(ids) != 1 {
				t.Fatalf("%d replay sessions, want 1", len(ids))
			}
			replayed, _, err := replays.Load(ids[0])
			if err != nil {
				t.Fatal(err)
			}
			want := truth
			if em.noToolDefs {
				want = withoutDigests(truth)
				replayed = withoutDigests(replayed)
			}
			// The proxy renders an answer it has no recorded bytes of under
			// a response id of its own.
			compareConversation(t, withoutResponseIDs(replayed), withoutResponseIDs(want))
			// And the collected session's digests are the replay's.
			var cd, rd []string
			for _, e := range collected {
				if e.Kind == session.KindModelCall && e.RequestDigest != "" {
					cd = append(cd, e.RequestDigest)
				}
			}
			for _, e := range replayed {
				if e.Kind == session.KindModelCall && e.RequestDigest != "" {
					rd = append(rd, e.RequestDigest)
				}
			}
			if !em.noToolDefs && js(cd) != js(rd) {
				t.Errorf("collected digests %v, replayed requests' %v", cd, rd)
			}
		})
	}
}

func withoutResponseIDs(evs []session.Event) []session.Event {
	out := append([]session.Event(nil), evs...)
	for i := range out {
		out[i].ResponseID = ""
	}
	return out
}
