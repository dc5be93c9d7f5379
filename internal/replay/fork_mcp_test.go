package replay

import (
	"encoding/json"
	"testing"

	"github.com/agentctl/agentctl/internal/mcp"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// TestPlanRebuildMCP: a fork never calls an MCP server's side-effecting
// tool again to rebuild its workspace (it may have acted on the world, as
// a custom tool may); the call is named among those not repeated. A
// read-only MCP tool has nothing to redo.
func TestPlanRebuildMCP(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	ts := []session.MCPTool{{Name: "create_issue", InputSchema: schema, SideEffects: true}, {Name: "search", InputSchema: schema}}
	srv := session.MCPServer{Name: "github", Transport: "http", Tools: ts, ToolsHash: session.MCPToolsHash(ts)}
	reg, err := tools.NewRegistry().With(mcp.Offline([]session.MCPServer{srv}, nil, false).Tools...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tool   string
		custom int
	}{{"github__create_issue", 1}, {"github__search", 0}} {
		evs := []session.Event{
			{Seq: 1, Kind: session.KindSessionStarted},
			{Seq: 2, Kind: session.KindAssistantMessage, ToolCalls: []session.ToolCall{{ID: "c1", Name: tt.tool, Args: []byte(`{}`)}}},
			{Seq: 3, Kind: session.KindToolIntent, CallID: "c1", Tool: tt.tool},
			{Seq: 4, Kind: session.KindToolResult, CallID: "c1", Tool: tt.tool, Status: session.ResultOK},
		}
		plan := planRebuild(session.Fold(evs), reg, true)
		if len(plan.steps) != 0 || len(plan.notRepeated) != tt.custom || len(plan.cannot) != 0 {
			t.Errorf("%s: %d steps, not repeated %v, cannot %v; want 0 steps, %d not repeated", tt.tool, len(plan.steps), plan.notRepeated, plan.cannot, tt.custom)
		}
	}
}
