package runner

import (
	"sort"

	"github.com/agentctl/agentctl/internal/session"
)

// state is what the loop knows about its session: the log's fold
// (session.State, the same one every reader uses) and the projection the
// model is sent. It is rebuilt from the log, or a checkpoint and the log,
// on resume; nothing in it is stored elsewhere.
type state struct {
	session.State
	projector *session.Projector
	// originals are the original conversational events after the latest
	// compaction's through (session.IsOriginal), the only ones a next summary
	// reads: a compaction takes its requests from here instead of reading
	// the log, so its cost does not grow with the session. foldLog fills
	// it on resume.
	originals []session.Event
}

func newState(system string) *state {
	return &state{projector: session.NewProjector(system)}
}

// add folds one event. It must see every event the runner appends, in
// order: the fold is incremental, never redone per turn.
func (s *state) add(e session.Event) {
	s.State.Add(e)
	s.projector.Add(e)
	if session.IsOriginal(e.Kind) {
		s.originals = append(s.originals, e)
	} else if e.Kind == session.KindCompaction {
		s.keepOriginals(nil)
	}
}

// keepOriginals sets originals to those of evs (nil: of originals) after
// the projection's through.
func (s *state) keepOriginals(evs []session.Event) {
	if evs == nil {
		evs = s.originals
	}
	through := s.projector.Through()
	i := sort.Search(len(evs), func(i int) bool { return evs[i].Seq > through })
	var out []session.Event
	for _, e := range evs[i:] {
		if session.IsOriginal(e.Kind) {
			out = append(out, e)
		}
	}
	s.originals = out
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
