package check

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// collected is a session as `agentctl collect` records an app that sends
// only its newest messages: a compaction every turn, with no through (so
// none drops anything from the projection), then the user's message, the
// answer and its model call.
func collected(turns int) []session.Event {
	evs := []session.Event{{Seq: 1, Kind: session.KindSessionStarted, SessionID: "c"}}
	add := func(e session.Event) { e.Seq = int64(len(evs) + 1); evs = append(evs, e) }
	for t := 1; t <= turns; t++ {
		if t > 1 {
			add(session.Event{Kind: session.KindCompaction, Summary: fmt.Sprintf("question %d", t), Attrs: json.RawMessage(`{"recorded_by":"otlp"}`)})
		}
		add(session.Event{Kind: session.KindUserMessage, Text: fmt.Sprintf("Where is order %d?", t)})
		add(session.Event{Kind: session.KindAssistantMessage, Text: fmt.Sprintf("Order %d shipped.", t)})
		add(session.Event{Kind: session.KindModelCall, InputTokens: 40, OutputTokens: 10})
	}
	return evs
}

// TestAnchorsLinearInCompactions: checking a log of compactions that drop
// nothing costs work in proportion to the log, not to compactions times
// projection (diagnose took 117 CPU-s on 70,000 of them). The measure is
// bytes allocated, which the old check spent copying the projection at
// each compaction: 4x the turns must cost about 4x, never 16x.
func TestAnchorsLinearInCompactions(t *testing.T) {
	cost := func(turns int) uint64 {
		evs := collected(turns)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rep := Anchors("c", evs, nil)
		runtime.ReadMemStats(&after)
		if len(rep.Compactions) != turns-1 {
			t.Fatalf("%d compactions checked, want %d", len(rep.Compactions), turns-1)
		}
		for _, c := range rep.Compactions {
			for _, f := range c.Findings {
				if f.Code == CodeFirstUserLost {
					t.Fatalf("compaction %d: %s, but nothing was dropped", c.Seq, f.Detail)
				}
			}
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := cost(2_000), cost(8_000)
	if ratio := float64(large) / float64(small); ratio > 6 {
		t.Fatalf("4x the compactions allocated %.1fx the bytes (%d vs %d): the check is not linear", ratio, large, small)
	}
}
