package runner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/internal/mcp"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// ReasonMCPToolsChanged is the reason of the error event a resume records
// when an MCP server lists other tools than the session recorded.
const ReasonMCPToolsChanged = "mcp_tools_changed"

// mcpServers lists the MCP servers of the registry's tools, as the header
// records them.
func mcpServers(reg *tools.Registry) []session.MCPServer {
	if reg == nil {
		return nil
	}
	return mcp.ServersOf(reg)
}

// mcpChanged is the error event that says which MCP servers' tools
// changed since the session's header recorded them, if any did: a resume
// goes on with today's tools, and the log says so.
func mcpChanged(header session.Event, reg *tools.Registry) (session.Event, bool) {
	recorded, err := session.HeaderMCPServers(header)
	if err != nil {
		return session.Event{Kind: session.KindError, Reason: ReasonMCPToolsChanged, Error: err.Error()}, true
	}
	changes := mcp.Changes(recorded, mcpServers(reg))
	if len(changes) == 0 {
		return session.Event{}, false
	}
	var parts []string
	for _, c := range changes {
		parts = append(parts, fmt.Sprintf("mcp server %s: %s (recorded %s, now %s)", c.Server, c.Detail, orNone(c.Recorded), orNone(c.Current)))
	}
	return session.Event{Kind: session.KindError, Reason: ReasonMCPToolsChanged,
		Error: "the tool surface changed since the session started: " + strings.Join(parts, "; ") +
			"; the session goes on offering only the tool names it recorded (fork it to offer the new ones)"}, true
}

// recordedMCPOnly drops from reg the MCP tools whose names the session's
// header does not record: a resumed session offers the model the tool
// names it started with (the request digests replay verify recomputes
// from the header depend on them), never tools a server added since. A
// recorded tool a server no longer lists stays missing, and a call of it
// is a tool error.
func recordedMCPOnly(header session.Event, reg *tools.Registry) *tools.Registry {
	if reg == nil || len(header.Attrs) == 0 {
		return reg
	}
	var a struct {
		Tools *[]string `json:"tools"`
	}
	if json.Unmarshal(header.Attrs, &a) != nil || a.Tools == nil {
		return reg
	}
	recorded := map[string]bool{}
	for _, n := range *a.Tools {
		recorded[n] = true
	}
	var keep []tools.Tool
	dropped := false
	for _, name := range reg.Names() {
		t, _ := reg.Get(name)
		if _, isMCP := t.(interface{ MCPServerRecord() session.MCPServer }); isMCP && !recorded[name] {
			dropped = true
			continue
		}
		keep = append(keep, t)
	}
	if !dropped {
		return reg
	}
	out, err := tools.NewRegistry().With(keep...)
	if err != nil {
		return reg
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// stopServers stops the MCP servers of the registry's tools when an
// invocation ends: a server lives as long as the run that uses it (the
// next invocation, a resume, starts it again on its first call).
func stopServers(reg *tools.Registry) {
	if reg == nil {
		return
	}
	for _, name := range reg.Names() {
		t, _ := reg.Get(name)
		if c, ok := t.(interface{ StopServer() }); ok {
			c.StopServer()
		}
	}
}
