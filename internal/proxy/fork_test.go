package proxy

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// TestAfterTurn: a scripted backend counted after the first skip calls
// answers call skip+k with its turn k, and the ids of its tool calls name
// the conversation's call, so none repeats an id of the skipped calls (the
// OpenAI Agents SDK fails on a reused id). An Upstream is left as it is.
func TestAfterTurn(t *testing.T) {
	b := AfterTurn(NewScripted(loadScript(t, testScript), "m2"), 2)
	for _, tc := range []struct {
		turn       int
		want, nots string
	}{
		{3, `"call_3_0"`, "call_1_0"},
		{4, "Done: the readme says hello.", "Let me look."},
	} {
		w := httptest.NewRecorder()
		c := &Call{API: "chat_completions", Provider: "openai", SessionID: "s", Turn: tc.turn, Model: "m1",
			Messages: []session.Message{{Role: session.RoleUser, Content: "hi"}}}
		if err := b.Serve(context.Background(), c, w); err != nil {
			t.Fatal(err)
		}
		if got := w.Body.String(); !strings.Contains(got, tc.want) || strings.Contains(got, tc.nots) {
			t.Errorf("call %d answered %s, want %s and no %s", tc.turn, got, tc.want, tc.nots)
		}
	}
	up, err := NewUpstream("http://127.0.0.1:1/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if AfterTurn(up, 2) != Backend(up) {
		t.Error("AfterTurn wrapped an Upstream")
	}
}

// TestTurnsThrough: the turns at or before a seq are the model calls up
// to it, a compaction's call not counted, as NewReplay counts them.
func TestTurnsThrough(t *testing.T) {
	evs := []session.Event{
		{Seq: 1, Kind: session.KindSessionStarted},
		{Seq: 2, Kind: session.KindModelCall},
		{Seq: 3, Kind: session.KindModelCall, Attrs: []byte(`{"purpose":"compaction"}`)},
		{Seq: 4, Kind: session.KindToolResult},
		{Seq: 5, Kind: session.KindModelCall},
	}
	for seq, want := range map[int64]int{1: 0, 2: 1, 3: 1, 4: 1, 5: 2, 9: 2} {
		if got := TurnsThrough(evs, seq); got != want {
			t.Errorf("TurnsThrough(%d) = %d, want %d", seq, got, want)
		}
	}
}
