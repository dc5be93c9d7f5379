package tools

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
)

// Tool is one capability offered to the model.
//
// Name, Description, Parameters and SideEffects are constant for the life of
// a Tool and may be called from any goroutine.
//
// Run executes one call. It never returns a Go error: every failure, including
// invalid arguments and paths that escape the workspace, is a Result with
// Status "error" so that it can be recorded and shown to the model. Run may
// be called concurrently for tools whose SideEffects is false; the harness
// serializes calls to tools whose SideEffects is true, and the tools here rely
// on that only for the meaning of the workspace, never for memory safety.
//
// When ctx is cancelled, Run stops as soon as it can: a subprocess has its
// whole process group killed (SIGTERM, then SIGKILL after a short grace), Run
// waits for it, and the Result has Status "cancelled" with whatever output had
// been captured. Run does not retry; the harness decides what to do next.
type Tool interface {
	// Name is the name the model calls the tool by.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Parameters is the JSON Schema of the args object.
	Parameters() json.RawMessage
	// SideEffects reports whether a call may change the workspace or the
	// world. Such calls are serialized and recorded with an intent and an
	// idempotency key before they run.
	SideEffects() bool
	// Run executes one call. See the type documentation.
	Run(ctx context.Context, call Call) Result
}

// Reconciler is the optional ability of a tool to help reconcile a pending
// intent (one recorded without a result) after a crash. The harness
// type-asserts for it; a tool without it leaves the intent to a human.
type Reconciler interface {
	// Idempotent reports whether repeating a call with the same
	// idempotency key is safe.
	Idempotent() bool
	// HasLookup reports whether LookupResult can ask for the outcome of an
	// earlier call by its key.
	HasLookup() bool
	// LookupResult asks for the outcome of the call made with
	// call.IdempotencyKey, confined like the call itself (call.Workspace,
	// call.Sandbox: the run's hide list, the home included). found is
	// false when the tool has no record of the key; err is set when the
	// lookup itself failed and nothing is known. It may be called
	// concurrently; cancelling ctx kills the lookup's process group.
	LookupResult(ctx context.Context, call Call) (output string, found bool, err error)
}

// DefaultTimeout bounds a call whose Call.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// DefaultMaxOutput is the number of output bytes kept in memory when
// Call.MaxOutput is zero: the first half and the last half of what a call
// produced, with a note of how much was cut in between.
const DefaultMaxOutput = 256 << 10

// Call is one invocation of a tool.
type Call struct {
	// Args is the JSON arguments object the model sent.
	Args json.RawMessage
	// Workspace is the absolute path of the session's workspace root.
	Workspace string
	// IdempotencyKey is passed to custom tools as AGENTCTL_IDEMPOTENCY_KEY.
	IdempotencyKey string
	// Timeout bounds the call, for the file tools as for subprocesses; 0
	// means DefaultTimeout.
	Timeout time.Duration
	// Env holds extra KEY=VALUE pairs for subprocesses. The environment is
	// otherwise scrubbed to PATH, HOME=<workspace>, LANG=C.UTF-8 and TMPDIR.
	Env []string
	// MaxOutput caps the output kept, in bytes; 0 means DefaultMaxOutput.
	MaxOutput int
	// Sandbox confines subprocesses (bash, custom tools). Nil means the
	// default policy, sandbox.Config{}: network denied, host read-only,
	// credential folders hidden, default limits. Running unconfined takes
	// an explicit Config{Unconfined: true}. The file tools refuse the
	// paths of its Hide list (nil: sandbox.DefaultHide()) too, so they see
	// what a subprocess sees; a caller that hides the agentctl home from
	// subprocesses hides it from the file tools with the same Config.
	Sandbox *sandbox.Config
	// Redactor replaces secrets in subprocess output as it is captured,
	// before it is kept in memory or written to ArtifactPath. Nil still
	// replaces token formats.
	Redactor *redact.Redactor
	// ArtifactPath, if set, receives the whole (redacted) output of a
	// subprocess as it runs. The file is kept, and Result.Artifact set,
	// only when the output was cut to MaxOutput; otherwise it is removed.
	ArtifactPath string
	// Gate, if set, is asked by the file tools about the resolved,
	// slash-separated, workspace-relative path they are about to act on
	// (the folder a walk starts from, for list_files and grep), after it
	// was confined and just before the I/O. An error refuses the call with
	// that error. The harness uses it to make the approval decision again
	// on the very path the tool acts on, in case a symlink changed between
	// dispatch and execution.
	Gate func(rel string) error
}

func (c Call) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

func (c Call) maxOutput() int {
	if c.MaxOutput <= 0 {
		return DefaultMaxOutput
	}
	return c.MaxOutput
}

// Result is what a call produced. Status uses the strings of the session
// package (session.ResultOK, session.ResultError, session.ResultCancelled).
type Result struct {
	// Status is "ok", "error" or "cancelled".
	Status string
	// Output is what the model reads: stdout and stderr for commands, the
	// text of a file, a listing.
	Output string
	// Error is a short reason when Status is not "ok", such as
	// "exit status 1" or "path escapes the workspace: ../etc/passwd".
	Error string
	// Truncated reports that the output exceeded the cap and was cut, keeping
	// its head and tail around a "[... N bytes elided ...]" note.
	Truncated bool
	// Artifact is Call.ArtifactPath when the whole output was stored there.
	Artifact string
	// Harness is set when the harness, not the tool, failed the call: its
	// own bookkeeping for it (the record of the started process, which a
	// later resume needs to prove the process gone) could not be written,
	// on a full disk say. Such a result is not the tool's answer and must
	// not reach the model as one: the run stops with Harness, the call's
	// intent left pending for resume to reconcile, as when the log itself
	// cannot be written.
	Harness error
}

// Def is how a tool is offered to a model provider.
type Def struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// The Result statuses, shared with the event log.
const (
	statusOK        = session.ResultOK
	statusError     = session.ResultError
	statusCancelled = session.ResultCancelled
)

func ok(output string, truncated bool) Result {
	return Result{Status: statusOK, Output: output, Truncated: truncated}
}

// failed turns err into an error Result. The message is meant for the model,
// so the package prefix of this package's sentinels is dropped.
func failed(err error) Result {
	return Result{Status: statusError, Error: modelError(err)}
}

func modelError(err error) string {
	return strings.TrimPrefix(err.Error(), "tools: ")
}
