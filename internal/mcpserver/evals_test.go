package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// scriptedSpec is testenv.ScriptedSpec.
func scriptedSpec(t *testing.T, name, turns string) string {
	return testenv.ScriptedSpec(t, name, turns)
}

const (
	turnsA = "  - text: \"Reading.\"\n    tool_calls: [{name: read_file, args: {path: README.md}}]\n  - text: \"Done.\"\n"
	turnsB = "  - text: \"Reading.\"\n    tool_calls: [{name: read_file, args: {path: README.md}}]\n  - text: \"Finished otherwise.\"\n"
)

// TestEvalReports: the suites and a suite's reports with their baseline
// verdict, as the eval views hold them.
func TestEvalReports(t *testing.T) {
	home := newHome(t)
	spec := scriptedSpec(t, "reader", turnsA)
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	os.WriteFile(suite, []byte("name: mcp-suite\nscenarios:\n  - name: reads\n    agent: "+spec+"\n    assert:\n      - status: done\n      - called: read_file\n"), 0o644)
	testcli.Must(t, home, "eval", suite, "--branch", "main", "--commit", "aaaa1111", "-q")
	testcli.Must(t, home, "eval", suite, "--branch", "feature", "--commit", "bbbb2222", "--baseline", "history:main", "-q")
	cs := connect(t, home)

	type table struct {
		Columns []string         `json:"columns"`
		Rows    []map[string]any `json:"rows"`
	}
	var suites table
	json.Unmarshal([]byte(mustCall(t, cs, "eval_reports", nil)), &suites)
	if len(suites.Rows) != 1 || suites.Rows[0]["suite"] != "mcp-suite" || suites.Rows[0]["reports"] != float64(2) {
		t.Errorf("suites: %+v", suites.Rows)
	}
	var reps table
	json.Unmarshal([]byte(mustCall(t, cs, "eval_reports", map[string]any{"suite": "mcp-suite"})), &reps)
	if len(reps.Rows) != 2 {
		t.Fatalf("reports of mcp-suite: %+v", reps.Rows)
	}
	for _, r := range reps.Rows {
		if (r["branch"] == "feature") != (r["comparison"] != nil) {
			t.Errorf("feature's report carries the baseline comparison, main's none: %+v", r)
		}
	}
	var none table
	json.Unmarshal([]byte(mustCall(t, cs, "eval_reports", map[string]any{"suite": "x' OR '1'='1"})), &none)
	if len(none.Rows) != 0 {
		t.Errorf("a suite name is a literal, not SQL: %+v", none.Rows)
	}
}

// TestCompareSessions: the first differing turn, as view --compare finds it.
func TestCompareSessions(t *testing.T) {
	home := newHome(t)
	testcli.Must(t, home, "run", scriptedSpec(t, "a", turnsA), "-q", "--session-id", "c000000000000001")
	testcli.Must(t, home, "run", scriptedSpec(t, "b", turnsB), "-q", "--session-id", "c000000000000002")
	cs := connect(t, home)
	var cmp struct {
		FirstDiff int   `json:"first_diff"`
		Same      bool  `json:"same"`
		Rows      []any `json:"rows"`
	}
	json.Unmarshal([]byte(mustCall(t, cs, "compare_sessions", map[string]any{"a": "c000000000000001", "b": "c000000000000002"})), &cmp)
	if cmp.FirstDiff != 2 || cmp.Same || len(cmp.Rows) != 2 {
		t.Errorf("compare: first_diff %d same %v rows %d; want 2, false, 2", cmp.FirstDiff, cmp.Same, len(cmp.Rows))
	}
	json.Unmarshal([]byte(mustCall(t, cs, "compare_sessions", map[string]any{"a": "c000000000000001", "b": "c000000000000001"})), &cmp)
	if cmp.FirstDiff != 0 || !cmp.Same {
		t.Errorf("a session with itself: first_diff %d same %v", cmp.FirstDiff, cmp.Same)
	}
}
