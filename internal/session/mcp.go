package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// MCPServer is what a session header records of one MCP server whose tools
// the run offered (header attrs "mcp_servers"): enough for replay to tell
// whether the tool surface changed (ToolsHash) and, offline, to offer the
// very same tools again with no server running (Tools).
type MCPServer struct {
	// Name is the spec's name of the server, the prefix of its tools
	// (<name>__<tool>).
	Name string `json:"name"`
	// Transport is "stdio" or "http".
	Transport string `json:"transport"`
	// ProtocolVersion is the MCP protocol version the server agreed to.
	ProtocolVersion string `json:"protocol_version"`
	// ServerName and ServerVersion are what the server says it is
	// (serverInfo).
	ServerName    string `json:"server_name,omitempty"`
	ServerVersion string `json:"server_version,omitempty"`
	// ToolsHash is MCPToolsHash of Tools.
	ToolsHash string `json:"tools_hash"`
	// Tools are the server's tools as the server listed them (all of them,
	// also those the mode did not offer), by server-side name.
	Tools []MCPTool `json:"tools"`
}

// MCPTool is one tool an MCP server lists, with what the run decided about
// it.
type MCPTool struct {
	// Name is the server's name of the tool; the model calls it
	// <server>__<name>.
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Annotations are the server's hints as it sent them (readOnlyHint,
	// destructiveHint, idempotentHint, openWorldHint), or absent.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// SideEffects and Idempotent are what the run used: the spec's
	// mcp_tools entry, else the annotations' defaults.
	SideEffects bool `json:"side_effects"`
	Idempotent  bool `json:"idempotent,omitempty"`
}

// MCPToolsHash is the digest of a server's tool surface: each tool's name,
// description, input schema and annotations, in name order, as
// "sha256:<hex>". Schemas and annotations are compacted first, so a server
// that reformats its JSON keeps its hash; any other change of a tool, a
// tool added or a tool removed changes it. Replay compares it with the
// live server's (a reported divergence when they differ).
func MCPToolsHash(tools []MCPTool) string {
	type entry struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Annotations json.RawMessage `json:"annotations"`
	}
	compact := func(raw json.RawMessage) json.RawMessage {
		if len(raw) == 0 {
			return json.RawMessage("null")
		}
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return json.RawMessage(fmt.Sprintf("%q", string(raw)))
		}
		return b.Bytes()
	}
	es := make([]entry, len(tools))
	for i, t := range tools {
		es[i] = entry{t.Name, t.Description, compact(t.InputSchema), compact(t.Annotations)}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	b, _ := json.Marshal(es)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HeaderMCPServers returns the MCP servers a session header records (none
// for a session without MCP tools, or one recorded before they existed).
// An attrs value that is not the documented shape is an error: the header
// came from elsewhere and was changed.
func HeaderMCPServers(header Event) ([]MCPServer, error) {
	if len(header.Attrs) == 0 {
		return nil, nil
	}
	var a struct {
		Servers []MCPServer `json:"mcp_servers"`
	}
	if err := json.Unmarshal(header.Attrs, &a); err != nil {
		return nil, fmt.Errorf("session: header attrs mcp_servers: %w", err)
	}
	return a.Servers, nil
}
