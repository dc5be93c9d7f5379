package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubagentsRefusedAtLoad: a declared subagent that reaches further
// than its parent fails the parent's Load with an error naming what, and
// a well-formed tree loads.
func TestSubagentsRefusedAtLoad(t *testing.T) {
	const parent = "name: p\nmodel: {provider: scripted, id: s, script: m.yaml}\nprompt: hi\ntools: [task, read_file, grep]\n" +
		"custom_tools: [{name: deploy, command: [./deploy.sh], side_effects: true}]\nsubagents: {kid: kid.yaml}\n"
	const kidHead = "name: k\nmodel: {provider: scripted, id: s, script: m.yaml}\nprompt: x\n"
	tests := []struct {
		name, parent, kid, want string
	}{
		{"a subset", parent, kidHead + "tools: [read_file]\n", ""},
		{"the parent's custom tool as it is", parent, kidHead + "tools: [grep]\ncustom_tools: [{name: deploy, command: [./deploy.sh], side_effects: true}]\n", ""},
		{"bash the parent lacks", parent, kidHead + "tools: [read_file, bash, write_file]\n",
			"subagents.kid (" + "KID" + "): asks for bash, write_file, which its parent does not have (the parent has deploy, grep, read_file, task)"},
		{"the mode's defaults are wider", parent, kidHead, "asks for bash, edit_file, list_files, write_file"},
		{"a custom tool with another command", parent, kidHead + "tools: [grep]\ncustom_tools: [{name: deploy, command: [sh, -c, evil], side_effects: true}]\n",
			`custom tool "deploy" differs from the parent's`},
		{"another endpoint", parent, "name: k\nmodel: {provider: openai, id: g, base_url: \"http://elsewhere\"}\nprompt: x\ntools: [grep]\n", "is not the parent's"},
		{"its own workspace", parent, kidHead + "tools: [grep]\nworkspace: {path: /}\n", "works in its parent's workspace"},
		{"network allowed", parent, kidHead + "tools: [grep]\nsandbox: {network: allow}\n", "run in its parent's sandbox"},
		{"a read-only parent cannot list task", "name: p\nmodel: {provider: scripted, id: s, script: m.yaml}\nprompt: hi\nmode: read-only\ntools: [read_file]\nsubagents: {kid: kid.yaml}\n",
			kidHead + "tools: [read_file]\n", "tools does not list task"},
		{"its own MCP server", parent, kidHead + "tools: [grep]\nmcp_servers: [{name: evil, command: [sh, -c, evil]}]\n", "starts no servers of its own"},
		{"its own ancestor", parent, kidHead + "tools: [task, grep]\nsubagents: {again: parent.yaml}\n", "is its own ancestor"},
		{"no task tool", "name: p\nmodel: {provider: scripted, id: s, script: m.yaml}\nprompt: hi\ntools: [read_file]\nsubagents: {kid: kid.yaml}\n",
			kidHead + "tools: [read_file]\n", "tools does not list task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "parent.yaml"), []byte(tt.parent), 0o644)
			os.WriteFile(filepath.Join(dir, "kid.yaml"), []byte(tt.kid), 0o644)
			_, err := Load(filepath.Join(dir, "parent.yaml"))
			want := strings.ReplaceAll(tt.want, "KID", filepath.Join(dir, "kid.yaml"))
			switch {
			case want == "" && err != nil:
				t.Errorf("Load = %v, want it to load", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("Load = %v, want an error containing %q", err, want)
			}
		})
	}
}

// TestSubagentsDepthAtLoad: a chain of declared subagents deeper than
// MaxDepth is refused at load.
func TestSubagentsDepthAtLoad(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i <= MaxDepth+1; i++ {
		s := "name: l\nmodel: {provider: scripted, id: s, script: m.yaml}\nprompt: x\ntools: [task, read_file]\n"
		if i <= MaxDepth {
			s += "subagents: {next: l" + string(rune('0'+i+1)) + ".yaml}\n"
		}
		os.WriteFile(filepath.Join(dir, "l"+string(rune('0'+i))+".yaml"), []byte(s), 0o644)
	}
	if _, err := Load(filepath.Join(dir, "l0.yaml")); err == nil || !strings.Contains(err.Error(), "nest deeper than 3 levels") {
		t.Errorf("Load(chain of %d) = %v, want the depth error", MaxDepth+2, err)
	}
	if _, err := Load(filepath.Join(dir, "l2.yaml")); err != nil {
		t.Errorf("Load(chain of %d) = %v, want it to load", MaxDepth, err)
	}
}
