package replaymatch_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/replaymatch"
)

// clientCaptures are the real clients whose request bodies testdata/<dir>
// holds (capture.sh recorded them through agentctl proxy; README.md there
// says from which version), with the normalisers written for each. A
// client with none (the OpenAI Agents SDK program: its requests hold only
// what the program itself puts there) must come out untouched.
var clientCaptures = []struct {
	dir         string
	normalisers []string
}{
	{"codex", []string{"codex-environment-context", "codex-exec-output-header", "codex-skill-roots"}},
	{"claude-code", []string{"claude-code-environment", "claude-code-memory-dir", "claude-code-billing-header"}},
	{"opencode", []string{"opencode-env"}},
	{"openai-agents", nil},
}

// TestClientNormalisers: for each real client, the requests it sent from
// two folders with two homes (testdata/<client>/A-* and B-*) differ, and
// after the table's normalisers they are the same conversation; each of
// the client's own normalisers changed something in them; a changed tool
// result (tool-turn2) and a changed prompt (prompt-turn1) still differ
// after normalising, at that text.
func TestClientNormalisers(t *testing.T) {
	known := map[string]replaymatch.Normaliser{}
	for _, n := range replaymatch.Normalisers() {
		known[n.Name] = n
	}
	for _, c := range clientCaptures {
		t.Run(c.dir, func(t *testing.T) {
			var dirs struct{ A, B, Tool, Prompt string }
			readJSON(t, filepath.Join("testdata", c.dir, "dirs.json"), &dirs)
			// The workspace-path normaliser knows the two folders only
			// when the matcher does: the client's own normalisers must
			// do without them.
			for _, env := range []replaymatch.Env{{}, {RecordedDir: dirs.A, ReplayDir: dirs.B}} {
				changed := map[string]int{}
				for _, turn := range []string{"turn1", "turn2"} {
					a, b := conversation(t, c.dir, "A-"+turn), conversation(t, c.dir, "B-"+turn)
					if slices.Equal(a, b) != (c.normalisers == nil) {
						t.Errorf("%s: the raw requests from two folders are equal: %v; want %v (the capture shows the volatile spans)", turn, slices.Equal(a, b), c.normalisers == nil)
					}
					na, changedA := normaliseAll(a, env)
					nb, _ := normaliseAll(b, env)
					if i := firstDiff(na, nb); i >= 0 {
						t.Errorf("%s, %+v: normalised, the requests from two folders still differ at text %d:\nA: %q\nB: %q", turn, env, i, at(na, i), at(nb, i))
					}
					if again, _ := normaliseAll(na, env); !slices.Equal(again, na) {
						t.Errorf("%s: normalising twice changes the text again", turn)
					}
					for name, n := range changedA {
						changed[name] += n
					}
				}
				for _, want := range c.normalisers {
					if _, ok := known[want]; !ok {
						t.Fatalf("normaliser %s is not registered", want)
					}
					if changed[want] == 0 {
						t.Errorf("normaliser %s changed nothing in %s's requests", want, c.dir)
					}
				}
				for name, n := range changed {
					if c.normalisers == nil && n > 0 {
						t.Errorf("normaliser %s changed %d spans of a program that has no volatile content", name, n)
					}
				}
			}
			for _, ch := range []struct {
				name, recorded, dir, want string
			}{
				{"tool-turn2", "A-turn2", dirs.Tool, "rejects all mail"},
				{"prompt-turn1", "A-turn1", dirs.Prompt, "What language is this service written in?"},
			} {
				env := replaymatch.Env{RecordedDir: dirs.A, ReplayDir: ch.dir}
				na, _ := normaliseAll(conversation(t, c.dir, ch.recorded), env)
				nc, _ := normaliseAll(conversation(t, c.dir, ch.name), env)
				i := firstDiff(na, nc)
				if i < 0 {
					t.Errorf("%s: the changed request is the recorded one after normalising", ch.name)
					continue
				}
				if !strings.Contains(at(nc, i), ch.want) {
					t.Errorf("%s: the first difference is text %d %q, want the changed text (%q)", ch.name, i, at(nc, i), ch.want)
				}
			}
		})
	}
}

// conversation is the text of a captured request that a replay compares:
// every string under a key that holds conversation text in the three wire
// formats (system and instructions first, then messages' content and
// text, tool results' output, tool calls' arguments), keys in order.
// Ids, metadata and tool definitions are left out.
func conversation(t *testing.T, client, name string) []string {
	t.Helper()
	var body any
	readJSON(t, filepath.Join("testdata", client, name+".json"), &body)
	var out []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			// The system text first, as the matcher compares it.
			slices.SortFunc(keys, func(a, b string) int {
				if sa, sb := a == "system" || a == "instructions", b == "system" || b == "instructions"; sa != sb {
					if sa {
						return -1
					}
					return 1
				}
				return strings.Compare(a, b)
			})
			for _, k := range keys {
				if k == "tools" || k == "metadata" || k == "client_metadata" {
					continue
				}
				walk(v[k], k)
			}
		case []any:
			for _, e := range v {
				walk(e, key)
			}
		case string:
			switch key {
			case "system", "instructions", "content", "text", "output", "arguments":
				out = append(out, v)
			}
		}
	}
	walk(body, "")
	if len(out) == 0 {
		t.Fatalf("%s/%s holds no conversation text", client, name)
	}
	return out
}

// normaliseAll applies the whole table to each text, as a replay does, and
// counts what each normaliser changed.
func normaliseAll(texts []string, env replaymatch.Env) ([]string, map[string]int) {
	out := make([]string, len(texts))
	changed := map[string]int{}
	for i, s := range texts {
		for _, n := range replaymatch.Normalisers() {
			var k int
			s, k = n.Apply(s, env)
			changed[n.Name] += k
		}
		out[i] = s
	}
	return out, changed
}

func firstDiff(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
