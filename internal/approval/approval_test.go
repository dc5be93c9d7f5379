package approval

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		a, b, want string
	}{
		{"", "x\ny\n", "+x +y"},
		{"a\nb\nc\n", "a\nB\nc\n", " a -b +B  c"},
		{"a\nb\n", "a\n", " a -b"},
		{"same\n", "same\n", " same"},
	}
	for _, tc := range tests {
		var got []string
		for _, l := range Diff(tc.a, tc.b) {
			got = append(got, l.Op+l.Text)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("Diff(%q, %q) = %q, want %q", tc.a, tc.b, g, tc.want)
		}
	}
}

// waitingSession writes a session stopped on two calls that wait.
func waitingSession(t *testing.T, st recorder.Store, id string) {
	t.Helper()
	args := json.RawMessage(`{"command":"make deploy"}`)
	evs := []session.Event{
		{Kind: session.KindSessionStarted, SessionID: id, Provider: "scripted", Model: "m"},
		{Kind: session.KindUserMessage, Text: "deploy"},
		{Kind: session.KindAssistantMessage, ToolCalls: []session.ToolCall{{ID: "c1", Name: "bash", Args: args}, {ID: "c2", Name: "bash", Args: args}}},
		{Kind: session.KindModelCall, Provider: "scripted", Model: "m"},
		{Kind: session.KindApprovalRequest, CallID: "c1", Tool: "bash", Args: args},
		{Kind: session.KindApprovalRequest, CallID: "c2", Tool: "bash", Args: args},
		{Kind: session.KindSessionFinished, Status: string(session.StatusAwaitingApproval)},
	}
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
}

func TestDecide(t *testing.T) {
	st := recorder.Store{Root: t.TempDir()}
	const id = "dec1de0000000001"
	waitingSession(t, st, id)
	approve := session.Decision{Verb: session.DecideApprove, Scope: session.ScopeOnce}

	_, err := Decide(st, id, "", approve)
	var amb *AmbiguousError
	if !errors.As(err, &amb) || len(amb.Waiting) != 2 {
		t.Fatalf("no call named with two waiting: %v, want an AmbiguousError", err)
	}
	if _, err := Decide(st, id, "c9", approve); err == nil || !strings.Contains(err.Error(), "not waiting") {
		t.Errorf("an unknown call: %v", err)
	}
	// A process holding the session (a run resumed) refuses the decision.
	held, _, err := st.Open(id, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decide(st, id, "c1", approve); err == nil {
		t.Error("decided on a session another process holds")
	}
	held.Close()

	res, err := Decide(st, id[:6], "c1", approve)
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != id || res.Event.Kind != session.KindApprovalGranted || res.Event.CallID != "c1" || res.Event.Scope != session.ScopeOnce || res.Event.Seq != 8 {
		t.Errorf("recorded %+v", res.Event)
	}
	left, err := Waiting(st, id)
	if err != nil || len(left) != 1 || left[0].ID != "c2" {
		t.Errorf("waiting after the decision: %v %v, want c2", left, err)
	}
	if got := Command(left[0]); got != "make deploy" {
		t.Errorf("Command = %q", got)
	}
}
