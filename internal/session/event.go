package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Kind names an event. Kinds are stable strings: they appear in the log, in
// --json output and in Parquet, so a kind is never renamed once released.
type Kind string

// The event kinds (FORMAT.md lists each one's fields). A log written by a newer agentctl may hold a
// kind not listed here; readers keep such events (see Event.Raw) and show
// them rather than dropping them.
const (
	KindSessionStarted   Kind = "session_started"
	KindUserMessage      Kind = "user_message"
	KindAssistantMessage Kind = "assistant_message"
	KindModelCall        Kind = "model_call"
	KindToolIntent       Kind = "tool_intent"
	KindToolResult       Kind = "tool_result"
	KindApprovalRequest  Kind = "approval_request"
	KindApprovalGranted  Kind = "approval_granted"
	KindApprovalDenied   Kind = "approval_denied"
	KindCompaction       Kind = "compaction"
	KindInterrupted      Kind = "interrupted"
	KindReconciled       Kind = "reconciled"
	KindBudgetExceeded   Kind = "budget_exceeded"
	KindEvaluation       Kind = "evaluation"
	KindSubagentStarted  Kind = "subagent_started"
	KindSubagentFinished Kind = "subagent_finished"
	KindModelChanged     Kind = "model_changed"
	// KindSpecChanged records that a resume went on with a spec file that
	// differs from the one the session recorded (spec_path, spec_hash of
	// the new one; reason lists the changed keys).
	KindSpecChanged Kind = "spec_changed"
	// KindBudgetChanged records that a resume changed the budget in force
	// (resume --budget, or a spec change that reached budget): attrs hold
	// the changed keys with their new values in the spec's form
	// ({"max_wall":"10m"}), reason says who changed what. The budget in
	// force is the header's, with each of these laid over it (State.Budget).
	KindBudgetChanged   Kind = "budget_changed"
	KindError           Kind = "error"
	KindSessionFinished Kind = "session_finished"
)

// Kinds lists every kind this version knows, in the order DESIGN.md gives.
var Kinds = []Kind{
	KindSessionStarted, KindUserMessage, KindAssistantMessage, KindModelCall,
	KindToolIntent, KindToolResult, KindApprovalRequest, KindApprovalGranted,
	KindApprovalDenied, KindCompaction, KindInterrupted, KindReconciled,
	KindBudgetExceeded, KindEvaluation, KindSubagentStarted, KindSubagentFinished,
	KindModelChanged, KindSpecChanged, KindBudgetChanged, KindError, KindSessionFinished,
}

// Known reports whether k is a kind this version of agentctl understands.
func (k Kind) Known() bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}

// Status is the final status of a session, carried by session_finished.
type Status string

// Session statuses. "running" is never written: it is what a reader reports
// for a session whose log has no session_finished yet.
const (
	StatusRunning          Status = "running"
	StatusDone             Status = "done"
	StatusFailed           Status = "failed"
	StatusAwaitingApproval Status = "awaiting_approval"
	StatusBudgetExceeded   Status = "budget_exceeded"
	StatusNeedsHuman       Status = "needs_human"
	StatusInterrupted      Status = "interrupted"
	StatusCrashed          Status = "crashed"
)

// Tool result statuses.
const (
	ResultOK        = "ok"
	ResultError     = "error"
	ResultCancelled = "cancelled"
	ResultDenied    = "denied"
)

// Reconciliation outcomes of a pending intent after resume.
const (
	ReconciledRecovered  = "recovered"
	ReconciledRepeated   = "repeated"
	ReconciledNeedsHuman = "needs_human"
)

