package evals

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// writeSuite writes a suite next to copies of nothing: paths in it are
// absolute fixture paths.
func writeSuite(t *testing.T, body string) string {
	t.Helper()
	fx, _ := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	p := filepath.Join(t.TempDir(), "suite.yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, "$FX", fx)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSuiteErrors: every problem is reported with file:line, and a
// misspelled assertion fails instead of passing silently.
func TestSuiteErrors(t *testing.T) {
	head := "name: s\nscenarios:\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n    assert:\n"
	tests := []struct {
		name, body string
		want       []string
	}{
		{"misspelled kind", head + "      - calld: bash\n", []string{"suite.yaml:6: unknown key \"calld\""}},
		{"two kinds in one item", head + "      - {status: done, called: bash}\n", []string{"suite.yaml:6: assertion names 2 kinds (status, called)"}},
		{"no kind", head + "      - {}\n", []string{"suite.yaml:6: assertion names no kind"}},
		{"unknown status", head + "      - status: finished\n", []string{"suite.yaml:6: status \"finished\" is not one of"}},
		{"bad regex", head + "      - file: {path: README.md, matches: \"(\"}\n", []string{"suite.yaml:6: file.matches \"(\""}},
		{"file check kinds", head + "      - file: {path: README.md}\n", []string{"file takes exactly one of"}},
		{"file outside", head + "      - file: {path: ../x, absent: true}\n", []string{"must stay inside the workspace"}},
		{"unknown nested key", head + "      - called_at_most: {tool: bash, time: 2}\n", []string{"suite.yaml:6: unknown key \"time\""}},
		{"wrong type", head + "      - no_loop: many\n", []string{"suite.yaml:6: \"many\" is a str, but a whole number is expected"}},
		{"loop of one", head + "      - no_loop: 1\n", []string{"suite.yaml:6: no_loop 1"}},
		{"empty budget", head + "      - budget: {}\n", []string{"budget needs at least one of"}},
		{"reviewer", head + "      - reviewer: {model: {provider: scripted, id: r}, accept: [maybe]}\n",
			[]string{"reviewer.model: script is required", "reviewer.criteria is required", "reviewer.accept \"maybe\""}},
		{"no assertions", "name: s\nscenarios:\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n", []string{"suite.yaml:3: scenario has no assert list"}},
		{"agent and replay", "name: s\nscenarios:\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n    replay: {session: x}\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:3: scenario takes agent (a spec to run) or replay"}},
		{"duplicate names", "name: s\nscenarios:\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n    assert: [{status: done}]\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:6: scenario name \"a\" is already used at line 3"}},
		{"threshold", "name: s\nscenarios:\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n    repeat: 3\n    threshold: 1.5\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:6: threshold 1.5 must be above 0"}},
		{"crash_safe with an override", "name: s\nscenarios:\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n    prompt: other\n    assert: [{crash_safe: {}}]\n",
			[]string{"suite.yaml:6: crash_safe runs the agent spec as written"}},
		{"missing agent", "name: s\nscenarios:\n  - name: a\n    agent: nope.yaml\n    assert: [{status: done}]\n", []string{"suite.yaml:4: agent ", "nope.yaml"}},
		{"bad model override", "name: s\nscenarios:\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n    model: {provider: gpt, id: x}\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:5: model: provider \"gpt\""}},
		{"several problems at once", "name: s\nscenarios:\n  - name: a\n    agent: $FX/agents/fix-typo.yaml\n    assert:\n      - status: finished\n      - no_loop: 1\n",
			[]string{"suite.yaml:6: status", "suite.yaml:7: no_loop 1"}},
		{"empty", "", []string{"suite.yaml: the file is empty"}},
		{"program keys without a program", "name: s\nscenarios:\n  - name: a\n    replay: {session: x, env: [A], live_from_turn: 2}\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:4: replay.read_only, env and live_from_turn go with replay.command"}},
		{"a live turn and a fork seq", "name: s\nscenarios:\n  - name: a\n    replay: {session: x, command: node app.mjs, fork_from: 3, live_from_turn: 2}\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:4: replay takes fork_from", "not both"}},
		{"a program's env", "name: s\nscenarios:\n  - name: a\n    replay: {session: x, command: node app.mjs, env: [\"A B\"]}\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:4: replay.env \"A B\" is not a variable name"}},
		{"a program's prompt", "name: s\nscenarios:\n  - name: a\n    replay: {session: x, command: node app.mjs, live_from_turn: 2}\n    prompt: other\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:5: prompt: the program sends its own requests"}},
		{"replay session unknown", "name: s\nscenarios:\n  - name: a\n    replay: {home: $FX/replay/home, session: ffff}\n    assert: [{status: done}]\n",
			[]string{"suite.yaml:4: replay.session \"ffff\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeSuite(t, tt.body))
			if err == nil {
				t.Fatalf("Load = nil error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load error = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		text, verdict, reason string
		err                   bool
	}{
		{"PASS: all good", VerdictPass, "all good", false},
		{"\n  FAIL: no test\nmore detail", VerdictFail, "no test\nmore detail", false},
		{"NEEDS_HUMAN: unsure", VerdictNeedsHuman, "unsure", false},
		{"PASS:", VerdictPass, "", true},
		{"pass: lowercase", "", "", true},
		{"I think it passes. PASS: yes", "", "", true},
		{"", "", "", true},
	}
	for _, tt := range tests {
		v, r, err := ParseVerdict(tt.text)
		if v != tt.verdict || r != tt.reason || (err != nil) != tt.err {
			t.Errorf("ParseVerdict(%q) = %q, %q, %v; want %q, %q, error %v", tt.text, v, r, err, tt.verdict, tt.reason, tt.err)
		}
	}
}

func TestLongestRepeat(t *testing.T) {
	call := func(name, args string) session.ToolCall {
		return session.ToolCall{Name: name, Args: json.RawMessage(args)}
	}
	calls := []session.ToolCall{call("bash", `{"command":"make"}`), call("bash", `{ "command": "make" }`), call("read_file", `{"path":"a"}`),
		call("bash", `{"command":"make"}`), call("bash", `{"command":"make"}`), call("bash", `{"command":"make"}`)}
	tool, args, n := longestRepeat(calls)
	if tool != "bash" || args != `{"command":"make"}` || n != 3 {
		t.Errorf("longestRepeat = %s %s %d, want bash {\"command\":\"make\"} 3", tool, args, n)
	}
}

func TestDuplicateEffects(t *testing.T) {
	ev := func(kind session.Kind, call, key, status string) session.Event {
		return session.Event{Kind: kind, CallID: call, IdempotencyKey: key, Tool: "charge", Args: json.RawMessage(`{"amount":1}`), Status: status}
	}
	tests := []struct {
		name string
		evs  []session.Event
		want int
	}{
		{"once", []session.Event{ev(session.KindToolIntent, "c1", "k1", ""), ev(session.KindToolResult, "c1", "", "ok")}, 0},
		{"key took effect twice (resumed and repeated)", []session.Event{ev(session.KindToolIntent, "c1", "k1", ""), ev(session.KindToolResult, "c1", "", "ok"),
			ev(session.KindToolResult, "c1", "", "ok")}, 1},
		{"model repeated the effect", []session.Event{ev(session.KindToolIntent, "c1", "k1", ""), ev(session.KindToolResult, "c1", "", "ok"),
			ev(session.KindToolIntent, "c2", "k2", ""), ev(session.KindToolResult, "c2", "", "ok")}, 1},
		{"first attempt failed", []session.Event{ev(session.KindToolIntent, "c1", "k1", ""), ev(session.KindToolResult, "c1", "", "error"),
			ev(session.KindToolIntent, "c2", "k2", ""), ev(session.KindToolResult, "c2", "", "ok")}, 0},
		{"no key: not a side effect", []session.Event{ev(session.KindToolIntent, "c1", "", ""), ev(session.KindToolResult, "c1", "", "ok"),
			ev(session.KindToolIntent, "c2", "", ""), ev(session.KindToolResult, "c2", "", "ok")}, 0},
	}
	for _, tt := range tests {
		if got := duplicateEffects(tt.evs); len(got) != tt.want {
			t.Errorf("%s: duplicateEffects = %q, want %d", tt.name, got, tt.want)
		}
	}
}

func TestThresholdAndTolerated(t *testing.T) {
	th := 0.66
	sc := Scenario{Repeat: 3, Threshold: &th}
	if sc.Need() != 2 {
		t.Errorf("Need() with repeat 3, threshold 0.66 = %d, want 2", sc.Need())
	}
	failed := RunResult{Repeat: 2, SessionID: "5e55100000000001", Status: "done",
		Results: []Result{{Kind: KindStatus, Assertion: "status: failed", Message: "status is done, want failed"}}}
	ok := RunResult{Repeat: 1, OK: true, Results: []Result{}}
	rep := &Report{Suite: "s", Scenarios: []ScenarioResult{{Name: "flaky", Repeat: 3, Need: 2, Threshold: th,
		Runs: []RunResult{ok, failed, {Repeat: 3, OK: true, Results: []Result{}}}}}}
	rep.tally()
	if !rep.OK || rep.Scenarios[0].Passed != 2 || rep.RunsOK != 2 {
		t.Fatalf("tally: ok %v, passed %d; want ok with 2 of 3", rep.OK, rep.Scenarios[0].Passed)
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<failure") || !strings.Contains(b.String(), "flaky #2 failed (status: failed), tolerated: 2 of 3 runs passed") {
		t.Errorf("a failure tolerated by the threshold: JUnit\n%s\nwant no <failure> and a tolerated line", b.String())
	}
	rep.Scenarios[0].Runs[2].OK = false
	rep.Scenarios[0].Runs[2].Results = []Result{{Kind: KindStatus, Assertion: "status: failed"}}
	rep.tally()
	if rep.OK {
		t.Errorf("1 of 3 passed, need 2: report ok")
	}
}

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"", "1", "0/3", "4/3", "a/b", "1/0", "-1/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) = nil error", bad)
		}
	}
	if sh, err := ParseShard("2/3"); err != nil || sh != (Shard{2, 3}) {
		t.Errorf("ParseShard(2/3) = %v, %v", sh, err)
	}
}
