package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// approvalWorkspace is a real workspace with a migrations folder and the
// ways to reach it under another name: a folder link, a file link, a link
// into it from elsewhere, and a dangling link to a file not yet written.
func approvalWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"migrations/deep/er", "src", "db/a"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"m":         "migrations",
		"one.sql":   "migrations/001.sql",
		"src/mig":   "../migrations",
		"new.sql":   "migrations/009.sql", // dangling: 009 does not exist yet
		"outside":   "/etc",
		"db/a/up":   "../..",
		"mixedcase": "Migrations",
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "migrations/001.sql"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestMatchApproval(t *testing.T) {
	ws := approvalWorkspace(t)
	rules := []spec.Approval{{Tool: "bash"}, {Tool: "write_file", Path: "migrations/**"}, {Tool: "edit_file", Path: "**/*.sql"},
		{Tool: "read_file", Path: "migrations/*.sql"}, {Tool: "list_files", Path: "migrations/**"}, {Tool: "grep", Path: "db/*/secret.txt"},
		{Tool: "deploy", Path: "migrations/**"}}
	tests := []struct {
		tool, args string
		want       bool
	}{
		{"bash", `{"command":"ls"}`, true},
		{"write_file", `{"path":"migrations/002.sql"}`, true},
		{"write_file", `{"path":"migrations/deep/er/x.sql"}`, true},
		{"write_file", `{"path":"src/migrations.go"}`, false},
		{"write_file", `{"path":"migrationsX/a"}`, false},
		{"write_file", `{"path":"README.md"}`, false},
		// The same path, spelt otherwise.
		{"write_file", `{"path":"./migrations/../migrations/x.sql"}`, true},
		{"write_file", `{"path":"migrations//x.sql"}`, true},
		{"write_file", `{"path":"./migrations/x.sql/"}`, true},
		{"write_file", `{"path":"src/../migrations/x.sql"}`, true},
		{"write_file", `{"path":"` + ws + `/migrations/x.sql"}`, true},
		{"write_file", `{"path":"` + ws + `//migrations/./x.sql"}`, true},
		{"write_file", `{"path":"Migrations/x.sql"}`, true},
		{"write_file", `{"path":"MIGRATIONS/X.SQL"}`, true},
		// Through links.
		{"write_file", `{"path":"m/x.sql"}`, true},
		{"write_file", `{"path":"m/deep/er/x.sql"}`, true},
		{"write_file", `{"path":"one.sql"}`, true},
		{"write_file", `{"path":"new.sql"}`, true},
		{"write_file", `{"path":"src/mig/x.sql"}`, true},
		{"write_file", `{"path":"db/a/up/migrations/x.sql"}`, true},
		{"write_file", `{"path":"mixedcase/x.sql"}`, true},
		// Paths that cannot be resolved in the workspace are gated.
		{"write_file", `{"path":"/migrations/x.sql"}`, true},
		{"write_file", `{"path":"../migrations/x.sql"}`, true},
		{"write_file", `{"path":"outside/passwd"}`, true},
		{"edit_file", `{"path":"a.sql"}`, true},
		{"edit_file", `{"path":"db/a/b.sql"}`, true},
		{"edit_file", `{"path":"db/a/b.sql.bak"}`, false},
		{"edit_file", `{"path":"xa.sqlx"}`, false},
		{"edit_file", `{"path":"one.sql"}`, true},
		{"read_file", `{"path":"m/001.sql"}`, true},
		{"read_file", `{"path":"one.sql"}`, true},
		{"read_file", `{"path":"src/main.go"}`, false},
		// Walks: gated when the folder walked could hold a match.
		{"list_files", `{}`, true},
		{"list_files", `{"path":"."}`, true},
		{"list_files", `{"path":"m"}`, true},
		{"list_files", `{"path":"migrations/deep"}`, true},
		{"list_files", `{"path":"src"}`, false},
		{"list_files", `{"path":"src/mig"}`, true},
		{"grep", `{"pattern":"x"}`, true},
		{"grep", `{"pattern":"x","path":"db"}`, true},
		{"grep", `{"pattern":"x","path":"db/a"}`, true},
		{"grep", `{"pattern":"x","path":"db/a/secret.txt"}`, true},
		// Conservative: under the glob's fixed folders, any walk is gated.
		{"grep", `{"pattern":"x","path":"db/a/other.txt"}`, true},
		{"grep", `{"pattern":"x","path":"src"}`, false},
		// A custom tool: its path argument is resolved the same way; a
		// call without one is not gated by a path rule.
		{"deploy", `{"path":"m/x.sql"}`, true},
		{"deploy", `{"path":"src/x"}`, false},
		{"deploy", `{"path":7}`, true},
		{"deploy", `{"target":"prod"}`, false},
	}
	for _, tt := range tests {
		rule, got := matchApproval(rules, ws, tt.tool, json.RawMessage(tt.args))
		if got != tt.want {
			t.Errorf("matchApproval(%s %s) = %v (%s), want %v", tt.tool, tt.args, got, rule, tt.want)
		}
	}
}

