package session

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMCPToolsHash: the hash changes with every part of the tool surface
// and with nothing else (order of the list, JSON spacing).
func TestMCPToolsHash(t *testing.T) {
	base := []MCPTool{
		{Name: "b", Description: "B", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "a", Description: "A", InputSchema: json.RawMessage(`{"type": "object", "properties": {"x": {"type": "string"}}}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
	}
	h := MCPToolsHash(base)
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("hash = %q", h)
	}
	same := []MCPTool{base[1], base[0]}
	same[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)
	same[1].SideEffects = true // what the run decided is not the server's surface
	if got := MCPToolsHash(same); got != h {
		t.Errorf("reordered and reformatted: %s, want %s", got, h)
	}
	changes := map[string]func([]MCPTool) []MCPTool{
		"description": func(ts []MCPTool) []MCPTool { ts[0].Description = "B2"; return ts },
		"schema":      func(ts []MCPTool) []MCPTool { ts[0].InputSchema = json.RawMessage(`{"type":"array"}`); return ts },
		"annotations": func(ts []MCPTool) []MCPTool { ts[1].Annotations = json.RawMessage(`{"readOnlyHint":false}`); return ts },
		"name":        func(ts []MCPTool) []MCPTool { ts[0].Name = "c"; return ts },
		"added":       func(ts []MCPTool) []MCPTool { return append(ts, MCPTool{Name: "d"}) },
		"removed":     func(ts []MCPTool) []MCPTool { return ts[:1] },
	}
	for name, change := range changes {
		ts := change(append([]MCPTool(nil), base...))
		if got := MCPToolsHash(ts); got == h {
			t.Errorf("%s changed, hash did not", name)
		}
	}
}

// TestHeaderMCPServers reads what the runner writes, and refuses attrs of
// another shape.
func TestHeaderMCPServers(t *testing.T) {
	hdr := Event{Kind: KindSessionStarted, Attrs: json.RawMessage(`{"tools":["notes__add_note"],"mcp_servers":[{"name":"notes","transport":"stdio","protocol_version":"2025-11-25","tools_hash":"sha256:00","tools":[{"name":"add_note","side_effects":true,"idempotent":true}]}]}`)}
	got, err := HeaderMCPServers(hdr)
	if err != nil || len(got) != 1 || got[0].Name != "notes" || got[0].ProtocolVersion != "2025-11-25" || !got[0].Tools[0].Idempotent {
		t.Fatalf("HeaderMCPServers = %+v, %v", got, err)
	}
	for _, attrs := range []string{``, `{"tools":["read_file"]}`} {
		if got, err := HeaderMCPServers(Event{Attrs: json.RawMessage(attrs)}); err != nil || len(got) != 0 {
			t.Errorf("attrs %q: %+v, %v; want none", attrs, got, err)
		}
	}
	if _, err := HeaderMCPServers(Event{Attrs: json.RawMessage(`{"mcp_servers":"forged"}`)}); err == nil {
		t.Error("attrs with a string for mcp_servers were accepted")
	}
}
