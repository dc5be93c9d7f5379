package replay

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// TestPlanRebuild: how each kind of recorded call is brought back into a
// fork's workspace, or why it cannot be: the plan never leaves a call out
// silently.
func TestPlanRebuild(t *testing.T) {
	builtins, err := tools.Builtins(tools.ModeWrite, []string{"bash", "write_file", "read_file"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := builtins.With(tools.NewCommand(tools.CommandDef{Name: "charge", SideEffects: true, Command: []string{"true"}}))
	if err != nil {
		t.Fatal(err)
	}
	// One assistant message with the call, then what became of it.
	call := func(tool string, after ...session.Event) []session.Event {
		evs := []session.Event{
			{Seq: 1, Kind: session.KindSessionStarted},
			{Seq: 2, Kind: session.KindAssistantMessage, ToolCalls: []session.ToolCall{{ID: "c1", Name: tool, Args: []byte(`{}`)}}},
			{Seq: 3, Kind: session.KindToolIntent, CallID: "c1", Tool: tool},
		}
		for i, e := range after {
			e.Seq, e.CallID, e.Tool = int64(4+i), "c1", tool
			evs = append(evs, e)
		}
		return evs
	}
	result := func(status string) session.Event { return session.Event{Kind: session.KindToolResult, Status: status} }
	tests := []struct {
		name      string
		evs       []session.Event
		rerunBash bool
		steps     int
		cannot    string
		custom    int
	}{
		{"read_file: nothing to redo", call("read_file", result("ok")), false, 0, "", 0},
		{"write_file ok: re-applied", call("write_file", result("ok")), false, 1, "", 0},
		{"write_file failed: it wrote nothing", call("write_file", result("error")), false, 0, "", 0},
		{"write_file in flight at a crash", call("write_file"), false, 0, "in flight at a crash, so whether it wrote is unknown", 0},
		{"write_file recovered after a crash: re-applied", call("write_file", session.Event{Kind: session.KindReconciled, Outcome: "recovered"}), false, 1, "", 0},
		{"bash: refused without --rerun-bash", call("bash", result("ok")), false, 0, "a bash call; the files it wrote or removed are not in the log", 0},
		{"bash with --rerun-bash: run again", call("bash", result("ok")), true, 1, "", 0},
		{"bash that failed, --rerun-bash: run again too", call("bash", result("error")), true, 1, "", 0},
		{"bash cancelled mid-run: never", call("bash", result("cancelled")), true, 0, "cancelled mid-run; what it had done by then cannot be reproduced", 0},
		{"bash left to a human: never", call("bash", session.Event{Kind: session.KindReconciled, Outcome: "needs_human"}), true, 0, "left to a human after a crash mid-run", 0},
		{"custom tool: not repeated, named", call("charge", result("ok")), true, 0, "", 1},
		{"a tool the spec no longer has", call("deploy", result("ok")), true, 0, "the spec has no such tool now", 0},
		{"denied: it never ran", call("bash", session.Event{Kind: session.KindApprovalDenied}), false, 0, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := planRebuild(session.Fold(tt.evs), reg, tt.rerunBash)
			cannot := strings.Join(plan.cannot, "; ")
			if len(plan.steps) != tt.steps || len(plan.notRepeated) != tt.custom || (tt.cannot == "") != (cannot == "") || !strings.Contains(cannot, tt.cannot) {
				t.Errorf("plan: %d steps, not repeated %v, cannot %q; want %d steps, %d not repeated, cannot %q",
					len(plan.steps), plan.notRepeated, cannot, tt.steps, tt.custom, tt.cannot)
			}
			if cannot != "" && !strings.Contains(cannot, "call c1 (") {
				t.Errorf("the reason %q does not name the call", cannot)
			}
		})
	}
}
