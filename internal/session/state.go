package session

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"time"
)

// Statuses a reader derives; the log never records them (see State.Status).
const (
	// StatusCorrupt: reading the log stopped at damage before its end
	// (recorder.ErrCorrupt), so nothing after it is known.
	StatusCorrupt Status = "corrupt"
	// StatusImported: a session imported from another tool (its header's
	// attrs name it in imported_from), which records no end.
	StatusImported Status = "imported"
)

// Approval scopes, as approval_granted records them.
const (
	ScopeOnce    = "once"
	ScopeSession = "session"
)

// State is the fold of a session's log: every figure agentctl shows or acts
// on, derived in one place. The runner keeps one up to date as it appends
// (Add per event, never a refold), checkpoints serialize it, and
// `sessions`, `approve`, `replay run`, bundles and crashtest read it. The
// SQL views of package query compute the same figures from the same
// definitions (a test holds them to it):
//
//   - status: see Status.
//   - events: every record read, of any kind (unknown kinds included).
//   - tool_calls: calls that were dispatched (a tool_intent) or answered (a
//     tool_result), each once: the rows of the tool_calls view. A call
//     refused before dispatch (unknown tool, invalid arguments) counts, as
//     does an imported one (imports record results, not intents); a call
//     in flight at a crash counts once whether it was then reconciled,
//     needs a human or was repeated; a denied call or one still awaiting
//     approval does not. The runner's max_tool_calls budget counts the
//     same figure.
//   - errors: error events plus tool_result events with status error.
//   - input_tokens, output_tokens, cost_usd: sums over model_call events
//     (compaction calls included: they are spent too).
//   - turns: assistant_message events.
//   - provider, model: those in force: the header's, or the latest
//     model_changed.
//   - budget: the header's spec's budget, each budget_changed's keys laid
//     over it in order.
//   - started: the header's timestamp (a fork's header is stamped when the
//     fork was made; its copied events keep theirs). ended: the timestamp
//     of a session_finished that is the last event, else none.
//
// A call is identified by its id and the assistant message that requested
// it: a model may reuse an id in a later message (a scripted model forked
// from the start of its script does), and then the later request is a new
// call. Events naming a call id attach to the latest call requested with
// that id at or before them; those that no message requested (an orphan
// result) make a call with RequestSeq 0.
//
// Live and Corrupt are inputs the log cannot give about itself: whether a
// process holds the session's lease, and whether reading stopped at
// damage. The caller probes them (recorder.Store.Fold does) and sets them
// before asking for Status; the fold itself does no I/O.
type State struct {
	Live    bool `json:"-"`
	Corrupt bool `json:"-"`

	// From the header (session_started).
	ID              string    `json:"session_id,omitempty"`
	Name            string    `json:"name,omitempty"`
	PinnedProvider  string    `json:"pinned_provider,omitempty"`
	PinnedModel     string    `json:"pinned_model,omitempty"`
	System          string    `json:"system,omitempty"`
	Started         time.Time `json:"started"`
	ParentSessionID string    `json:"parent_session_id,omitempty"`
	ForkedFrom      int64     `json:"forked_from,omitempty"`
	// ParentSeq is a subagent's parent_seq (its parent's task intent).
	ParentSeq    int64  `json:"parent_seq,omitempty"`
	ImportedFrom string `json:"imported_from,omitempty"`
	// SourceStatus is an import's end state as its source recorded it (an
	// exit status, a stop reason, an agent state: the header's attrs
	// source_status), "" when the source records none.
	SourceStatus string `json:"source_status,omitempty"`
	// NotRecorded is what an import's source does not record (the
	// header's attrs not_recorded: NotRecordedUsage, NotRecordedTimes,
	// ...), so that a reader shows "not recorded" where it would show a
	// zero that reads as a measurement. A fork of an import records its
	// own part, and has none.
	NotRecorded []string `json:"not_recorded,omitempty"`
	// Provider and Model are those in force (after model_changed).
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Budget is the budget in force: the header's spec's, with the keys of
	// each budget_changed laid over it. The runner enforces this one, so a
	// budget raised on one resume stays raised on the next.
	Budget Budget `json:"budget"`

	Events   int64     `json:"events"`
	LastSeq  int64     `json:"last_seq"`
	LastTS   time.Time `json:"last_ts"`
	LastKind Kind      `json:"last_kind,omitempty"`

	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	ToolCalls    int64   `json:"tool_calls"`
	Errors       int64   `json:"errors"`
	Turns        int     `json:"turns"`
	// LastAssistantSeq is the seq of the latest assistant message.
	LastAssistantSeq int64 `json:"last_assistant_seq,omitempty"`
	Compactions      int   `json:"compactions"`
	EvalFailures     int   `json:"eval_failures"`
	// Prompted: the first user message is recorded.
	Prompted bool `json:"prompted,omitempty"`
	// DoneClaim: the latest assistant message asked for no tools (the
	// model says it is done) and no user message came since.
	DoneClaim bool `json:"done_claim,omitempty"`
	// TruncClaim: the latest assistant message asked for no tools and was
	// cut at the output cap (finish_reason length); on_truncated: evaluate
	// judges it like a done claim. A refusal is neither claim: a resumed
	// run asks the model again.
	TruncClaim bool `json:"trunc_claim,omitempty"`
	// LastEval is the evaluation of that claim, if recorded.
	LastEval *Event `json:"last_eval,omitempty"`
	// LastError is the latest error event.
	LastError *Event `json:"last_error,omitempty"`
	// Finished is the latest session_finished (a resumed session has
	// several); it is the session's end only when it is the last event.
	Finished *Event `json:"finished,omitempty"`
	// Children are the sessions subagent_started events name, in order.
	Children []string `json:"children,omitempty"`
	// GitSHA is the latest git_sha recorded (workspace: {git: true}): the
	// commit of the run branch that holds the workspace as the log last
	// saw it; GitSeq the event that recorded it. Empty for a session
	// without git state.
	GitSHA string `json:"git_sha,omitempty"`
	GitSeq int64  `json:"git_seq,omitempty"`
	// ModelCalls is what the session's model_call events say about how its
	// model calls went (see ModelCalls): a session recorded at the model
	// API (an external agent's, a proxy's) ends failed by them.
	ModelCalls ModelCalls `json:"model_calls,omitzero"`
	// ReplayOf is the recorded session a replay served its model calls from
	// (the header's attrs replay_of: a proxy replay or an external agent's
	// replay run); a fork of one has ForkedFrom too.
	ReplayOf string `json:"replay_of,omitempty"`
	// Subagents is what the session's children spent, as their
	// subagent_finished events report it: the parent's budget is charged
	// its own model calls and tool calls plus these (the runner's
	// carve-out). The figures above count the session's own events only.
	Subagents Spend `json:"subagents,omitzero"`

	// Calls in the order they were requested (orphans where they appear);
	// nil for a call a lean fold packed (NewLeanState).
	Calls []*Call `json:"calls,omitempty"`
	// Latest indexes Calls: those of the latest assistant message.
	Latest []int `json:"latest,omitempty"`
	// Grants are the tools granted for the rest of the session.
	Grants map[string]bool `json:"grants,omitempty"`

	// WallSpent is the wall time of the invocations that ended; SegStart
	// the first event of the one still open (zero when none is). A crashed
	// invocation is closed by EndSegment at its last event.
	WallSpent time.Duration `json:"wall_spent"`
	SegStart  time.Time     `json:"seg_start"`

	byID map[string]int // call id -> index in Calls of its latest call
	// lean, packed, packAt, touched, byHash, collide: see NewLeanState.
	// packAt[i] is where the call at i starts in packed; touched is the
	// index+1 of the call the event being added named. A lean fold indexes
	// calls by a hash of their id (byHash), the few ids whose hash another
	// id has by the id (collide), instead of byID.
	lean    bool
	packed  [][]byte
	packAt  []packRef
	touched int
	seed    maphash.Seed
	byHash  map[uint64]int32
	collide map[string]int
	names   []string // a lean fold's tools and outcomes (see packCall)
	nameAt  map[string]int
	// forkTS is a fork header's time until the next event decides where
	// the first segment starts (see Add).
	forkTS time.Time
}

