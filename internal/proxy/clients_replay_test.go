package proxy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/replaymatch"
)

// TestRealClientRequestsMatch runs the matcher a replay runs on the real
// requests of real clients (internal/replaymatch/testdata/<client>, see
// its README: each client recorded from two folders with two homes, then
// with one changed tool result and one changed prompt), parsed as the
// proxy parses them: the same program from another folder matches at
// each turn, whether or not the matcher knows the recorded folder; under
// --strict it does not (the normalisers are what make it match); a
// changed tool result or prompt is a difference whose excerpt shows the
// changed text.
func TestRealClientRequestsMatch(t *testing.T) {
	clients := []struct {
		dir string
		api API
	}{
		{"codex", "responses"},
		{"claude-code", "messages"},
		{"opencode", "chat_completions"},
		{"openai-agents", "responses"},
	}
	for _, cl := range clients {
		t.Run(cl.dir, func(t *testing.T) {
			base := filepath.Join("..", "replaymatch", "testdata", cl.dir)
			var dirs struct{ A, B, Tool, Prompt string }
			b, err := os.ReadFile(filepath.Join(base, "dirs.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &dirs); err != nil {
				t.Fatal(err)
			}
			req := func(name string) replaymatch.Request {
				t.Helper()
				body, err := os.ReadFile(filepath.Join(base, name+".json"))
				if err != nil {
					t.Fatal(err)
				}
				c := &Call{API: cl.api, Body: body}
				if err := parseCall(c); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return matchRequest(c)
			}
			for _, turn := range []string{"turn1", "turn2"} {
				a, b := req("A-"+turn), req("B-"+turn)
				for _, env := range []replaymatch.Env{{ReplayDir: dirs.B}, {RecordedDir: dirs.A, ReplayDir: dirs.B}} {
					if d, _ := replaymatch.Compare(a, b, replaymatch.Options{Env: env}); d != nil {
						t.Errorf("%s from another folder (%+v): %s", turn, env, d.Detail())
					}
				}
				d, _ := replaymatch.Compare(a, b, replaymatch.Options{Strict: true})
				if (d == nil) != (cl.dir == "openai-agents") {
					t.Errorf("%s under --strict: difference %v; only the Agents SDK program (no volatile content) matches", turn, d)
				}
			}
			for _, ch := range []struct{ recorded, changed, dir, want string }{
				{"A-turn2", "tool-turn2", dirs.Tool, "rejects all mail"},
				{"A-turn1", "prompt-turn1", dirs.Prompt, "What language"},
			} {
				d, _ := replaymatch.Compare(req(ch.recorded), req(ch.changed), replaymatch.Options{Env: replaymatch.Env{RecordedDir: dirs.A, ReplayDir: ch.dir}})
				if d == nil {
					t.Errorf("%s matches the recording", ch.changed)
				} else if !strings.Contains(d.Replayed, ch.want) || d.Field == "system" {
					t.Errorf("%s: the difference is %s, want the message with %q", ch.changed, d.Detail(), ch.want)
				}
			}
		})
	}
}
