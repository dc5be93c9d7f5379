package bundle

import (
	"sort"
	"time"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/session"
)

// State is last_state.json: what folding a session's whole log gives after
// its last event. Totals are those of recorder.Summarize; the projection is
// session.Projector's state (what the model would be sent next). Its JSON
// form only grows.
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

// Fold folds the events of session id.
func Fold(id string, evs []session.Event, tail recorder.Tail) State {
	st := State{Summary: recorder.Summarize(id, evs, tail), Pending: []Call{}, Awaiting: []Call{}, Human: []Call{}, Grants: []string{}}
	if len(evs) == 0 {
		return st
	}
	p := session.NewProjector(evs[0].System)
	pending := map[string]Call{}
	awaiting := map[string]Call{}
	human := map[string]Call{}
	grants := map[string]bool{}
	for _, e := range evs {
		p.Add(e)
		switch e.Kind {
		case session.KindAssistantMessage:
			st.Turns++
		case session.KindToolIntent:
			pending[e.CallID] = Call{CallID: e.CallID, Tool: e.Tool, Seq: e.Seq, IdempotencyKey: e.IdempotencyKey}
		case session.KindToolResult:
			delete(pending, e.CallID)
			delete(human, e.CallID)
			delete(awaiting, e.CallID)
		case session.KindReconciled:
			delete(pending, e.CallID)
			delete(human, e.CallID)
			if e.Outcome == session.ReconciledNeedsHuman {
				human[e.CallID] = Call{CallID: e.CallID, Tool: e.Tool, Seq: e.Seq}
			}
		case session.KindApprovalRequest:
			awaiting[e.CallID] = Call{CallID: e.CallID, Tool: e.Tool, Seq: e.Seq}
		case session.KindApprovalGranted:
			delete(awaiting, e.CallID)
			if e.Scope == "session" {
				grants[e.Tool] = true
			}
		case session.KindApprovalDenied:
			delete(awaiting, e.CallID)
		case session.KindCompaction:
			st.Compact++
		case session.KindEvaluation:
			ev := e
			st.Eval = &ev
		case session.KindError:
			ev := e
			st.LastErr = &ev
		case session.KindSessionFinished:
			st.Reason = e.Reason
		}
	}
	last := evs[len(evs)-1]
	st.LastSeq, st.LastKind, st.LastTS = last.Seq, last.Kind, last.TS
	st.Proj = p.State()
	st.Pending = sorted(pending)
	st.Awaiting = sorted(awaiting)
	st.Human = sorted(human)
	for g := range grants {
		st.Grants = append(st.Grants, g)
	}
	sort.Strings(st.Grants)
	return st
}

func sorted(m map[string]Call) []Call {
	out := make([]Call, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}
