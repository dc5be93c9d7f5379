package session

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"runtime"
	"testing"
	"time"
)

// foldSays is everything a reader can ask a fold, as JSON: its figures,
// its calls through Dispatched and Call, and its lists.
func foldSays(t *testing.T, s *State, ids []string) string {
	t.Helper()
	figures := *s
	figures.Calls, figures.Latest = nil, nil
	byID := map[string]*Call{}
	for _, id := range ids {
		byID[id] = s.Call(id)
	}
	// DispatchedCalls may hand the same Call each time: each as it comes.
	var each []string
	for c := range s.DispatchedCalls() {
		b, _ := json.Marshal(c)
		each = append(each, string(b))
	}
	b, err := json.Marshal(map[string]any{"dispatched_each": each,
		"figures": &figures, "status": s.Status(), "tokens": s.Tokens(), "grants": s.GrantList(),
		"dispatched": s.Dispatched(), "pending": s.PendingIntents(), "awaiting": s.AwaitingApproval(),
		"needs_human": s.NeedsHuman(), "open": s.OpenCalls(), "by_id": byID,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLeanFoldIsTheFold: a lean fold (NewLeanState), which packs settled
// calls, says what the full fold says after every event, including of
// calls named again once settled: a result then a reconciliation, an
// intent after a result, a reused id, orphans, approvals, a needs_human
// resolved, arguments and times of any form.
func TestLeanFoldIsTheFold(t *testing.T) {
	t.Run("hashed ids", func(t *testing.T) { leanIsFull(t) })
	// Every id of one length under one hash: the index falls back on
	// the ids themselves.
	t.Run("colliding ids", func(t *testing.T) {
		defer func(h func(maphash.Seed, string) uint64) { idHash = h }(idHash)
		idHash = func(_ maphash.Seed, id string) uint64 { return uint64(len(id)) }
		leanIsFull(t)
	})
}

func leanIsFull(t *testing.T) {
	zone := time.FixedZone("", 2*3600+30*60)
	args := func(e Event, a string) Event { e.Args = json.RawMessage(a); return e }
	evs := log(header(Event{Name: "n", Spec: json.RawMessage(`{"budget":{"max_tool_calls":9}}`)}), Event{Kind: KindUserMessage},
		asks("a", "b", "c"), Event{Kind: KindModelCall, InputTokens: 7, OutputTokens: 3},
		args(intent("a"), `{"path": "x"}`), Event{Kind: KindToolResult, CallID: "a", Tool: "t_a", Status: ResultOK, LatencyMS: 12, TS: st0.In(zone)},
		intent("b"), result("b", ResultError), reconciled("b", ReconciledNeedsHuman),
		Event{Kind: KindApprovalRequest, CallID: "c"}, Event{Kind: KindApprovalDenied, CallID: "c"},
		reconciled("a", ReconciledRecovered), intent("a"),
		asks("a", "d"), Event{Kind: KindApprovalRequest, CallID: "d"}, Event{Kind: KindApprovalGranted, CallID: "d", Tool: "t_d", Scope: ScopeSession},
		intent("d"), Event{Kind: KindToolResult, CallID: "d", Tool: "t_d", Status: ResultError, Error: "boom", Args: json.RawMessage(`{}`)},
		result("a", ResultOK), result("z", ResultOK), result("z", ResultCancelled), result("b", ResultCancelled),
		Event{Kind: KindToolResult, CallID: "y", Tool: "t_y", Status: ResultOK, Args: json.RawMessage(``)},
		asks("zz"), intent("zz"), result("zz", ResultOK), asks("e"), Event{Kind: KindToolResult, CallID: "e", Tool: "t_e", Status: ResultOK, TS: time.Time{}},
		intent("e"), finished(StatusDone))
	ids := []string{"a", "b", "c", "d", "e", "y", "z", "none", "zz"}
	full, lean := NewState(), NewLeanState()
	for _, e := range evs {
		full.Add(e)
		lean.Add(e)
		if f, l := foldSays(t, full, ids), foldSays(t, lean, ids); f != l {
			t.Fatalf("after seq %d (%s) the lean fold says\n%s\nthe full one\n%s", e.Seq, e.Kind, l, f)
		}
	}
	if len(lean.packed) == 0 {
		t.Fatal("the lean fold packed no call")
	}
}

// TestLeanFoldIsSmall: a lean fold of 50,000 finished calls holds under
// half of what the full fold holds.
func TestLeanFoldIsSmall(t *testing.T) {
	heap := func(s *State) uint64 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		seq := int64(0)
		add := func(e Event) {
			seq++
			e.Seq, e.TS = seq, st0.Add(time.Duration(seq)*time.Millisecond)
			s.Add(e)
		}
		add(header(Event{}))
		for i := range 50_000 {
			id := fmt.Sprintf("call_%d_0", i)
			a := json.RawMessage(fmt.Sprintf(`{"path":"pkg/f%d.go"}`, i))
			add(Event{Kind: KindAssistantMessage, ToolCalls: []ToolCall{{ID: id, Name: "read_file", Args: a}}})
			add(Event{Kind: KindToolIntent, CallID: id, Tool: "read_file", Args: a})
			add(Event{Kind: KindToolResult, CallID: id, Tool: "read_file", Status: ResultOK, Output: "x"})
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		runtime.KeepAlive(s)
		return m1.HeapAlloc - min(m1.HeapAlloc, m0.HeapAlloc)
	}
	full, lean := heap(NewState()), heap(NewLeanState())
	t.Logf("50,000 calls: full fold %.1f MiB, lean %.1f MiB", float64(full)/(1<<20), float64(lean)/(1<<20))
	if lean*2 > full {
		t.Errorf("lean fold %d bytes, full %d: want under half", lean, full)
	}
}
