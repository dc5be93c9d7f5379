package bundle_test

import (
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestFoldStatus: last_state.json calls a log with no end crashed when no
// process holds its lease (it said running), running when one does, and
// lists what the session waits on from the one fold.
func TestFoldStatus(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	evs := []session.Event{
		{Seq: 1, TS: t0, Kind: session.KindSessionStarted, Provider: "scripted", Model: "m"},
		{Seq: 2, TS: t0, Kind: session.KindUserMessage, Text: "go"},
		{Seq: 3, TS: t0, Kind: session.KindAssistantMessage, ToolCalls: []session.ToolCall{{ID: "a", Name: "charge"}, {ID: "b", Name: "send"}, {ID: "c", Name: "rm"}}},
		{Seq: 4, TS: t0, Kind: session.KindToolIntent, CallID: "a", Tool: "charge", IdempotencyKey: "k-a"},
		{Seq: 5, TS: t0, Kind: session.KindToolIntent, CallID: "b", Tool: "send", IdempotencyKey: "k-b"},
		{Seq: 6, TS: t0, Kind: session.KindReconciled, CallID: "b", Tool: "send", Outcome: session.ReconciledNeedsHuman},
		{Seq: 7, TS: t0, Kind: session.KindApprovalRequest, CallID: "c", Tool: "rm"},
		{Seq: 8, TS: t0, Kind: session.KindApprovalGranted, CallID: "x", Tool: "ls", Scope: session.ScopeSession},
	}
	tests := []struct {
		live bool
		want session.Status
	}{
		{false, session.StatusCrashed},
		{true, session.StatusRunning},
	}
	for _, tt := range tests {
		st := bundle.Fold("s", evs, recorder.Tail{}, tt.live, nil)
		if st.Status != tt.want {
			t.Errorf("live %v: status %s, want %s", tt.live, st.Status, tt.want)
		}
		if len(st.Pending) != 1 || st.Pending[0].CallID != "a" || st.Pending[0].IdempotencyKey != "k-a" ||
			len(st.Human) != 1 || st.Human[0].CallID != "b" || len(st.Awaiting) != 1 || st.Awaiting[0].CallID != "c" ||
			len(st.Grants) != 1 || st.Grants[0] != "ls" || st.ToolCalls != 2 || st.LastSeq != 8 {
			t.Errorf("live %v: %+v", tt.live, st)
		}
	}
	if st := bundle.Fold("s", evs[:3], recorder.Tail{}, false, &recorder.CorruptError{Reason: "checksum mismatch"}); st.Status != session.StatusCorrupt || st.Err == "" {
		t.Errorf("corrupt log: status %s, err %q", st.Status, st.Err)
	}
}