// Call is what the log says about one tool call. Seqs are 0 for events
// that did not happen.
type Call struct {
	ID   string          `json:"id"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
	// RequestSeq is the assistant message that requested the call (0 for
	// an orphan), Index the call's place among its calls.
	RequestSeq int64 `json:"request_seq,omitempty"`
	Index      int   `json:"index,omitempty"`
	// Turn is the ordinal (from 1) of that assistant message among the
	// session's: with the id, it names the call across a log and its
	// replay, whose seqs differ.
	Turn int `json:"turn,omitempty"`
	// TS is the intent's time, else the first result's.
	TS time.Time `json:"ts"`

	IntentSeq      int64  `json:"intent_seq,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`

	// ResultSeq and what follows are of the latest tool_result.
	ResultSeq int64  `json:"result_seq,omitempty"`
	Status    string `json:"status,omitempty"`
	Error     string `json:"error,omitempty"`
	LatencyMS int64  `json:"latency_ms,omitempty"`

	ReconciledSeq int64  `json:"reconciled_seq,omitempty"`
	Reconciled    string `json:"reconciled,omitempty"` // the latest outcome
	// NeedsHuman: reconciled as needs_human and not resolved since.
	NeedsHuman bool `json:"needs_human,omitempty"`

	ApprovalSeq int64  `json:"approval_seq,omitempty"` // approval_request
	DecisionSeq int64  `json:"decision_seq,omitempty"` // approval_granted or _denied
	Granted     string `json:"granted,omitempty"`      // the grant's scope
	Denied      bool   `json:"denied,omitempty"`

	// EndSeq is the latest event that ended the call: a tool_result, a
	// reconciled or an approval_denied.
	EndSeq int64 `json:"end_seq,omitempty"`
	// FirstResultSeq is the seq of the call's first tool_result.
	FirstResultSeq int64 `json:"first_result_seq,omitempty"`
	// Outcomes counts its tool_result and reconciled events: a call that
	// was dispatched has exactly one, unless a human resolved it after a
	// needs_human reconciliation (then two).
	Outcomes int `json:"outcomes,omitempty"`
}

