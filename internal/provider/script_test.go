package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// laughs is a script whose one tool call's args expand to 10^depth nodes
// through nested aliases ("billion laughs"), all anchored inside the args.
func laughs(depth int) string {
	var b strings.Builder
	b.WriteString("turns:\n  - tool_calls:\n      - name: bash\n        args:\n")
	b.WriteString("          a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < depth; i++ {
		fmt.Fprintf(&b, "          a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	fmt.Fprintf(&b, "          command: *a%d\n", depth-1)
	return b.String()
}

func TestLoadScriptRefusesExcessiveAliasing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(laughs(7)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScript(path)
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") || !strings.Contains(err.Error(), path) {
		t.Fatalf("LoadScript(depth 7) = %v, want an excessive aliasing error naming the file", err)
	}
	// A few aliases stay fine: depth 2 is 100 nodes.
	if err := os.WriteFile(path, []byte(laughs(2)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScript(path); err != nil {
		t.Fatalf("LoadScript(depth 2) = %v", err)
	}
}

// TestScriptFor: a call is answered by the first thread whose system
// text it contains, else by the script's turns; a thread without its
// system text or turns is refused when the script is loaded.
func TestScriptFor(t *testing.T) {
	s := Script{
		Turns: []ScriptTurn{{Text: "main"}},
		Threads: []ScriptThread{
			{System: "title generator", Turns: []ScriptTurn{{Text: "title"}}},
			{System: "generator", Turns: []ScriptTurn{{Text: "other"}}},
		},
		Summary: "sum",
	}
	for _, tc := range []struct{ system, want string }{
		{"You are a title generator. Output a title.", "title"},
		{"You are a code generator.", "other"},
		{"You are a coding agent.", "main"},
		{"", "main"},
	} {
		got := s.For(tc.system)
		if len(got.Turns) != 1 || got.Turns[0].Text != tc.want || len(got.Threads) != 0 || got.Summary != "sum" {
			t.Errorf("For(%q) = %+v, want the turns of %q, no threads, the summary kept", tc.system, got, tc.want)
		}
	}

	dir := t.TempDir()
	for _, tc := range []struct{ name, src, want string }{
		{"no system", "turns: [{text: a}]\nthreads:\n  - turns: [{text: b}]\n", "threads[0]: system is required"},
		{"no turns", "turns: [{text: a}]\nthreads:\n  - system: x\n", "threads[0] (system \"x\") has no turns"},
	} {
		path := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadScript(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadScript = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
