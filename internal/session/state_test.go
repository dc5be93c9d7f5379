package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

var st0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// log numbers events from 1 and stamps them a second apart.
func log(evs ...Event) []Event {
	for i := range evs {
		evs[i].Seq = int64(i + 1)
		if evs[i].TS.IsZero() {
			evs[i].TS = st0.Add(time.Duration(i) * time.Second)
		}
	}
	return evs
}

func header(e Event) Event {
	e.Kind = KindSessionStarted
	if e.Provider == "" {
		e.Provider, e.Model = "scripted", "m1"
	}
	return e
}

func asks(ids ...string) Event {
	e := Event{Kind: KindAssistantMessage}
	for _, id := range ids {
		e.ToolCalls = append(e.ToolCalls, ToolCall{ID: id, Name: "t_" + id, Args: json.RawMessage(`{}`)})
	}
	return e
}

func intent(id string) Event { return Event{Kind: KindToolIntent, CallID: id, Tool: "t_" + id} }
func result(id, status string) Event {
	return Event{Kind: KindToolResult, CallID: id, Tool: "t_" + id, Status: status}
}
func reconciled(id, outcome string) Event {
	return Event{Kind: KindReconciled, CallID: id, Tool: "t_" + id, Outcome: outcome}
}
func finished(s Status) Event { return Event{Kind: KindSessionFinished, Status: string(s)} }

// calls prints the calls the fold knows: id, request, outcome.
func calls(s *State) string {
	var parts []string
	for _, c := range s.Calls {
		parts = append(parts, fmt.Sprintf("%s@%d:%s", c.ID, c.RequestSeq, c.Outcome()))
	}
	return strings.Join(parts, " ")
}

func ids(cs []*Call) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.ID)
	}
	return strings.Join(parts, " ")
}