// Done reports whether an event ended the call (a result, a
// reconciliation of any outcome, a denial).
func (c *Call) Done() bool { return c.EndSeq > 0 }

// Pending reports whether the call was dispatched and nothing ended it
// since: a crash between the call and its result.
func (c *Call) Pending() bool { return c.IntentSeq > 0 && c.EndSeq < c.IntentSeq }

// AwaitingApproval reports whether an approval was requested for the call
// and neither decided nor made moot by its end.
func (c *Call) AwaitingApproval() bool {
	return c.ApprovalSeq > 0 && c.DecisionSeq == 0 && !c.Done()
}

// Outcome is what became of the call, as the tool_calls view's status
// column says it: the status of its latest tool_result or the outcome of
// its latest reconciliation, whichever came last; "pending" with neither.
func (c *Call) Outcome() string {
	switch {
	case c.ReconciledSeq > c.ResultSeq:
		return c.Reconciled
	case c.ResultSeq > 0:
		return c.Status
	}
	return "pending"
}

// Dispatched reports whether the call has a row in the tool_calls view:
// it reached a tool (an intent) or was answered (a result).
func (c *Call) Dispatched() bool { return c.IntentSeq > 0 || c.ResultSeq > 0 }

// FirstSeq is the seq of the call's intent, else of its first result: the
// order of the tool_calls view and of a bundle's tool_calls.csv.
func (c *Call) FirstSeq() int64 {
	if c.IntentSeq > 0 {
		return c.IntentSeq
	}
	return c.FirstResultSeq
}

