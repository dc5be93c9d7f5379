// Package approval records a human's decision on a tool call a run stopped
// on: `agentctl approve`/`deny` and the web app's approvals page call the
// same code, so a decision made in either place is the same event, taken
// under the session's lease, and `agentctl resume` continues the run the
// same way after either.
package approval

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Result is a recorded decision.
type Result struct {
	SessionID string
	// Call is the call decided, as the fold saw it before the decision.
	Call *session.Call
	// Event is the decision as recorded (seq, time, redaction).
	Event session.Event
}

// AmbiguousError is a decision that names no call while several wait.
type AmbiguousError struct {
	SessionID string
	Waiting   []*session.Call
}

func (e *AmbiguousError) Error() string {
	var ids []string
	for _, p := range e.Waiting {
		ids = append(ids, fmt.Sprintf("%s (%s)", p.ID, p.Tool))
	}
	return fmt.Sprintf("session %s has %d calls waiting: %s; name one", e.SessionID, len(e.Waiting), strings.Join(ids, ", "))
}

// Waiting lists the calls of session id waiting for approval, in the
// order they were asked, from a streamed fold.
func Waiting(st recorder.Store, id string) ([]*session.Call, error) {
	fold, _, err := st.Fold(id)
	if err != nil {
		return nil, err
	}
	return fold.AwaitingApproval(), nil
}

// Decide records d (session.DecideApprove or DecideDeny) for call callID
// of the session ref names; callID may be empty when exactly one call
// waits. It takes the session's lease, so a session a process is running
// refuses it (a decision is an append like any other).
func Decide(st recorder.Store, ref, callID string, d session.Decision) (*Result, error) {
	id, err := st.Resolve(ref)
	if err != nil {
		return nil, err
	}
	sess, _, err := st.Open(id, recorder.Options{})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	evs, _, err := st.Load(id)
	if err != nil {
		return nil, err
	}
	fold := session.Fold(evs)
	pending := fold.AwaitingApproval()
	var target *session.Call
	switch {
	case len(pending) == 0:
		return nil, fmt.Errorf("session %s has no call waiting for approval", id)
	case callID == "" && len(pending) > 1:
		return nil, &AmbiguousError{SessionID: id, Waiting: pending}
	case callID == "":
		target = pending[0]
	default:
		for _, p := range pending {
			if p.ID == callID {
				target = p
			}
		}
		if target == nil {
			return nil, fmt.Errorf("session %s: call %q is not waiting for approval", id, callID)
		}
	}
	ev, err := session.Decide(fold, target.ID, d)
	if err != nil {
		return nil, err
	}
	out, err := sess.Append(ev)
	if err != nil {
		return nil, err
	}
	return &Result{SessionID: id, Call: target, Event: out[0]}, nil
}

// Command is what a waiting call would run, for a human to judge: a bash
// call's command, else its arguments as JSON.
func Command(c *session.Call) string {
	var m map[string]any
	if json.Unmarshal(c.Args, &m) == nil {
		if s, ok := m["command"].(string); ok {
			return s
		}
	}
	return string(c.Args)
}
