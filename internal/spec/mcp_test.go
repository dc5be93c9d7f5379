package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mcpHead = "name: x\nmodel: {provider: openai, id: g}\nprompt: hi\n"

// TestLoadMCPErrors: a malformed mcp_servers or mcp_tools entry is refused
// with file:line and what to change.
func TestLoadMCPErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"no name", "mcp_servers: [{command: [srv]}]\n", `:4: mcp server needs a name`},
		{"double underscore", "mcp_servers: [{name: a__b, command: [srv]}]\n", `mcp server name "a__b" must be letters, digits, - and single _`},
		{"twice", "mcp_servers: [{name: a, command: [s]}, {name: a, command: [s]}]\n", `mcp server name "a" is used twice`},
		{"neither", "mcp_servers: [{name: a}]\n", `mcp server "a" needs a command (stdio) or a url`},
		{"both", "mcp_servers: [{name: a, command: [s], url: \"http://h:1/mcp\"}]\n", `takes command (stdio) or url (HTTP), not both`},
		{"bad url", "mcp_servers: [{name: a, url: \"ftp://h/x\"}]\n", `url "ftp://h/x" is not an http(s) URL`},
		{"env on http", "mcp_servers: [{name: a, url: \"http://h:1/\", env: {X: y}}]\n", `env is for stdio servers`},
		{"headers on stdio", "mcp_servers: [{name: a, command: [s], headers_env: {Authorization: TOKEN}}]\n", `headers_env is for HTTP servers`},
		{"unknown server key", "mcp_servers:\n  - name: a\n    comand: [s]\n", `:6: unknown key "comand"`},
		{"mcp_tools of no server", "mcp_servers: [{name: a, command: [s]}]\nmcp_tools: {b__t: {side_effects: true}}\n", `mcp_tools key "b__t" is not <server>__<tool>`},
		{"idempotent without effects", "mcp_servers: [{name: a, command: [s]}]\nmcp_tools:\n  a__t: {side_effects: false, idempotent: true}\n", `mcp tool "a__t" is idempotent but has no side_effects`},
		{"unknown mcp_tools key", "mcp_servers: [{name: a, command: [s]}]\nmcp_tools:\n  a__t: {sideeffects: true}\n", `unknown key "sideeffects"`},
		{"approval of no server", "mcp_servers: [{name: a, command: [s]}]\napprovals: [{tool: \"github__*\"}]\n", `approval rule names tool "github__*", which is neither`},
		{"custom tool in a server's names", "mcp_servers: [{name: a, command: [s]}]\ncustom_tools: [{name: a__t, command: [x]}]\n", `custom tool name "a__t" would collide with the tools of mcp server "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "agent.yaml")
			if err := os.WriteFile(p, []byte(mcpHead+tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "agent.yaml") {
				t.Errorf("Load = %v, want an error naming the file and containing %q", err, tt.want)
			}
		})
	}
}

// TestLoadMCP: servers, declarations and glob approval rules load, and a
// relative server program is taken from the spec's folder.
func TestLoadMCP(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.yaml")
	y := mcpHead + `mcp_servers:
  - {name: notes, command: [./bin/srv, --flag], env: {MODE: fast}}
  - {name: github, url: "https://api.example.com/mcp", headers_env: {Authorization: GITHUB_MCP_AUTH}}
mcp_tools:
  notes__add_note: {side_effects: true, idempotent: false}
approvals:
  - {tool: "github__*"}
  - {tool: "notes__add_note"}
  - {tool: "*_file"}
`
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := sp.MCPServers[0].Command[0]; got != filepath.Join(dir, "bin", "srv") {
		t.Errorf("command = %s, want it under the spec's folder", got)
	}
	if d := sp.MCPTools["notes__add_note"]; d.SideEffects == nil || !*d.SideEffects || d.Idempotent == nil || *d.Idempotent {
		t.Errorf("mcp_tools = %+v", d)
	}
	if !sp.IsMCPTool("github__create_issue") || sp.IsMCPTool("gitlab__x") || sp.IsMCPTool("github") {
		t.Error("IsMCPTool misjudges names")
	}
	back, err := FromHeader(sp.JSON())
	if err != nil || len(back.MCPServers) != 2 || back.MCPServers[1].HeadersEnv["Authorization"] != "GITHUB_MCP_AUTH" {
		t.Errorf("FromHeader = %+v, %v", back, err)
	}
}