// NewState returns an empty fold.
func NewState() *State { return &State{} }

// Fold folds events into a new State.
func Fold(events []Event) *State {
	s := NewState()
	for _, e := range events {
		s.Add(e)
	}
	return s
}

// Add folds one event. Events must come in log order, each once.
func (s *State) Add(e Event) {
	s.Events++
	s.LastSeq, s.LastTS, s.LastKind = e.Seq, e.TS, e.Kind
	// A fork's header is stamped when the fork was made, after the copied
	// events it precedes: the copied segment starts at the next event. A
	// fork that copied nothing (an external agent's, run again from its
	// start) has its next event after the header: its run started at the
	// header. So the segment starts at the earlier of the two.
	switch {
	case s.SegStart.IsZero() && e.Kind == KindSessionStarted && e.ForkedFrom > 0:
		s.forkTS = e.TS
	case s.SegStart.IsZero():
		s.SegStart = e.TS
		if !s.forkTS.IsZero() && s.forkTS.Before(e.TS) {
			s.SegStart = s.forkTS
		}
		s.forkTS = time.Time{}
	}
	if e.GitSHA != "" {
		s.GitSHA, s.GitSeq = e.GitSHA, e.Seq
	}
	switch e.Kind {
	case KindSessionStarted:
		if s.Events == 1 {
			s.ID, s.Name, s.System, s.Started = e.SessionID, e.Name, e.System, e.TS
			s.PinnedProvider, s.PinnedModel = e.Provider, e.Model
			s.ParentSessionID, s.ForkedFrom, s.ParentSeq = e.ParentSessionID, e.ForkedFrom, e.ParentSeq
			s.ImportedFrom, s.SourceStatus, _ = importAttrs(e)
			s.NotRecorded = NotRecorded(e)
			s.ReplayOf = ReplayOf(e)
			s.Budget = specBudget(e.Spec)
		}
		s.Provider, s.Model = e.Provider, e.Model
	case KindModelChanged:
		s.Provider, s.Model = e.Provider, e.Model
	case KindBudgetChanged:
		_ = s.Budget.Apply(e.Attrs) // attrs the runner did not write change nothing
	case KindUserMessage:
		s.Prompted = true
		s.DoneClaim, s.TruncClaim, s.LastEval = false, false, nil
	case KindAssistantMessage:
		s.Turns++
		s.LastAssistantSeq = e.Seq
		noCalls, cut := len(e.ToolCalls) == 0 && e.Refusal == "", e.FinishReason == "length"
		s.DoneClaim, s.TruncClaim, s.LastEval = noCalls && !cut, noCalls && cut, nil
		s.Latest = s.Latest[:0]
		for i, c := range e.ToolCalls {
			s.Latest = append(s.Latest, len(s.Calls))
			s.newCall(&Call{ID: c.ID, Tool: c.Name, Args: c.Args, RequestSeq: e.Seq, Index: i, Turn: s.Turns})
		}
	case KindModelCall:
		s.ModelCalls.Add(e)
		s.InputTokens += e.InputTokens
		s.OutputTokens += e.OutputTokens
		s.CostUSD += e.CostUSD
	case KindToolIntent:
		c := s.call(e)
		if !c.Dispatched() {
			s.ToolCalls++
		}
		c.IntentSeq, c.IdempotencyKey, c.TS = e.Seq, e.IdempotencyKey, e.TS
		if len(e.Args) > 0 {
			c.Args = e.Args
		}
	case KindToolResult:
		if e.Status == ResultError {
			s.Errors++
		}
		c := s.call(e)
		if !c.Dispatched() {
			s.ToolCalls++
		}
		if c.FirstResultSeq == 0 {
			c.FirstResultSeq = e.Seq
			if c.IntentSeq == 0 {
				c.TS = e.TS
			}
		}
		if len(c.Args) == 0 {
			c.Args = e.Args
		}
		c.ResultSeq, c.Status, c.Error, c.LatencyMS, c.EndSeq = e.Seq, e.Status, e.Error, e.LatencyMS, e.Seq
		c.Outcomes++
		c.NeedsHuman = false
	case KindReconciled:
		c := s.call(e)
		c.ReconciledSeq, c.Reconciled, c.EndSeq = e.Seq, e.Outcome, e.Seq
		c.Outcomes++
		c.NeedsHuman = e.Outcome == ReconciledNeedsHuman
	case KindApprovalRequest:
		s.call(e).ApprovalSeq = e.Seq
	case KindApprovalGranted:
		c := s.call(e)
		c.DecisionSeq, c.Granted = e.Seq, e.Scope
		if e.Scope == ScopeSession && e.Tool != "" {
			if s.Grants == nil {
				s.Grants = map[string]bool{}
			}
			s.Grants[e.Tool] = true
		}
	case KindApprovalDenied:
		c := s.call(e)
		c.DecisionSeq, c.Denied, c.EndSeq = e.Seq, true, e.Seq
	case KindCompaction:
		s.Compactions++
	case KindEvaluation:
		if e.Outcome == "fail" {
			s.EvalFailures++
		}
		ev := e
		s.LastEval = &ev
	case KindError:
		s.Errors++
		ev := e
		s.LastError = &ev
	case KindSubagentStarted:
		if e.ChildSessionID != "" {
			s.Children = append(s.Children, e.ChildSessionID)
		}
	case KindSubagentFinished:
		s.Subagents.add(e)
	case KindSessionFinished:
		ev := e
		s.Finished = &ev
		s.EndSegment(e.TS)
	}
	if s.touched > 0 {
		s.pack(s.touched - 1)
		s.touched = 0
	}
}

