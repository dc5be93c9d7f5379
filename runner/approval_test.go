package runner

import (
	"encoding/json"
	"testing"

	"github.com/agentctl/agentctl/runner/spec"
)

func TestMatchApproval(t *testing.T) {
	rules := []spec.Approval{{Tool: "bash"}, {Tool: "write_file", Path: "migrations/**"}, {Tool: "edit_file", Path: "**/*.sql"}}
	tests := []struct {
		tool, args string
		want       bool
	}{
		{"bash", `{"command":"ls"}`, true},
		{"read_file", `{"path":"migrations/1.sql"}`, false},
		{"write_file", `{"path":"migrations/002.sql"}`, true},
		{"write_file", `{"path":"migrations/deep/er/x.sql"}`, true},
		{"write_file", `{"path":"./migrations/../migrations/x.sql"}`, true},
		{"write_file", `{"path":"/migrations/x.sql"}`, true},
		{"write_file", `{"path":"src/migrations.go"}`, false},
		{"write_file", `{"path":"migrationsX/a"}`, false},
		{"edit_file", `{"path":"a.sql"}`, true},
		{"edit_file", `{"path":"db/a/b.sql"}`, true},
		{"edit_file", `{"path":"db/a/b.sql.bak"}`, false},
		{"edit_file", `{"path":"xa.sqlx"}`, false},
	}
	for _, tt := range tests {
		_, got := matchApproval(rules, tt.tool, json.RawMessage(tt.args))
		if got != tt.want {
			t.Errorf("matchApproval(%s %s) = %v, want %v", tt.tool, tt.args, got, tt.want)
		}
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
