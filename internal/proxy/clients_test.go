package proxy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// TestSameMessageClientNormalisedArgs: Claude Code sends a tool call back
// with its schema's defaults added ("replace_all": false on Edit); that is
// the same call (same id and name), not a rewritten history, while another
// id, another name, or other args of a call without an id are different.
func TestSameMessageClientNormalisedArgs(t *testing.T) {
	call := func(id, name, args string) session.Message {
		return session.Message{Role: session.RoleAssistant, Content: "Found it.",
			ToolCalls: []session.ToolCall{{ID: id, Name: name, Args: json.RawMessage(args)}}}
	}
	answered := call("toolu_1", "Edit", `{"file_path":"README.md","old_string":"a","new_string":"b"}`)
	tests := []struct {
		name string
		sent session.Message
		want bool
	}{
		{"defaults added", call("toolu_1", "Edit", `{"replace_all":false,"file_path":"README.md","old_string":"a","new_string":"b"}`), true},
		{"keys reordered", call("toolu_1", "Edit", `{"new_string":"b","old_string":"a","file_path":"README.md"}`), true},
		{"other id", call("toolu_2", "Edit", `{"file_path":"README.md","old_string":"a","new_string":"b"}`), false},
		{"other tool", call("toolu_1", "Write", `{"file_path":"README.md","old_string":"a","new_string":"b"}`), false},
	}
	for _, tt := range tests {
		if got := sameMessage(answered, tt.sent); got != tt.want {
			t.Errorf("%s: sameMessage = %v, want %v", tt.name, got, tt.want)
		}
	}
	noID := call("", "Edit", `{"a":1}`)
	if sameMessage(noID, call("", "Edit", `{"a":2}`)) {
		t.Error("calls without ids and different args compare equal")
	}
	if !sameMessage(noID, call("", "Edit", `{"a":1}`)) {
		t.Error("calls without ids and equal args compare different")
	}
}

// TestClaudeCodeDefaultModelRequest: the first request of the real Claude
// Code CLI (2.1.328) run with its own default model (claude-opus-5-5,
// nothing pinned), captured through the proxy
// (cli/testdata/script/proxy_claude_default_model.txtar): its
// environment comes as a {"role":"system"} message inside messages,
// after the first user message. It is system text, after the system
// field's, and the request is served, not refused with a 400.
func TestClaudeCodeDefaultModelRequest(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "claude-code-2.1.328-default-model.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Call{API: "messages", Body: body}
	if err := parseCall(c); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if len(c.Messages) != 1 || c.Messages[0].Role != session.RoleUser || !strings.HasSuffix(c.Messages[0].Content, "Fix the typo in README.md") {
		t.Errorf("messages = %+v, want the one user message", c.Messages)
	}
	env := strings.Index(c.System, "You have been invoked in the following environment")
	if !strings.HasPrefix(c.System, "x-anthropic-billing-header:") || env < 0 || !strings.Contains(c.System[env:], "Is a git repository") {
		t.Errorf("system = %.200q…: want the system field's text, then the system message's", c.System)
	}

	_, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
	status, out := post(t, base+"/s/cc/v1/messages?beta=true", string(body))
	if status != 200 {
		t.Fatalf("status %d: %s", status, out)
	}
	if mc := lastOf(mem.Get("cc").Events(), session.KindModelCall); mc.Model != "claude-opus-5-5" || mc.Error != "" {
		t.Errorf("model_call = %+v", mc)
	}
}
