package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctl/agentctl/internal/mcp"
	"github.com/agentctl/agentctl/internal/mcp/mcptest"
	"github.com/agentctl/agentctl/internal/tools"
)

// The benchmark pairs measure what agentctl adds to an MCP tool call and
// to a server start: Added goes through mcp.Tool (the server in the
// sandbox, the output cap, redaction); Direct is the SDK's own client
// talking to the same server binary started plainly with exec.
//
//	go test -run '^$' -bench 'MCP' ./internal/mcp/

func directSession(b *testing.B) *sdk.ClientSession {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Dir = b.TempDir()
	// The environment the sandboxed server gets, so both answer the same.
	cmd.Env = tools.ScrubbedEnv(cmd.Dir, mcptest.ServeEnv+"=stdio", "TMPDIR=/tmp")
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: mcp.ProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func addedTool(b *testing.B) (tools.Tool, string) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	set, err := mcp.Discover(context.Background(), mcp.Options{Servers: []mcp.Server{{Name: "srv", Command: []string{exe},
		Env: map[string]string{mcptest.ServeEnv: "stdio"}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(set.Close)
	for _, t := range set.Tools {
		if t.Name() == "srv__env" {
			return t, b.TempDir()
		}
	}
	b.Fatal("no srv__env")
	return nil, ""
}

// BenchmarkMCPCallAdded is one call of a read tool through agentctl.
func BenchmarkMCPCallAdded(b *testing.B) {
	if err := sandboxOK(); err != nil {
		b.Skip(err)
	}
	t, ws := addedTool(b)
	call := tools.Call{Workspace: ws, Args: []byte(`{}`)}
	if r := t.Run(context.Background(), call); r.Status != "ok" {
		b.Fatalf("warm-up call: %+v", r)
	}
	b.ResetTimer()
	for b.Loop() {
		if r := t.Run(context.Background(), call); r.Status != "ok" {
			b.Fatal(r.Error)
		}
	}
}

// BenchmarkMCPCallDirect is the same call with the SDK alone.
func BenchmarkMCPCallDirect(b *testing.B) {
	s := directSession(b)
	defer s.Close()
	p := &sdk.CallToolParams{Name: "env", Arguments: map[string]any{}}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.CallTool(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMCPStartAdded starts the server in the sandbox and lists its
// tools (what a run pays once per server per invocation, twice with
// discovery).
func BenchmarkMCPStartAdded(b *testing.B) {
	if err := sandboxOK(); err != nil {
		b.Skip(err)
	}
	exe, _ := os.Executable()
	srv := mcp.Server{Name: "srv", Command: []string{exe}, Env: map[string]string{mcptest.ServeEnv: "stdio"}}
	ws := b.TempDir()
	for b.Loop() {
		c := mcp.NewClient(srv)
		if _, err := c.List(context.Background(), mcp.Env{Workspace: ws}); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkMCPStartDirect starts the server plainly and lists its tools.
func BenchmarkMCPStartDirect(b *testing.B) {
	for b.Loop() {
		s := directSession(b)
		if _, err := s.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
