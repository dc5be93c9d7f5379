package session

import "fmt"

// The human decisions a stopped run waits for.
const (
	// DecideApprove and DecideDeny answer a call awaiting approval.
	DecideApprove = "approve"
	DecideDeny    = "deny"
	// DecideTookEffect and DecideNotDone answer a side-effecting call
	// reconciled as needs_human: a human checked whether it took effect.
	DecideTookEffect = "took_effect"
	DecideNotDone    = "not_done"
)

// Decision is what a human decided about one call: approve (Scope once
// or session) or deny (with a Reason) a call awaiting approval, or say
// whether a call that needed checking took effect (Output is then the
// result the model reads).
type Decision struct {
	Verb   string
	Scope  string
	Reason string
	Output string
}

// Decide is the event that records d for call (found in the fold st), or
// an error saying why the call cannot take that decision now. It is the
// one place a decision becomes events: `agentctl approve`, `deny` and
// `resolve` append what it returns, and replay re-applies the recording's
// approvals through it, so both write the same records.
func Decide(st *State, callID string, d Decision) (Event, error) {
	c := st.Call(callID)
	switch d.Verb {
	case DecideApprove, DecideDeny:
		if c == nil || !c.AwaitingApproval() {
			return Event{}, fmt.Errorf("session %s: call %q is not waiting for approval", st.ID, callID)
		}
		if d.Verb == DecideDeny {
			return Event{Kind: KindApprovalDenied, CallID: c.ID, Tool: c.Tool, Reason: d.Reason}, nil
		}
		if d.Scope != ScopeOnce && d.Scope != ScopeSession {
			return Event{}, fmt.Errorf("approval scope %q: use once or session", d.Scope)
		}
		return Event{Kind: KindApprovalGranted, CallID: c.ID, Tool: c.Tool, Scope: d.Scope}, nil
	case DecideTookEffect:
		if c == nil || !c.NeedsHuman {
			return Event{}, fmt.Errorf("session %s: call %q does not need a human", st.ID, callID)
		}
		return Event{Kind: KindReconciled, CallID: c.ID, Tool: c.Tool, IdempotencyKey: c.IdempotencyKey,
			Outcome: ReconciledRecovered, Output: d.Output, Reason: "a human checked it: it took effect"}, nil
	case DecideNotDone:
		if c == nil || !c.NeedsHuman {
			return Event{}, fmt.Errorf("session %s: call %q does not need a human", st.ID, callID)
		}
		return Event{Kind: KindToolResult, CallID: c.ID, Tool: c.Tool, Status: ResultCancelled,
			Error: "it did not take effect (checked by a human); call it again if it is still needed"}, nil
	}
	return Event{}, fmt.Errorf("decision %q: want approve, deny, took_effect or not_done", d.Verb)
}

// DecisionOf reads a recorded approval decision back as a Decision, for
// re-applying it (replay); ok is false for any other event.
func DecisionOf(e Event) (d Decision, ok bool) {
	switch e.Kind {
	case KindApprovalGranted:
		scope := e.Scope
		if scope == "" {
			scope = ScopeOnce // what an unscoped grant always meant
		}
		return Decision{Verb: DecideApprove, Scope: scope}, true
	case KindApprovalDenied:
		return Decision{Verb: DecideDeny, Reason: e.Reason}, true
	}
	return Decision{}, false
}
