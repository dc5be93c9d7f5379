package bundle

import (
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// State is last_state.json: what folding a session's whole log gives after
// its last event. Figures are session.State's (recorder.SummaryOf); the
// projection is session.Projector's state (what the model would be sent
// next). Its JSON form only grows.
type State struct {
	recorder.Summary
	LastSeq  int64                  `json:"last_seq"`
	LastKind session.Kind           `json:"last_kind"`
	LastTS   time.Time              `json:"last_ts"`
	Reason   string                 `json:"reason,omitempty"` // of the last session_finished
	Turns    int                    `json:"turns"`            // assistant messages
	Pending  []Call                 `json:"pending_intents"`  // intent, no result
	Awaiting []Call                 `json:"awaiting_approval"`
	Human    []Call                 `json:"needs_human"`
	Grants   []string               `json:"session_grants"`
	Compact  int                    `json:"compactions"`
	Eval     *session.Event         `json:"last_evaluation,omitempty"`
	LastErr  *session.Event         `json:"last_error,omitempty"`
	Proj     session.ProjectorState `json:"projection"`
	// WorkspaceGitSHA is the workspace HEAD at the last checkpoint.
	WorkspaceGitSHA string `json:"workspace_git_sha,omitempty"`
}

// Call is a tool call the state still waits on.
type Call struct {
	CallID         string `json:"call_id"`
	Tool           string `json:"tool"`
	Seq            int64  `json:"seq"` // the intent, request or reconciliation
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Fold is last_state.json for session id: the fold of its events
// (session.State, the one every reader uses) and their projection. live
// says whether a process holds the session's lease and readErr is what
// reading the log found (a corrupt log is corrupt), the inputs the fold
// cannot get from the events.
func Fold(id string, evs []session.Event, tail recorder.Tail, live bool, readErr error) State {
	f := newFolder()
	for _, e := range evs {
		f.add(e)
	}
	return f.state(id, tail, live, readErr)
}

// folder folds a session's events as they come, for Fold and for a bundle
// that reads its log a record at a time: the fold's calls (a lean fold's,
// settled ones packed) and the projection are what it holds, not the
// events.
type folder struct {
	fold *session.State
	proj *session.Projector // from the first event, whose system prompt it starts with
}

func newFolder() *folder { return &folder{fold: session.NewLeanState()} }

func (f *folder) add(e session.Event) {
	if f.proj == nil {
		f.proj = session.NewProjector(e.System)
	}
	f.fold.Add(e)
	f.proj.Add(e)
}

// state is last_state.json of the events added (see Fold).
func (f *folder) state(id string, tail recorder.Tail, live bool, readErr error) State {
	fold := f.fold
	fold.Live = live
	st := State{Summary: recorder.SummaryOf(id, fold, tail, readErr), Pending: []Call{}, Awaiting: []Call{}, Human: []Call{}, Grants: fold.GrantList()}
	if f.proj == nil {
		return st
	}
	st.LastSeq, st.LastKind, st.LastTS = fold.LastSeq, fold.LastKind, fold.LastTS
	st.Turns, st.Compact = fold.Turns, fold.Compactions
	st.Eval, st.LastErr = fold.LastEval, fold.LastError
	if fold.Finished != nil {
		st.Reason = fold.Finished.Reason
	}
	st.Proj = f.proj.State()
	for _, c := range fold.PendingIntents() {
		st.Pending = append(st.Pending, Call{CallID: c.ID, Tool: c.Tool, Seq: c.IntentSeq, IdempotencyKey: c.IdempotencyKey})
	}
	for _, c := range fold.AwaitingApproval() {
		st.Awaiting = append(st.Awaiting, Call{CallID: c.ID, Tool: c.Tool, Seq: c.ApprovalSeq})
	}
	for _, c := range fold.NeedsHuman() {
		st.Human = append(st.Human, Call{CallID: c.ID, Tool: c.Tool, Seq: c.ReconciledSeq})
	}
	return st
}