func TestFold(t *testing.T) {
	tests := []struct {
		name  string
		evs   []Event
		live  bool
		check func(s *State) string // "" when the fold is right
	}{
		{"empty log", nil, false, func(s *State) string {
			return want(s.Status() == StatusCrashed && s.Events == 0 && s.ToolCalls == 0, "empty")
		}},
		{"done", log(header(Event{Name: "n"}), Event{Kind: KindUserMessage}, asks("a"), Event{Kind: KindModelCall, InputTokens: 7, OutputTokens: 3, CostUSD: 0.5},
			intent("a"), result("a", ResultOK), finished(StatusDone)), false, func(s *State) string {
			return want(s.Status() == StatusDone && s.Ended().Equal(st0.Add(6*time.Second)) && s.Tokens() == 10 && s.CostUSD == 0.5 &&
				s.ToolCalls == 1 && s.Turns == 1 && s.Name == "n" && calls(s) == "a@3:ok", "done")
		}},
		{"no end: running while live", log(header(Event{}), Event{Kind: KindUserMessage}), true, func(s *State) string {
			return want(s.Status() == StatusRunning && s.Ended().IsZero(), "running")
		}},
		{"no end: crashed when no one writes", log(header(Event{}), Event{Kind: KindUserMessage}), false, func(s *State) string {
			return want(s.Status() == StatusCrashed, "crashed")
		}},
		{"resumed after a finish is running again", log(header(Event{}), finished(StatusAwaitingApproval), Event{Kind: KindApprovalGranted, CallID: "a"}), true, func(s *State) string {
			return want(s.Status() == StatusRunning && s.Ended().IsZero() && s.Finished.Seq == 2, "resumed")
		}},
		{"imported records no end", log(header(Event{Attrs: json.RawMessage(`{"imported_from":"claude-code"}`)}), asks("x"), result("x", ResultOK)), false, func(s *State) string {
			// Imports record results, not intents: the call still counts.
			return want(s.Status() == StatusImported && s.ImportedFrom == "claude-code" && s.ToolCalls == 1, "imported")
		}},
		{"a fork of an import has the fork point's end", log(header(Event{Attrs: json.RawMessage(`{"imported_from":"claude-code"}`), ParentSessionID: "p", ForkedFrom: 1}),
			finished(StatusInterrupted), Event{Kind: KindUserMessage}), false, func(s *State) string {
			return want(s.Status() == StatusCrashed, "fork of import")
		}},
		{"model in force after model_changed", log(header(Event{}), Event{Kind: KindModelChanged, Provider: "openai", Model: "gpt"}), false, func(s *State) string {
			return want(s.Provider == "openai" && s.Model == "gpt" && s.PinnedModel == "m1", "model")
		}},
		{"needs_human: the call in flight counts once and waits", log(header(Event{}), asks("a"), intent("a"), reconciled("a", ReconciledNeedsHuman), finished(StatusNeedsHuman)), false, func(s *State) string {
			return want(s.ToolCalls == 1 && ids(s.NeedsHuman()) == "a" && len(s.PendingIntents()) == 0 && len(s.OpenCalls()) == 0 && calls(s) == "a@2:needs_human", "needs_human")
		}},
		{"a human resolves it", log(header(Event{}), asks("a"), intent("a"), reconciled("a", ReconciledNeedsHuman), reconciled("a", ReconciledRecovered)), false, func(s *State) string {
			return want(len(s.NeedsHuman()) == 0 && s.Calls[0].Outcomes == 2 && calls(s) == "a@2:recovered", "resolved")
		}},
		{"--not-done resolves it with a result", log(header(Event{}), asks("a"), intent("a"), reconciled("a", ReconciledNeedsHuman), result("a", ResultCancelled)), false, func(s *State) string {
			return want(len(s.NeedsHuman()) == 0 && calls(s) == "a@2:cancelled", "not done")
		}},
		{"crash between call and result: pending, open", log(header(Event{}), asks("a", "b"), intent("a")), false, func(s *State) string {
			return want(ids(s.PendingIntents()) == "a" && ids(s.OpenCalls()) == "a b" && s.ToolCalls == 1 && calls(s) == "a@2:pending b@2:pending", "pending")
		}},
		{"refused before dispatch: a result, no intent, counted", log(header(Event{}), asks("a"), result("a", ResultError)), false, func(s *State) string {
			return want(s.ToolCalls == 1 && s.Errors == 1 && s.Calls[0].IntentSeq == 0 && len(s.Dispatched()) == 1, "refused")
		}},
		{"approvals: awaiting, granted for the session, denied", log(header(Event{}), asks("a", "b", "c"),
			Event{Kind: KindApprovalRequest, CallID: "a"}, Event{Kind: KindApprovalRequest, CallID: "b"}, Event{Kind: KindApprovalRequest, CallID: "c"},
			Event{Kind: KindApprovalGranted, CallID: "b", Tool: "t_b", Scope: ScopeSession}, Event{Kind: KindApprovalDenied, CallID: "c"}), false, func(s *State) string {
			return want(ids(s.AwaitingApproval()) == "a" && s.Grants["t_b"] && len(s.GrantList()) == 1 && ids(s.OpenCalls()) == "a b" &&
				s.ToolCalls == 0 && len(s.Dispatched()) == 0, "approvals")
		}},
		{"a reused call id is a new call", log(header(Event{}), asks("a"), intent("a"), result("a", ResultOK), asks("a"), intent("a"), result("a", ResultError)), false, func(s *State) string {
			return want(s.ToolCalls == 2 && calls(s) == "a@2:ok a@5:error" && s.Call("a").RequestSeq == 5, "reused id")
		}},
		{"orphan result attaches to no request", log(header(Event{}), result("z", ResultOK), result("z", ResultOK)), false, func(s *State) string {
			return want(s.ToolCalls == 1 && calls(s) == "z@0:ok" && s.Calls[0].Outcomes == 2, "orphan")
		}},
		{"errors, compactions, evaluations, children", log(header(Event{}), Event{Kind: KindError, Error: "x"}, Event{Kind: KindCompaction, Through: 1},
			Event{Kind: KindEvaluation, Outcome: "fail"}, Event{Kind: KindSubagentStarted, ChildSessionID: "kid"}), false, func(s *State) string {
			return want(s.Errors == 1 && s.Compactions == 1 && s.EvalFailures == 1 && s.LastEval != nil && s.LastError != nil &&
				strings.Join(s.Children, ",") == "kid", "misc")
		}},
		{"wall time: per invocation, the wait between does not count", log(header(Event{}), Event{Kind: KindUserMessage, TS: st0.Add(10 * time.Second)},
			Event{Kind: KindSessionFinished, TS: st0.Add(40 * time.Second)}, Event{Kind: KindApprovalGranted, TS: st0.Add(time.Hour)},
			Event{Kind: KindSessionFinished, TS: st0.Add(time.Hour + 30*time.Second)}), false, func(s *State) string {
			return want(s.WallSpent == 70*time.Second && s.SegStart.IsZero(), fmt.Sprint("wall ", s.WallSpent))
		}},
		{"a fork's header, stamped later, starts no segment", log(header(Event{ParentSessionID: "p", ForkedFrom: 2, TS: st0.Add(time.Hour)}),
			Event{Kind: KindUserMessage, TS: st0}, Event{Kind: KindSessionFinished, TS: st0.Add(5 * time.Second)}), false, func(s *State) string {
			return want(s.WallSpent == 5*time.Second && s.Started.Equal(st0.Add(time.Hour)) && s.ParentSessionID == "p", fmt.Sprint("fork wall ", s.WallSpent))
		}},
		{"an external agent's fork copies nothing: its segment starts at the header", log(header(Event{ParentSessionID: "p", ForkedFrom: 4, TS: st0}),
			Event{Kind: KindUserMessage, TS: st0.Add(3 * time.Second)}, Event{Kind: KindSessionFinished, TS: st0.Add(5 * time.Second)}), false, func(s *State) string {
			return want(s.WallSpent == 5*time.Second && s.ForkedFrom == 4, fmt.Sprint("external fork wall ", s.WallSpent))
		}},
		{"an unknown kind counts and follows the finish", log(header(Event{}), finished(StatusDone), Event{Kind: "from_the_future"}), false, func(s *State) string {
			return want(s.Events == 3 && s.Status() == StatusCrashed && s.LastKind == "from_the_future", "unknown kind")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Fold(tt.evs)
			s.Live = tt.live
			if msg := tt.check(s); msg != "" {
				b, _ := json.Marshal(s)
				t.Errorf("%s: status %s\n%s", msg, s.Status(), b)
			}
		})
	}
}

