package replay

import (
	"encoding/json"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// collected is a session as collect writes one: imported, two model
// calls, the first asking for a tool.
func collected(finalCalls bool) []session.Event {
	final := session.Event{Kind: session.KindAssistantMessage, Text: "Shipped with DHL."}
	if finalCalls {
		final.ToolCalls = []session.ToolCall{{ID: "c2", Name: "lookup_order", Args: json.RawMessage(`{}`)}}
	}
	evs := []session.Event{
		{Kind: session.KindSessionStarted, Name: "order-support", Provider: "openai", Attrs: json.RawMessage(`{"imported_from":"otlp"}`)},
		{Kind: session.KindUserMessage, Text: "Where is my order A-1042?"},
		{Kind: session.KindAssistantMessage, ToolCalls: []session.ToolCall{{ID: "c1", Name: "lookup_order", Args: json.RawMessage(`{}`)}}},
		{Kind: session.KindModelCall, Model: "gpt-4o-mini"},
		{Kind: session.KindToolResult, CallID: "c1", Tool: "lookup_order", Output: "{}"},
		final,
		{Kind: session.KindModelCall, Model: "gpt-4o-mini"},
	}
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	return evs
}

func TestRecordedOutcome(t *testing.T) {
	finished := collected(false)
	finished[0].Attrs = nil
	finished = append(finished, session.Event{Seq: 8, Kind: session.KindSessionFinished, Status: string(session.StatusBudgetExceeded)})
	fromRequest := collected(false)
	// The program's own message, recorded from a later request, is no
	// model answer.
	fromRequest = append(fromRequest, session.Event{Seq: 8, Kind: session.KindAssistantMessage, Text: "mine", Attrs: json.RawMessage(`{"from_request":true}`)})
	for _, tt := range []struct {
		name string
		evs  []session.Event
		want Outcome
	}{
		{"collected, answered", collected(false), Outcome{Status: session.StatusDone, Answer: "Shipped with DHL."}},
		{"collected, ends asking for a tool", collected(true), Outcome{Status: session.StatusFailed, Answer: "Shipped with DHL."}},
		{"finished", finished, Outcome{Status: session.StatusBudgetExceeded, Answer: "Shipped with DHL."}},
		{"from a request", fromRequest, Outcome{Status: session.StatusDone, Answer: "Shipped with DHL."}},
	} {
		if got := RecordedOutcome(tt.evs); got != tt.want {
			t.Errorf("%s: RecordedOutcome = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestForkSeqOfTurn(t *testing.T) {
	evs := collected(false)
	for _, tt := range []struct {
		turn    int
		want    int64
		wantErr bool
	}{
		{turn: 1, want: 1}, // all live: the fork keeps the header
		{turn: 2, want: 4}, // turn 1's model_call
		{turn: 3, wantErr: true},
		{turn: 0, wantErr: true},
	} {
		got, err := ForkSeqOfTurn(evs, tt.turn)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ForkSeqOfTurn(%d) = %d, %v; want %d (error %v)", tt.turn, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestProgramSpec(t *testing.T) {
	sp := ProgramSpec(collected(false), Program{Command: "node app.mjs", WorkspaceFrom: "/app", ReadOnly: []string{"/nm"}, Env: []string{"A"}})
	if !sp.External() || len(sp.Agent.Command) != 3 || sp.Agent.Command[2] != "node app.mjs" {
		t.Fatalf("agent = %+v, want sh -c 'node app.mjs'", sp.Agent)
	}
	// The header of a collected session may name no model: its calls do.
	if sp.Model.ID != "gpt-4o-mini" || sp.Model.Provider != "openai" || sp.Workspace.From != "/app" ||
		sp.Sandbox.ReadOnly[0] != "/nm" || sp.Sandbox.Env[0] != "A" || sp.Budget.MaxWall == 0 {
		t.Errorf("spec = %+v", sp)
	}
}