// EventAt returns the event of events with seq, or false. Logs have dense
// seqs from 1, so it is one index; anything else is searched.
func EventAt(events []Event, seq int64) (Event, bool) {
	if i := seq - 1; i >= 0 && i < int64(len(events)) && events[i].Seq == seq {
		return events[i], true
	}
	i, ok := slices.BinarySearchFunc(events, seq, func(e Event, s int64) int { return cmp.Compare(e.Seq, s) })
	if !ok {
		return Event{}, false
	}
	return events[i], true
}

// EndSegment closes the open invocation at ts: a session_finished does it,
// and resume does it at the last event of an invocation that crashed (the
// time the session lay dead is not wall time).
func (s *State) EndSegment(ts time.Time) {
	if !s.SegStart.IsZero() {
		s.WallSpent += max(0, ts.Sub(s.SegStart))
	}
	s.SegStart = time.Time{}
}

func (s *State) newCall(c *Call) *Call {
	if s.lean {
		s.leanIndex(c.ID, len(s.Calls))
	} else {
		if s.byID == nil {
			s.reindex()
		}
		s.byID[c.ID] = len(s.Calls)
	}
	s.Calls = append(s.Calls, c)
	return c
}

// index returns the index in Calls of the latest call with id.
func (s *State) index(id string) (int, bool) {
	if s.lean {
		return s.leanLookup(id)
	}
	if s.byID == nil {
		s.reindex()
	}
	i, ok := s.byID[id]
	return i, ok
}

// call returns the latest call with e's id, or a new orphan.
func (s *State) call(e Event) *Call {
	i, ok := s.index(e.CallID)
	if !ok {
		s.newCall(&Call{ID: e.CallID, Tool: e.Tool})
		i = len(s.Calls) - 1
	}
	if s.lean {
		s.touched = i + 1
		return s.restore(i)
	}
	return s.Calls[i]
}

// reindex rebuilds the call index (after decoding a serialized State).
func (s *State) reindex() {
	s.byID = make(map[string]int, len(s.Calls))
	for i, c := range s.Calls {
		s.byID[c.ID] = i
	}
}