func want(ok bool, what string) string {
	if ok {
		return ""
	}
	return what + ": wrong fold"
}

// TestCorruptWins: a log read only up to damage is corrupt, whatever the
// readable part ends with, and has no end time.
func TestCorruptWins(t *testing.T) {
	s := Fold(log(header(Event{}), finished(StatusDone)))
	s.Corrupt, s.Live = true, true
	if s.Status() != StatusCorrupt || !s.Ended().IsZero() {
		t.Fatalf("status %s, ended %v; want corrupt, none", s.Status(), s.Ended())
	}
}

// TestStateJSONRoundTrip: a State decoded from its JSON goes on folding
// exactly as the original (the call index is rebuilt), at every cut.
func TestStateJSONRoundTrip(t *testing.T) {
	evs := log(header(Event{}), asks("a", "b"), intent("a"), result("a", ResultOK), Event{Kind: KindApprovalRequest, CallID: "b"},
		Event{Kind: KindApprovalGranted, CallID: "b", Tool: "t_b", Scope: ScopeSession}, intent("b"), reconciled("b", ReconciledRepeated),
		asks("a"), intent("a"), result("a", ResultOK), finished(StatusDone))
	whole, _ := json.Marshal(Fold(evs))
	for cut := range evs {
		b, _ := json.Marshal(Fold(evs[:cut]))
		var s State
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs[cut:] {
			s.Add(e)
		}
		if got, _ := json.Marshal(&s); string(got) != string(whole) {
			t.Fatalf("cut at %d:\n%s\nwant\n%s", cut, got, whole)
		}
	}
}

