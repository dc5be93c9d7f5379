package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/mcp"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// TestMCPChanged: a resume whose MCP servers list other tools than the
// header recorded gets an error event naming what changed; the same
// tools give none.
func TestMCPChanged(t *testing.T) {
	tool := func(name string) session.MCPTool {
		return session.MCPTool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	server := func(ts ...session.MCPTool) session.MCPServer {
		return session.MCPServer{Name: "notes", Transport: "stdio", Tools: ts, ToolsHash: session.MCPToolsHash(ts)}
	}
	header := func(s session.MCPServer) session.Event {
		b, _ := json.Marshal(map[string]any{"tools": []string{}, "mcp_servers": []session.MCPServer{s}})
		return session.Event{Kind: session.KindSessionStarted, Attrs: b}
	}
	registry := func(s session.MCPServer) *tools.Registry {
		reg, err := tools.NewRegistry().With(mcp.Offline([]session.MCPServer{s}, nil, false).Tools...)
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	before := server(tool("add_note"), tool("read_note"))
	if ev, changed := mcpChanged(header(before), registry(before)); changed {
		t.Errorf("same tools: %+v", ev)
	}
	after := server(tool("add_note"), tool("read_note"), tool("delete_note"))
	ev, changed := mcpChanged(header(before), registry(after))
	if !changed || ev.Kind != session.KindError || ev.Reason != ReasonMCPToolsChanged || !strings.Contains(ev.Error, `mcp server notes: added ["delete_note"]`) {
		t.Errorf("changed tools: %v %+v", changed, ev)
	}
	// Headers of sessions without MCP and registries without MCP tools.
	if _, changed := mcpChanged(session.Event{Kind: session.KindSessionStarted}, tools.NewRegistry()); changed {
		t.Error("no MCP at all reported a change")
	}
}

// TestRecordedMCPOnly: a resume offers the MCP tool names the header
// recorded, not the ones a server added since; other tools are kept.
func TestRecordedMCPOnly(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	ts := []session.MCPTool{{Name: "add_note", InputSchema: schema}, {Name: "delete_note", InputSchema: schema}}
	srv := session.MCPServer{Name: "notes", Tools: ts, ToolsHash: session.MCPToolsHash(ts)}
	builtins, err := tools.Builtins(tools.ModeWrite, []string{"read_file"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := builtins.With(mcp.Offline([]session.MCPServer{srv}, nil, false).Tools...)
	if err != nil {
		t.Fatal(err)
	}
	hdr := session.Event{Kind: session.KindSessionStarted, Attrs: json.RawMessage(`{"tools":["notes__add_note","read_file"]}`)}
	got := recordedMCPOnly(hdr, reg).Names()
	if strings.Join(got, ",") != "notes__add_note,read_file" {
		t.Errorf("offered after resume = %v, want the recorded names", got)
	}
	if got := recordedMCPOnly(session.Event{}, reg).Names(); len(got) != 3 {
		t.Errorf("a header without a tool list changed the registry: %v", got)
	}
}
