package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// TestLoadErrors: every malformed spec is refused with file:line and a
// message that says what to change.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "name: x\nmodel: {provider: scripted, id: s, script: m.yaml}\nprompt: hi\naprovals: []\n", `:4: unknown key "aprovals"`},
		{"wrong type", "name: x\nmodel: {provider: scripted, id: s, script: m.yaml}\nprompt: hi\nretries: lots\n", `:4: "lots" is a str, but a whole number is expected here`},
		{"bad duration", "name: x\nmodel: {provider: scripted, id: s, script: m.yaml}\nprompt: hi\nbudget: {max_wall: soon}\n", `:4: "soon" is not a duration`},
		{"unknown provider", "name: x\nmodel: {provider: gpt, id: s}\nprompt: hi\n", `:2: model.provider "gpt" is not one of`},
		{"no script", "name: x\nmodel: {provider: scripted, id: s}\nprompt: hi\n", `model.script is required`},
		{"no prompt", "name: x\nmodel: {provider: openai, id: gpt-4o}\n", `prompt is required`},
		{"bad mode", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\nmode: root\n", `:4: mode "root" is not read-only or write`},
		{"write tool in read-only", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\nmode: read-only\ntools: [read_file, bash]\n", `:5: tool "bash" is not available in read-only mode`},
		{"unknown custom key", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\ncustom_tools:\n  - name: t\n    comand: [x]\n", `:6: unknown key "comand"`},
		{"custom tool clash", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\ncustom_tools:\n  - {name: bash, command: [x]}\n", `tool name "bash" is already taken`},
		{"threshold", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\ncompaction: {threshold: 3}\n", `:4: compaction.threshold 3 must be between 0 and 1`},
		{"bad glob", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals:\n  - tool: write_file\n    path: \"migrations/[x\"\n", `:6: approval path "migrations/[x" is not a valid glob`},
		{"bad brace", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals: [{tool: write_file, path: \"{a,b\"}]\n", `:4: approval path "{a,b" is not a valid glob`},
		{"absolute glob", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals: [{tool: write_file, path: /migrations/**}]\n", `:4: approval path "/migrations/**" is absolute; write it relative to the workspace, as "migrations/**"`},
		{"dot-slash glob", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals: [{tool: write_file, path: ./migrations/**}]\n", `:4: approval path "./migrations/**" is not a clean relative path (./, .., doubled or trailing /); write it as "migrations/**"`},
		{"trailing-slash glob", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals: [{tool: write_file, path: migrations/}]\n", `write it as "migrations"`},
		{"doubled-slash glob", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals: [{tool: write_file, path: a//b}]\n", `write it as "a/b"`},
		{"glob out of the workspace", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals: [{tool: write_file, path: ../x/**}]\n", `approval path "../x/**" leaves the workspace`},
		{"path rule for bash", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals: [{tool: bash, path: migrations/**}]\n", `:4: an approval rule for bash cannot have a path`},
		{"rule for an unknown tool", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\napprovals:\n  - tool: wirte_file\n", `:5: approval rule names tool "wirte_file", which is neither a built-in nor one of custom_tools`},
		{"path rule for a custom tool without path", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\ncustom_tools: [{name: deploy, command: [d]}]\napprovals: [{tool: deploy, path: prod/**}]\n", `:5: custom tool "deploy" has no path parameter`},
		{"side effects in read-only", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\nmode: read-only\ncustom_tools:\n  - name: send_email\n    command: [s]\n    side_effects: true\n", `:8: custom tool "send_email" has side_effects: true, and read-only mode offers no tool with side effects`},
		{"undeclared side effects in read-only", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\nmode: read-only\ncustom_tools:\n  - name: lookup_order\n    command: [s]\n", `:6: custom tool "lookup_order" must say side_effects: false to be offered in read-only mode`},
		{"bad pids", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\nsandbox: {pids: 0}\n", `:4: sandbox.pids "0" is not a process count`},
		{"relative read_only", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\nsandbox: {read_only: [tools]}\n", `:4: sandbox.read_only "tools" must be an absolute folder`},
		{"on_truncated value", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\non_truncated: ignore\n", `:4: on_truncated "ignore" is not fail, continue or evaluate`},
		{"on_truncated evaluate without checks", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\non_truncated: evaluate\n", `:4: on_truncated: evaluate needs done checks`},
		{"negative price", "name: x\nmodel: {provider: openai, id: g, price: {input: -1, output: 2}}\nprompt: hi\n", `model.price: prices must not be negative`},
		{"unknown price key", "name: x\nmodel: {provider: openai, id: g, price: {in: 1}}\nprompt: hi\n", `unknown key "in"`},
		{"bad tag key", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\ntags:\n  env: ci\n  Team Name: a\n", `:6: tag key "Team Name" must be 1 to 64 characters of a-z, 0-9`},
		{"long tag value", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\ntags: {env: " + strings.Repeat("v", 257) + "}\n", `:4: tag env: value is 257 bytes, at most 256`},
		{"tag not a string map", "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\ntags: [env=ci]\n", `:4:`},
		{"empty", "", "the file is empty"},
		{"not yaml", "name: [x\n", "did not find expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "agent.yaml")
			os.WriteFile(p, []byte(tt.yaml), 0o644)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "agent.yaml") {
				t.Errorf("Load = %v, want an error naming the file and containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadResolvesPathsAndDefaults(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agents", "a.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("name: a\nmodel: {provider: scripted, id: s, script: ../models/m.yaml}\nprompt: hi\nworkspace: {from: ../ws}\ncustom_tools:\n  - {name: c, command: [./c.sh], lookup: [./c.sh, --lookup]}\n"), 0o644)
	sp, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		sp.Model.Script:              filepath.Join(dir, "models", "m.yaml"),
		sp.Workspace.From:            filepath.Join(dir, "ws"),
		sp.CustomTools[0].Command[0]: filepath.Join(dir, "agents", "c.sh"),
		sp.CustomTools[0].Lookup[0]:  filepath.Join(dir, "agents", "c.sh"),
		sp.Mode:                      "write",
	}
	for got, want := range checks {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if sp.Compaction.Threshold != DefaultThreshold || sp.MaxTurns != DefaultMaxTurns || string(sp.CustomTools[0].Parameters) != `{"type":"object"}` {
		t.Errorf("defaults not applied: %+v", sp)
	}
	back, err := FromHeader(sp.JSON())
	if err != nil || back.Model.Script != sp.Model.Script || back.Name != "a" {
		t.Errorf("FromHeader(JSON) = %+v, %v", back, err)
	}
}

// TestLoadAcceptsGoodRules: the forms the checks above must not refuse.
func TestLoadAcceptsGoodRules(t *testing.T) {
	for _, y := range []string{
		"approvals: [{tool: write_file, path: migrations/**}, {tool: edit_file, path: \"**/*.{sql,go}\"}, {tool: grep, path: \"db/[a-z]?/x\"}, {tool: bash}]\n",
		"custom_tools:\n  - {name: deploy, command: [d], side_effects: true, parameters: {type: object, properties: {path: {type: string}}}}\napprovals: [{tool: deploy, path: prod/**}]\n",
		"mode: read-only\ntools: [read_file]\ncustom_tools:\n  - {name: lookup_order, command: [s], side_effects: false}\n",
		"tags: {env: ci, eval.suite: smoke, team-a_1: \"\", count: 3}\n",
	} {
		p := filepath.Join(t.TempDir(), "agent.yaml")
		os.WriteFile(p, []byte("name: x\nmodel: {provider: openai, id: g}\nprompt: hi\n"+y), 0o644)
		if _, err := Load(p); err != nil {
			t.Errorf("Load(%q) = %v, want it accepted", y, err)
		}
	}
}

func TestTruncatedPolicy(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"", TruncatedFail},
		{"on_truncated: fail\n", TruncatedFail},
		{"on_truncated: continue\n", TruncatedContinue},
		{"on_truncated: evaluate\ndone: [{command: 'true'}]\n", TruncatedEvaluate},
	}
	for _, tt := range tests {
		p := filepath.Join(t.TempDir(), "agent.yaml")
		os.WriteFile(p, []byte("name: x\nmodel: {provider: openai, id: g}\nprompt: hi\n"+tt.yaml), 0o644)
		s, err := Load(p)
		if err != nil {
			t.Fatalf("Load(%q): %v", tt.yaml, err)
		}
		if got := s.Truncated(); got != tt.want {
			t.Errorf("Truncated() for %q = %q, want %q", tt.yaml, got, tt.want)
		}
		if tt.yaml == "" && strings.Contains(string(s.JSON()), "on_truncated") {
			t.Errorf("an unset on_truncated is recorded: %s", s.JSON())
		}
	}
}

// TestBudgetAsTheFoldReadsIt: the budget of a spec, as its header records
// it (Spec.JSON), is the budget a fold of that header holds: the runner
// enforces the fold's, so the two must never disagree.
func TestBudgetAsTheFoldReadsIt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(p, []byte("name: x\nmodel: {provider: openai, id: g, price: {input: 1.5, output: 6, cache_read: 0.15}}\nprompt: hi\n"+
		"budget: {max_tokens: 5000, max_tool_calls: 7, max_cost_usd: 0.125, max_wall: 90s}\n"), 0o644)
	sp, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	st := session.Fold([]session.Event{{Seq: 1, Kind: session.KindSessionStarted, Spec: sp.JSON()}})
	if want := sp.Budget.Session(); st.Budget != want || want.MaxWall != 90*time.Second {
		t.Errorf("fold of the header: %+v, spec: %+v", st.Budget, want)
	}
	if got := sp.Model.Price.Provider(); got.Input != 1.5 || got.Output != 6 || got.CacheRead != 0.15 || got.CacheWrite != 1.5 {
		t.Errorf("price = %+v", got)
	}
}