func TestEventAt(t *testing.T) {
	evs := log(header(Event{}), intent("a"), result("a", ResultOK))
	sparse := []Event{{Seq: 2}, {Seq: 5}, {Seq: 9}}
	tests := []struct {
		evs  []Event
		seq  int64
		ok   bool
		want int64
	}{
		{evs, 2, true, 2}, {evs, 0, false, 0}, {evs, 4, false, 0},
		{sparse, 5, true, 5}, {sparse, 3, false, 0}, {sparse, 9, true, 9},
	}
	for _, tt := range tests {
		e, ok := EventAt(tt.evs, tt.seq)
		if ok != tt.ok || e.Seq != tt.want {
			t.Errorf("EventAt(%d) = %d, %v; want %d, %v", tt.seq, e.Seq, ok, tt.want, tt.ok)
		}
	}
}

// BenchmarkFoldAdd is the runner's per-event cost of the fold.
func BenchmarkFoldAdd(b *testing.B) {
	var evs []Event
	for i := range 1000 {
		id := fmt.Sprintf("call_%d_0", i)
		evs = append(evs, asks(id), Event{Kind: KindModelCall, InputTokens: 10}, intent(id), result(id, ResultOK))
	}
	evs = log(append([]Event{header(Event{})}, evs...)...)
	b.ReportAllocs()
	for b.Loop() {
		s := NewState()
		for _, e := range evs {
			s.Add(e)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

// TestModelCallsFailure: the rule a session recorded at the model API
// ends failed by: a divergence, or every model call failed; calls some of
// which failed, and calls a policy refused, decide nothing.
func TestModelCallsFailure(t *testing.T) {
	ok := Event{Kind: KindModelCall, Model: "m"}
	bad := func(typ, msg string) Event { return Event{Kind: KindModelCall, ErrorType: typ, Error: msg} }
	refused := Event{Kind: KindModelCall, ErrorType: "budget_exceeded", Error: "spent", Attrs: json.RawMessage(`{"refused":true}`)}
	div := bad(ErrorTypeReplayDivergence, "agentctl replay: turn 2 diverges: x")
	for _, tc := range []struct {
		name         string
		evs          []Event
		reason, want string
	}{
		{"no calls", nil, "", ""},
		{"all answered", []Event{ok, ok}, "", ""},
		{"some failed", []Event{bad("server_error", "overloaded"), ok}, "", ""},
		{"the one failed", []Event{bad("connection_error", "unreachable")}, ReasonProviderError, "the one model call failed: connection_error: unreachable"},
		{"all failed", []Event{bad("server_error", "overloaded"), bad("", "no more")}, ReasonProviderError, "all 2 model calls failed; the last: no more"},
		{"diverged after answers", []Event{ok, div, bad("x", "later")}, ErrorTypeReplayDivergence, "agentctl replay: turn 2 diverges: x"},
		{"refused only", []Event{refused}, "", ""},
		{"refused then failed", []Event{refused, bad("server_error", "overloaded")}, ReasonProviderError, "the one model call failed: server_error: overloaded"},
		{"other kinds", []Event{{Kind: KindError, Error: "e"}}, "", ""},
	} {
		evs := append([]Event{{Kind: KindSessionStarted}}, tc.evs...)
		reason, detail := Fold(evs).ModelCalls.Failure()
		if reason != tc.reason || detail != tc.want {
			t.Errorf("%s: Failure() = %q, %q; want %q, %q", tc.name, reason, detail, tc.reason, tc.want)
		}
	}
}