// UnmarshalJSON decodes a State written by json.Marshal (a checkpoint's)
// and rebuilds its index, so Add goes on as after the events it folded.
func (s *State) UnmarshalJSON(b []byte) error {
	type plain State
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = State(p)
	s.reindex()
	return nil
}

// Call returns the latest call with id, or nil. A lean fold's packed call
// is returned unpacked: a copy.
func (s *State) Call(id string) *Call {
	if i, ok := s.index(id); ok {
		return s.unpacked(i)
	}
	return nil
}

// CallIndex returns the index in Calls of the latest call with id: a
// reader that keeps a call's place instead of the call (a lean fold's may
// be packed) reads it back with CallAt.
func (s *State) CallIndex(id string) (int, bool) { return s.index(id) }

// CallAt returns the call at index i of Calls. A lean fold's packed call
// is unpacked into into (when not nil, else a new Call), valid until into
// is used again: a reader going through every call holds one.
func (s *State) CallAt(i int, into *Call) *Call {
	if c := s.Calls[i]; c != nil || into == nil {
		return s.unpacked(i)
	}
	at := s.packAt[i]
	if err := s.unpackInto(into, s.packed[at.chunk][at.off:], true); err != nil {
		panic("session: unpack call: " + err.Error()) // only pack wrote these bytes
	}
	return into
}

// Status is the session's status now:
//
//	corrupt      Corrupt is set: reading stopped at damage
//	<finished>   the last event is a session_finished: its status
//	running      Live is set: a process holds the lease (a run, or
//	             `agentctl collect` writing a production session now)
//	imported     the header names imported_from and no session_finished
//	             exists (an import records no end of ours; the source's
//	             own end state is SourceStatus; a fork of one has the
//	             fork point's)
//	crashed      otherwise: the log stops with no end and no one writes it
func (s *State) Status() Status {
	switch {
	case s.Corrupt:
		return StatusCorrupt
	case s.Finished != nil && s.Finished.Seq == s.LastSeq:
		return Status(s.Finished.Status)
	case s.Live:
		return StatusRunning
	case s.ImportedFrom != "" && s.Finished == nil:
		return StatusImported
	}
	return StatusCrashed
}

// Ended is the time of the session's end (see Status), or zero.
func (s *State) Ended() time.Time {
	if s.Finished != nil && s.Finished.Seq == s.LastSeq && !s.Corrupt {
		return s.Finished.TS
	}
	return time.Time{}
}

// Reason is the reason of the session_finished that ends the log, or "".
func (s *State) Reason() string {
	if s.Finished != nil && s.Finished.Seq == s.LastSeq {
		return s.Finished.Reason
	}
	return ""
}

// Tokens is every token spent, input and output.
func (s *State) Tokens() int64 { return s.InputTokens + s.OutputTokens }

// Spend is what a subagent spent, in the figures a budget limits.
type Spend struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	ToolCalls    int64   `json:"tool_calls,omitempty"`
}

// SpendAttrs is the attrs of a subagent_finished event: the tool calls
// the child made (its tokens and cost are the event's own fields).
func SpendAttrs(sp Spend) json.RawMessage {
	b, _ := json.Marshal(map[string]int64{"tool_calls": sp.ToolCalls})
	return b
}

// add folds the spend a subagent_finished reports: input_tokens,
// output_tokens and cost_usd, and attrs {"tool_calls": N}.
func (sp *Spend) add(e Event) {
	sp.InputTokens += e.InputTokens
	sp.OutputTokens += e.OutputTokens
	sp.CostUSD += e.CostUSD
	if len(e.Attrs) > 0 {
		var a struct {
			ToolCalls int64 `json:"tool_calls"`
		}
		_ = json.Unmarshal(e.Attrs, &a)
		sp.ToolCalls += max(0, a.ToolCalls)
	}
}

// Tokens is every token the subagents spent.
func (sp Spend) Tokens() int64 { return sp.InputTokens + sp.OutputTokens }

