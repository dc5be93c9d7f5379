package runner

import (
	"github.com/agentctl/agentctl/session"
)

// state is what the loop knows about its session: the log's fold
// (session.State, the same one every reader uses) and the projection the
// model is sent. It is rebuilt from the log, or a checkpoint and the log,
// on resume; nothing in it is stored elsewhere.
type state struct {
	session.State
	projector *session.Projector
}

func newState(system string) *state {
	return &state{projector: session.NewProjector(system)}
}

// add folds one event. It must see every event the runner appends, in
// order: the fold is incremental, never redone per turn.
func (s *state) add(e session.Event) {
	s.State.Add(e)
	s.projector.Add(e)
}

// callState is the loop's copy of one open call of the latest assistant
// message, taken by openCalls from the fold.
type callState struct {
	Call         session.ToolCall
	AssistantSeq int64
	// Turn is the ordinal of the assistant message that requested it.
	Turn      int
	Index     int
	Intent    bool
	IntentKey string
	Requested bool // an approval_request was recorded
	Granted   string
}

// openCalls lists the calls of the latest assistant message that no event
// has ended yet, in call order: what resume must pick up.
func (s *state) openCalls() []*callState {
	var out []*callState
	for _, c := range s.OpenCalls() {
		out = append(out, &callState{
			Call:         session.ToolCall{ID: c.ID, Name: c.Tool, Args: c.Args},
			AssistantSeq: c.RequestSeq, Turn: c.Turn, Index: c.Index,
			Intent: c.IntentSeq > 0, IntentKey: c.IdempotencyKey,
			Requested: c.ApprovalSeq > 0, Granted: c.Granted,
		})
	}
	return out
}
