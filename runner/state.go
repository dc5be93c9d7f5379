package runner

import (
	"time"

	"github.com/agentctl/agentctl/session"
)

// callState is what the log says about one tool call requested by the model.
type callState struct {
	Call         session.ToolCall
	AssistantSeq int64
	Index        int
	Intent       bool
	IntentKey    string
	Done         bool // a tool_result, a denial, or a reconciliation ended it
	Requested    bool // an approval_request was recorded
	Granted      string
	Denied       bool
}

// state is the fold of a session's events that the loop needs. It is
// rebuilt from the log on resume; nothing in it is stored elsewhere.
type state struct {
	lastSeq   int64
	lastTS    time.Time
	projector *session.Projector

	inputTokens, outputTokens int64
	costUSD                   float64
	toolCalls                 int64
	turns                     int // assistant messages: the model turns consumed
	evalFailures              int
	prompted                  bool           // the first user message is recorded
	doneClaim                 bool           // the latest assistant message asked for no tools, and was a plain answer
	truncClaim                bool           // it asked for no tools and was cut at the output cap (on_truncated: evaluate judges it)
	lastEval                  *session.Event // evaluation of that claim, if recorded

	calls         map[string]*callState
	lastAssistant *session.Event
	sessionGrants map[string]bool // tool names granted for the session
	needsHuman    map[string]bool // calls reconciled as needs_human and not resolved since
	finished      *session.Event  // the latest session_finished, if any
	provider      string          // current provider/model (after model_changed)
	model         string

	wallSpent time.Duration // wall time of earlier invocations
	segStart  time.Time
}

func newState(system string) *state {
	return &state{
		projector:     session.NewProjector(system),
		calls:         map[string]*callState{},
		sessionGrants: map[string]bool{},
		needsHuman:    map[string]bool{},
	}
}

// add folds one event. It must see every event the runner appends, in order.
func (s *state) add(e session.Event) {
	s.lastSeq, s.lastTS = e.Seq, e.TS
	s.projector.Add(e)
	if s.segStart.IsZero() {
		s.segStart = e.TS
	}
	switch e.Kind {
	case session.KindSessionStarted:
		s.provider, s.model = e.Provider, e.Model
	case session.KindModelChanged:
		s.provider, s.model = e.Provider, e.Model
	case session.KindUserMessage:
		s.prompted = true
		s.doneClaim, s.truncClaim, s.lastEval = false, false, nil
	case session.KindAssistantMessage:
		s.turns++
		// A refusal or a cut answer is no claim of being done: a resumed
		// run asks the model again instead of evaluating it.
		noCalls, cut := len(e.ToolCalls) == 0, e.FinishReason == "length"
		s.doneClaim, s.truncClaim, s.lastEval = noCalls && e.Refusal == "" && !cut, noCalls && e.Refusal == "" && cut, nil
		ev := e
		s.lastAssistant = &ev
		for i, c := range e.ToolCalls {
			s.calls[c.ID] = &callState{Call: c, AssistantSeq: e.Seq, Index: i}
		}
	case session.KindModelCall:
		// input_tokens counts cache reads and writes (what the provider
		// bills), so budgets see them.
		s.inputTokens += e.InputTokens
		s.outputTokens += e.OutputTokens
		s.costUSD += e.CostUSD
	case session.KindToolIntent:
		if c := s.calls[e.CallID]; c != nil {
			c.Intent, c.IntentKey = true, e.IdempotencyKey
		}
		s.toolCalls++
	case session.KindToolResult, session.KindReconciled:
		if c := s.calls[e.CallID]; c != nil {
			c.Done = true
		}
		if e.Kind == session.KindReconciled && e.Outcome == session.ReconciledNeedsHuman {
			s.needsHuman[e.CallID] = true
		} else {
			delete(s.needsHuman, e.CallID)
		}
	case session.KindApprovalRequest:
		if c := s.calls[e.CallID]; c != nil {
			c.Requested = true
		}
	case session.KindApprovalGranted:
		if c := s.calls[e.CallID]; c != nil {
			c.Granted = e.Scope
		}
		if e.Scope == ScopeSession && e.Tool != "" {
			s.sessionGrants[e.Tool] = true
		}
	case session.KindApprovalDenied:
		if c := s.calls[e.CallID]; c != nil {
			c.Denied, c.Done = true, true
		}
	case session.KindEvaluation:
		if e.Outcome == "fail" {
			s.evalFailures++
		}
		ev := e
		s.lastEval = &ev
	case session.KindSessionFinished:
		ev := e
		s.finished = &ev
		if !s.segStart.IsZero() {
			s.wallSpent += e.TS.Sub(s.segStart)
		}
		s.segStart = time.Time{}
	}
}

// tokens is every token spent so far, input and output.
func (s *state) tokens() int64 { return s.inputTokens + s.outputTokens }

// openCalls lists the calls of the latest assistant message that no event
// has ended yet, in call order: what resume must pick up.
func (s *state) openCalls() []*callState {
	if s.lastAssistant == nil {
		return nil
	}
	var out []*callState
	for _, c := range s.lastAssistant.ToolCalls {
		if cs := s.calls[c.ID]; cs != nil && !cs.Done {
			out = append(out, cs)
		}
	}
	return out
}