// TestApprovalGate: the gate the file tools ask at their I/O refuses a
// path that a rule of the tool matches, and passes others.
func TestApprovalGate(t *testing.T) {
	rules := []spec.Approval{{Tool: "write_file", Path: "migrations/**"}, {Tool: "bash"}}
	gate := approvalGate(rules, "write_file")
	if err := gate("migrations/x.sql"); err == nil || !strings.Contains(err.Error(), "the path now resolves to migrations/x.sql") {
		t.Errorf("gate(migrations/x.sql) = %v, want a refusal naming the resolved path", err)
	}
	if err := gate("src/x.go"); err != nil {
		t.Errorf("gate(src/x.go) = %v, want nil", err)
	}
	if err := approvalGate(rules, "read_file")("migrations/x.sql"); err != nil {
		t.Errorf("read_file gate = %v, want nil: no rule for read_file", err)
	}
}

// TestApprovalGateCatchesLinkSwap: a call that was not gated at dispatch
// (m was a plain folder) is refused by the tool itself when a link makes
// the path land under migrations/ before the I/O; nothing is written.
func TestApprovalGateCatchesLinkSwap(t *testing.T) {
	ws := approvalWorkspace(t)
	rules := []spec.Approval{{Tool: "write_file", Path: "migrations/**"}}
	if err := os.MkdirAll(filepath.Join(ws, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"path":"plain/x.sql","content":"DROP TABLE users;"}`)
	if rule, gated := matchApproval(rules, ws, "write_file", args); gated {
		t.Fatalf("plain/x.sql gated at dispatch by %s", rule)
	}
	// Between the decision and the call, plain becomes a link.
	if err := os.Remove(filepath.Join(ws, "plain")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("migrations", filepath.Join(ws, "plain")); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Builtins(tools.ModeWrite, []string{"write_file"})
	if err != nil {
		t.Fatal(err)
	}
	wf, _ := reg.Get("write_file")
	res := wf.Run(context.Background(), tools.Call{Args: args, Workspace: ws, Gate: approvalGate(rules, "write_file")})
	if res.Status != session.ResultError || !strings.Contains(res.Error, "the path now resolves to migrations/x.sql") {
		t.Errorf("write_file after the swap = %+v, want the gate's refusal", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "migrations", "x.sql")); err == nil {
		t.Errorf("migrations/x.sql was written past the approval rule")
	}
}

func TestIdempotencyKeyFromRequestingEvent(t *testing.T) {
	a := IdempotencyKey("s1", 7, 0, "charge_card")
	if a != IdempotencyKey("s1", 7, 0, "charge_card") {
		t.Fatal("key not deterministic")
	}
	for _, other := range []string{IdempotencyKey("s2", 7, 0, "charge_card"), IdempotencyKey("s1", 8, 0, "charge_card"),
		IdempotencyKey("s1", 7, 1, "charge_card"), IdempotencyKey("s1", 7, 0, "refund")} {
		if other == a {
			t.Errorf("key %s collides", other)
		}
	}
}
