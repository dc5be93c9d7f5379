package replay

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// Subagents in a replay: a task call of the replay starts a child harness
// as the recording did (runner.ChildSource), and the child is served from
// ITS OWN recording, exactly as the top session is: its recorded model
// answers stand in for its model (provider.Recorded), its tools re-run in
// the replay's workspace, and each of its tool results is compared with
// its recording's. The recorded child is the one the original task call
// started: the session whose id derives from that call's idempotency key
// (runner.SubagentID) and whose header names the original as parent at
// the call's tool_intent seq. A log handed to us was written by someone
// else, so a child whose header does not name that parent and seq is not
// served: the task call gets an error result, and diverges.
//
// A child's differences carry its recorded session (ToolDiff.Session) and
// turn; a task call whose result differs names the child that gave it and
// the child's turn that answered (ChildSessionID, ChildTurn).

// childReplay is one subagent a replay started.
type childReplay struct {
	obs  *compareObserver
	prov *provider.Recorded
}

var _ runner.ChildSource = (*compareObserver)(nil)

// newCompare is the observer comparing the replay of recorded session id
// (events evs; child is id for a subagent, "" at the top) with it.
func newCompare(id, child string, evs []session.Event, strict bool, stop context.CancelFunc, recordings *recorder.Store) *compareObserver {
	fold := session.Fold(evs)
	orig, order := recordedResults(fold, evs)
	calls := make(map[callKey]*session.Call, len(fold.Calls))
	for _, c := range fold.Calls {
		calls[keyOf(c)] = c
	}
	return &compareObserver{orig: orig, order: order, calls: calls, strict: strict, stop: stop, origID: id, child: child, origFold: fold,
		recordings: recordings, children: map[callKey]*childReplay{}, seen: map[callKey]bool{}, fold: session.NewState()}
}

// Child serves the subagent the replay's task call c starts from the
// recording of the subagent the same call started in the original.
func (o *compareObserver) Child(sp *spec.Spec, c runner.ChildCall) (runner.ChildModel, error) {
	key := callKey{c.Turn, c.CallID}
	var oc *session.Call
	for _, rc := range o.origFold.Calls {
		if keyOf(rc) == key {
			oc = rc
		}
	}
	if oc == nil {
		return runner.ChildModel{}, fmt.Errorf("replay: the recording %s has no task call %s in turn %d, so no subagent recording can stand in for this one", o.origID, c.CallID, c.Turn)
	}
	if oc.IdempotencyKey == "" {
		return runner.ChildModel{}, fmt.Errorf("replay: the recording's task call %s (turn %d) has no idempotency key, so its subagent's session cannot be found", c.CallID, c.Turn)
	}
	if o.recordings == nil {
		return runner.ChildModel{}, fmt.Errorf("replay: no store of recorded subagents was given")
	}
	id := runner.SubagentID(oc.IdempotencyKey)
	evs, _, err := o.recordings.Load(id)
	if len(evs) == 0 {
		if err == nil {
			err = fmt.Errorf("the log is empty")
		}
		return runner.ChildModel{}, fmt.Errorf("replay: the recording of subagent %s (task call %s, turn %d of %s): %v; replay needs the home the session ran in, with its subagents (bundle --with-children)",
			id, c.CallID, c.Turn, o.origID, err)
	}
	hdr := evs[0]
	if hdr.Kind != session.KindSessionStarted || hdr.ParentSessionID != o.origID || hdr.ParentSeq != oc.IntentSeq {
		return runner.ChildModel{}, fmt.Errorf("replay: the session %s names parent %q at seq %d, but the subagent of task call %s is %s's at seq %d: it is not that call's recording",
			id, hdr.ParentSessionID, hdr.ParentSeq, c.CallID, o.origID, oc.IntentSeq)
	}
	prov := provider.NewRecorded(evs)
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch := o.children[key]; ch != nil {
		// The replay resumes a child it started (its parent waited for an
		// approval): the same comparison goes on, and the resume sets the
		// new provider to the turns already served.
		ch.prov = prov
		return runner.ChildModel{Provider: prov, Observer: ch.obs, Children: ch.obs, Keys: ch.obs.recordedKey}, nil
	}
	obs := newCompare(id, id, evs, o.strict, o.stop, o.recordings)
	obs.origTurns = prov.Turns()
	o.children[key] = &childReplay{obs: obs, prov: prov}
	o.started = append(o.started, key)
	return runner.ChildModel{Provider: prov, Observer: obs, Children: obs, Keys: obs.recordedKey}, nil
}

// anyStopped reports whether --strict stopped o's replay or a
// subagent's (which stops the whole tree). o.mu is held.
func (o *compareObserver) anyStopped() bool {
	if o.stopped {
		return true
	}
	for _, ch := range o.children {
		ch.obs.mu.Lock()
		s := ch.obs.anyStopped()
		ch.obs.mu.Unlock()
		if s {
			return true
		}
	}
	return false
}

// childReports appends to diffs the differences of every subagent o's
// replay started, depth first in start order, and to reps their reports.
// o.mu is held; the children's replays have ended.
func (o *compareObserver) childReports(diffs []ToolDiff, reps []SubagentReport, stopped bool) ([]ToolDiff, []SubagentReport) {
	for _, k := range o.started {
		ch := o.children[k]
		c := ch.obs
		c.mu.Lock()
		status := string(c.fold.Status())
		reps = append(reps, SubagentReport{SessionID: c.origID, ReplaySessionID: c.fold.ID, ParentSessionID: o.origID,
			LogStatus: string(c.origFold.Status()), ReplayStatus: status, Turns: ch.prov.Turn(), RecordedTurns: c.origTurns,
			ToolResults: c.results, Same: c.same})
		diffs = append(diffs, c.diffs...)
		if !stopped {
			diffs = append(diffs, c.finish(status, false)...)
		}
		diffs, reps = c.childReports(diffs, reps, stopped)
		c.mu.Unlock()
	}
	return diffs, reps
}