// OpenCalls lists the calls of the latest assistant message that no event
// has ended yet, in call order: what a resume picks up.
func (s *State) OpenCalls() []*Call {
	var out []*Call
	for _, i := range s.Latest {
		if c := s.Calls[i]; c != nil && !c.Done() { // a packed call is done
			out = append(out, c)
		}
	}
	return out
}

// PendingIntents lists the dispatched calls that nothing ended, by seq.
func (s *State) PendingIntents() []*Call {
	return s.filter((*Call).Pending, func(c *Call) int64 { return c.IntentSeq })
}

// AwaitingApproval lists the calls waiting for a human's decision, in the
// order they were asked.
func (s *State) AwaitingApproval() []*Call {
	return s.filter((*Call).AwaitingApproval, func(c *Call) int64 { return c.ApprovalSeq })
}

// NeedsHuman lists the calls reconciled as needs_human and not resolved,
// in the order they were reconciled.
func (s *State) NeedsHuman() []*Call {
	return s.filter(func(c *Call) bool { return c.NeedsHuman }, func(c *Call) int64 { return c.ReconciledSeq })
}

// Dispatched lists the calls with a row in the tool_calls view, by
// FirstSeq.
func (s *State) Dispatched() []*Call {
	return slices.Collect(s.dispatched(false))
}