// ToolCall is one call requested by the model in an assistant message. Args
// is the JSON object the model produced, kept byte for byte.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Event is one record of a session log. It is a flat struct rather than one
// type per kind so that the log, --json output and Parquet columns share one
// set of snake_case names; each kind uses the subset of fields FORMAT.md (in
// this folder) lists for it, and the rest stay empty (and are omitted from
// JSON).
type Event struct {
	Seq       int64     `json:"seq"`
	TS        time.Time `json:"ts"`
	Kind      Kind      `json:"kind"`
	SessionID string    `json:"session_id,omitempty"`

	// session_started: the header that pins the run.
	Name            string          `json:"name,omitempty"`
	Provider        string          `json:"provider,omitempty"`
	Model           string          `json:"model,omitempty"`
	System          string          `json:"system,omitempty"`
	Spec            json.RawMessage `json:"spec,omitempty"`
	SpecPath        string          `json:"spec_path,omitempty"`
	SpecHash        string          `json:"spec_hash,omitempty"`
	AgentctlVersion string          `json:"agentctl_version,omitempty"`
	HarnessCommit   string          `json:"harness_commit,omitempty"`
	Workspace       string          `json:"workspace,omitempty"`
	ParentSessionID string          `json:"parent_session_id,omitempty"`
	ForkedFrom      int64           `json:"forked_from,omitempty"`
	// ParentSeq, on a subagent's header, is the seq of the parent's
	// tool_intent of the task call that started it (parent_session_id
	// names the parent). A fork has forked_from instead.
	ParentSeq int64 `json:"parent_seq,omitempty"`

	// user_message, assistant_message, interrupted (partial text), a
	// model_call that failed after text had streamed (that text).
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Refusal, on assistant_message, is the model's refusal (its text):
	// the turn is a refusal, not an answer.
	Refusal string `json:"refusal,omitempty"`

	// model_call (and usage on assistant_message). InputTokens counts
	// every input token the provider bills, cache reads and writes
	// included; the two cache fields are the breakdown.
	RequestDigest string  `json:"request_digest,omitempty"`
	LatencyMS     int64   `json:"latency_ms,omitempty"`
	InputTokens   int64   `json:"input_tokens,omitempty"`
	OutputTokens  int64   `json:"output_tokens,omitempty"`
	CostUSD       float64 `json:"cost_usd,omitempty"`
	FinishReason  string  `json:"finish_reason,omitempty"`

	CacheReadInputTokens     int64 `json:"cache_read_input_tokens,omitempty"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
	// MaxTokens is the output cap the request sent.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// ResponseID is the provider's id of the answer.
	ResponseID string `json:"response_id,omitempty"`
	// ErrorType is the provider's own error type (overloaded_error,
	// rate_limit_error, …) of a failed model_call, and of the error event
	// that ends a run on it.
	ErrorType string `json:"error_type,omitempty"`
	// Attempt numbers the tries of one call the provider retried, from 1;
	// 0 (omitted) when the first try was the only one.
	Attempt int64 `json:"attempt,omitempty"`
	// GitSHA is the commit of the session's run branch that holds the
	// workspace after this event (workspace: {git: true}): on the first
	// user_message the initializer commit, on a tool_result or reconciled
	// the commit of the call's changes, on a done session_finished the
	// final commit. Empty when the event changed nothing.
	GitSHA string `json:"git_sha,omitempty"`

	// tool_intent, tool_result, approval_*, reconciled.
	CallID         string          `json:"call_id,omitempty"`
	Tool           string          `json:"tool,omitempty"`
	Args           json.RawMessage `json:"args,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Output         string          `json:"output,omitempty"`
	Artifact       string          `json:"artifact,omitempty"`
	Scope          string          `json:"scope,omitempty"`

	// compaction: Through is the last seq the summary replaces; SourceSeqs
	// the seqs of the original events it was made from.
	Through    int64   `json:"through,omitempty"`
	Summary    string  `json:"summary,omitempty"`
	SourceSeqs []int64 `json:"source_seqs,omitempty"`

	// Shared by several kinds: tool_result/session_finished status,
	// reconciled/evaluation outcome, denial and stop reasons, error text.
	Status   string `json:"status,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Evidence string `json:"evidence,omitempty"`
	Error    string `json:"error,omitempty"`

	// subagent_started / subagent_finished.
	ChildSessionID string `json:"child_session_id,omitempty"`

	// Attrs holds free-form attributes (a JSON object) that no column names.
	Attrs json.RawMessage `json:"attrs,omitempty"`

	// Raw is the record exactly as read from the log when the kind is not
	// Known: a newer agentctl wrote it, and it is shown and copied as is.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes unknown-kind events back exactly as they were read, so
// that nothing a newer version recorded is lost by an older one.
func (e Event) MarshalJSON() ([]byte, error) {
	if len(e.Raw) > 0 {
		return e.Raw, nil
	}
	type plain Event
	// Commands and code are full of <, > and &; keep them readable in the
	// log and in --json output instead of \u003c escapes.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plain(e)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Decode parses one JSON-encoded event. Unknown kinds are accepted and keep
// their raw bytes; a record without a kind or seq is an error.
func Decode(b []byte) (Event, error) {
	type plain Event
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return Event{}, fmt.Errorf("session: decode event: %w", err)
	}
	e := Event(p)
	if e.Kind == "" {
		return Event{}, fmt.Errorf("session: decode event: no kind")
	}
	if !e.Kind.Known() {
		e.Raw = append(json.RawMessage(nil), b...)
	}
	return e, nil
}

// Encode returns the JSON form of e used by the log and --json output.
func Encode(e Event) ([]byte, error) {
	b, err := e.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("session: encode %s event: %w", e.Kind, err)
	}
	return b, nil
}
