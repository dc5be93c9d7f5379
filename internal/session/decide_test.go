package session

import (
	"strings"
	"testing"
)

// TestDecide: each decision becomes the event approve, deny and resolve
// have always appended, and only for a call in the state that takes it.
func TestDecide(t *testing.T) {
	evs := []Event{
		{Seq: 1, Kind: KindSessionStarted, SessionID: "s"},
		{Seq: 2, Kind: KindAssistantMessage, ToolCalls: []ToolCall{{ID: "a", Name: "charge"}, {ID: "h", Name: "mail"}}},
		{Seq: 3, Kind: KindModelCall},
		{Seq: 4, Kind: KindToolIntent, CallID: "a", Tool: "charge"},
		{Seq: 5, Kind: KindApprovalRequest, CallID: "a", Tool: "charge"},
		{Seq: 6, Kind: KindToolIntent, CallID: "h", Tool: "mail", IdempotencyKey: "k-h"},
		{Seq: 7, Kind: KindReconciled, CallID: "h", Tool: "mail", Outcome: ReconciledNeedsHuman},
	}
	st := Fold(evs)
	tests := []struct {
		name, call string
		d          Decision
		want       Event
		err        string
	}{
		{"approve once", "a", Decision{Verb: DecideApprove, Scope: ScopeOnce}, Event{Kind: KindApprovalGranted, CallID: "a", Tool: "charge", Scope: ScopeOnce}, ""},
		{"deny", "a", Decision{Verb: DecideDeny, Reason: "no"}, Event{Kind: KindApprovalDenied, CallID: "a", Tool: "charge", Reason: "no"}, ""},
		{"bad scope", "a", Decision{Verb: DecideApprove, Scope: "forever"}, Event{}, "use once or session"},
		{"approve a call not waiting", "h", Decision{Verb: DecideApprove, Scope: ScopeOnce}, Event{}, "not waiting for approval"},
		{"took effect", "h", Decision{Verb: DecideTookEffect, Output: "sent"}, Event{Kind: KindReconciled, CallID: "h", Tool: "mail",
			IdempotencyKey: "k-h", Outcome: ReconciledRecovered, Output: "sent", Reason: "a human checked it: it took effect"}, ""},
		{"not done", "h", Decision{Verb: DecideNotDone}, Event{Kind: KindToolResult, CallID: "h", Tool: "mail", Status: ResultCancelled,
			Error: "it did not take effect (checked by a human); call it again if it is still needed"}, ""},
		{"resolve a call that needs no human", "a", Decision{Verb: DecideNotDone}, Event{}, "does not need a human"},
		{"unknown verb", "a", Decision{Verb: "maybe"}, Event{}, "want approve, deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decide(st, tt.call, tt.d)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, _ := Encode(got)
			b, _ := Encode(tt.want)
			if string(a) != string(b) {
				t.Fatalf("got  %s\nwant %s", a, b)
			}
		})
	}
	// A recorded decision reads back as the decision that wrote it.
	for _, e := range []Event{{Kind: KindApprovalGranted, Scope: ScopeSession}, {Kind: KindApprovalDenied, Reason: "r"}} {
		d, ok := DecisionOf(e)
		if !ok {
			t.Fatalf("DecisionOf(%s) not a decision", e.Kind)
		}
		if got, _ := Decide(st, "a", d); got.Kind != e.Kind || got.Scope != e.Scope || got.Reason != e.Reason {
			t.Fatalf("round trip of %s: %+v", e.Kind, got)
		}
	}
}