// GrantList lists the tools granted for the session, sorted.
func (s *State) GrantList() []string {
	out := make([]string, 0, len(s.Grants))
	for t := range s.Grants {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func (s *State) filter(keep func(*Call) bool, by func(*Call) int64) []*Call {
	var out []*Call
	for _, c := range s.Calls {
		if c != nil && keep(c) { // a packed call is settled: kept by none
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *Call) int {
		return cmp.Compare(by(a), by(b))
	})
	return out
}

// ProjectionOf is the state of the projection of a whole log (its system
// prompt is the header's), for a reader that shows what the model would be
// sent next.
func ProjectionOf(events []Event) ProjectorState {
	if len(events) == 0 {
		return ProjectorState{}
	}
	p := NewProjector(events[0].System)
	for _, e := range events {
		p.Add(e)
	}
	return p.State()
}

// ImportedFrom returns the tool a session was imported from, as its
// header's attrs name it ({"imported_from": ...}), or "".
func ImportedFrom(header Event) string {
	from, _, _ := importAttrs(header)
	return from
}

// What an import's source may not record, as the importers name it in
// the header's attrs not_recorded, for the readers that show those
// figures (State.NotRecorded).
const (
	NotRecordedUsage = "usage"      // tokens, and so cost
	NotRecordedTimes = "timestamps" // every event is dated alike
)

// NotRecorded returns what the source of an imported session does not
// record, from its header (State.NotRecorded): nil for a fork, which
// records its own part.
func NotRecorded(header Event) []string {
	if header.ForkedFrom > 0 {
		return nil
	}
	_, _, not := importAttrs(header)
	return not
}

// Records reports whether the session's source records what (a
// NotRecorded name): always, but for an import that says it does not.
func (s *State) Records(what string) bool { return !slices.Contains(s.NotRecorded, what) }

// importAttrs reads the header attrs an import writes: the tool it came
// from, the source's end state and what the source does not record.
func importAttrs(header Event) (from, status string, notRecorded []string) {
	if len(header.Attrs) == 0 {
		return "", "", nil
	}
	var a struct {
		From        string   `json:"imported_from"`
		Status      string   `json:"source_status"`
		NotRecorded []string `json:"not_recorded"`
	}
	_ = json.Unmarshal(header.Attrs, &a)
	return a.From, a.Status, a.NotRecorded
}

// ReplayOf returns the session a replay served its model calls from, as
// its header's attrs name it ({"replay_of": ...}), or "".
func ReplayOf(header Event) string {
	if len(header.Attrs) == 0 {
		return ""
	}
	var a struct {
		ReplayOf string `json:"replay_of"`
	}
	_ = json.Unmarshal(header.Attrs, &a)
	return a.ReplayOf
}

// FromRequest reports whether an assistant message was written by the
// agent's client into a request (attrs from_request, as the proxy
// records it), not returned by a model: no model_call answers it.
func FromRequest(e Event) bool {
	if e.Kind != KindAssistantMessage || len(e.Attrs) == 0 {
		return false
	}
	var a struct {
		FromRequest bool `json:"from_request"`
	}
	_ = json.Unmarshal(e.Attrs, &a)
	return a.FromRequest
}

// ErrorTypeReplayDivergence is the error_type of a model_call a replay
// answered with a divergence (the request differs from the recording),
// and the reason a diverged replay ends failed with.
const ErrorTypeReplayDivergence = "replay_divergence"

// ReasonProviderError is the reason of a session that ended because its
// model calls failed: agentctl's own loop when the provider fails, and a
// session recorded at the model API whose every model call failed.
const ReasonProviderError = "provider_error"

// ModelCalls is the fold of a session's model_call events: how many there
// were, how many recorded an error, the latest that did, and the first
// that a replay answered with a divergence.
type ModelCalls struct {
	N         int    `json:"n,omitempty"`
	Failed    int    `json:"failed,omitempty"`
	LastError *Event `json:"last_error,omitempty"`
	Diverged  *Event `json:"diverged,omitempty"`
}

// Add folds one model_call event (others are ignored), so that a recorder
// without a whole State (the proxy's conversations) folds them alike. A
// call a policy refused (attrs refused: the budget, the pinned model)
// never reached the model and is not counted: the policy's verdict ends
// the run by its own rule.
func (m *ModelCalls) Add(e Event) {
	if e.Kind != KindModelCall {
		return
	}
	if e.Error == "" && e.ErrorType == "" {
		m.N++
		return
	}
	var a struct {
		Refused bool `json:"refused"`
	}
	if len(e.Attrs) > 0 && json.Unmarshal(e.Attrs, &a) == nil && a.Refused {
		return
	}
	m.N++
	m.Failed++
	ev := e
	m.LastError = &ev
	if e.ErrorType == ErrorTypeReplayDivergence && m.Diverged == nil {
		m.Diverged = &ev
	}
}

// Failure is why a session recorded at the model API (an external
// agent's, a proxy's) ends failed whatever its agent's exit status: a
// replay that diverged (reason replay_divergence, the first divergence),
// or model calls that every one failed (reason provider_error, the last
// error); reason "" when neither holds. Some failed calls among answered
// ones decide nothing here: the agent retried or gave up, and its exit
// status says which.
func (m ModelCalls) Failure() (reason, detail string) {
	switch {
	case m.Diverged != nil:
		return ErrorTypeReplayDivergence, m.Diverged.Error
	case m.N > 0 && m.Failed == m.N:
		e := m.LastError
		what := e.Error
		if e.ErrorType != "" {
			what = e.ErrorType + ": " + what
		}
		if m.N == 1 {
			return ReasonProviderError, "the one model call failed: " + what
		}
		return ReasonProviderError, fmt.Sprintf("all %d model calls failed; the last: %s", m.N, what)
	}
	return "", ""
}

// ForkModelChanged is the model_changed a fork that goes on with another
// model records (agentctl's own fork, an external agent's, a proxy's
// --until with --model), so that the change reads the same in each:
// fromCall is the first model call on the new model, 0 when the fork
// records the change before any call.
func ForkModelChanged(prov, model, wasProv, wasModel string, fromCall int) Event {
	reason := fmt.Sprintf("fork --model %s (was %s)", ModelName(prov, model), ModelName(wasProv, wasModel))
	if fromCall > 0 {
		reason += fmt.Sprintf(" from call %d on", fromCall)
	}
	return Event{Kind: KindModelChanged, Provider: prov, Model: model, Reason: reason}
}
