package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// sandboxConfig is the confinement of the run's tool subprocesses: the
// spec's network policy and limits, with the agentctl home hidden next to
// the invoking user's credential folders.
func sandboxConfig(sp *spec.Spec, home string) (*sandbox.Config, error) {
	mem, err := sp.Sandbox.MemoryBytes()
	if err != nil {
		return nil, fmt.Errorf("sandbox.memory: %w", err)
	}
	pids, err := sp.Sandbox.PidsLimit()
	if err != nil {
		return nil, fmt.Errorf("sandbox.pids: %w", err)
	}
	userHome, _ := os.UserHomeDir()
	return &sandbox.Config{
		ReadOnly: sp.Sandbox.ReadOnlyFolders(userHome),
		Network:  sp.Sandbox.Network,
		Allow:    sp.Sandbox.Allow,
		Hide:     sandbox.DefaultHide(home),
		Memory:   mem,
		Pids:     pids,
		CPU:      time.Duration(sp.Sandbox.CPU),
	}, nil
}

// SandboxConfig is the confinement a run of sp with the agentctl home at
// home gives its tools, for callers that run tools outside a run (replay
// fork re-applying recorded calls): the same hide list, so the file tools
// and the sandbox hide the home there too.
func SandboxConfig(sp *spec.Spec, home string) (*sandbox.Config, error) {
	return sandboxConfig(sp, home)
}

// sweepEarlier kills every process an earlier invocation of the session
// started and never waited for (the harness was killed while a tool ran
// and the parent-death signal did not reach it), waits until they are
// gone and says so in the log, before anything reconciles or repeats
// their calls. An error stops the resume: something of the earlier
// attempt may still be running.
func (r *run) sweepEarlier() error {
	swept, err := sandbox.Sweep(filepath.Join(r.cfg.Store.SessionDir(r.id), recorder.ProcsDir))
	for _, s := range swept {
		if aerr := r.append(session.Event{Kind: session.KindError, Reason: ReasonEarlierAttemptKilled,
			Error: fmt.Sprintf("killed %s (%s, pid %d, started %s) and %d process(es) in all, left running by an earlier invocation that ended without waiting for it; its call is reconciled after this",
				s.Program, s.Kind, s.PID, s.Time.Format(time.RFC3339), s.Processes)}); aerr != nil {
			return aerr
		}
	}
	if err != nil {
		return fmt.Errorf("a process of an earlier attempt may still run: %w", err)
	}
	return nil
}

// spawns reports whether a tool starts subprocesses (bash, custom
// commands), the tools the sandbox confines.
func spawns(t tools.Tool) bool {
	if s, ok := t.(interface{ Spawns() bool }); ok {
		return s.Spawns() // an MCP tool: its server on stdio runs in the sandbox
	}
	if t.Name() == tools.NameBash {
		return true
	}
	_, ok := t.(*tools.Command)
	return ok
}

// setupSandbox builds the confinement of the run's tools. The machine is
// probed when the first confined process is about to start
// (sandboxReady, Launch), not here: a run or resume that starts none
// (most of a crash matrix's killed children) would pay a whole sandbox
// set-up for nothing.
func (r *run) setupSandbox() error {
	cfg, err := sandboxConfig(r.cfg.Spec, r.cfg.Store.Root)
	if err != nil {
		return err
	}
	// Every process a call starts is recorded in the session, for the
	// sweep of a later resume.
	cfg.Procs = filepath.Join(r.cfg.Store.SessionDir(r.id), recorder.ProcsDir)
	// A program the sandbox hides would fail every call as "not found",
	// which the model takes for one more tool error: refuse at the start.
	if r.cfg.Tools != nil {
		for _, n := range r.cfg.Tools.Names() {
			t, _ := r.cfg.Tools.Get(n)
			if c, ok := t.(*tools.Command); ok {
				if err := c.HiddenProgram(cfg, r.ws); err != nil {
					return err
				}
			}
		}
	}
	r.sandbox = cfg
	return nil
}

// sandboxReady is checked before a tool that starts subprocesses is
// dispatched. Where namespaces are unavailable the run is refused unless
// the spec sets sandbox.unconfined; agentctl never falls back to running
// tools unconfined on its own. (tools would refuse each call anyway; this
// stops the run with the reason and a hint instead.)
func (r *run) sandboxReady(t tools.Tool) error {
	if r.sandbox == nil {
		// A path into the loop that skipped setupSandbox: never leave the
		// tools on the default policy without the home hidden.
		if err := r.setupSandbox(); err != nil {
			return err
		}
	}
	if !spawns(t) || r.sandbox.Unconfined {
		return nil
	}
	if err := sandbox.Available(); err != nil {
		if r.cfg.Spec.Sandbox.Unconfined {
			r.sandbox.Unconfined = true
			return nil
		}
		return fmt.Errorf("%w\n  hint: 'agentctl sandbox check' shows what this machine supports; set sandbox.unconfined: true in the spec to run tools without namespaces", err)
	}
	return nil
}

// secrets are what a run's log, its tools' output and its streamed text
// are redacted with: agentctl's own secret-looking environment variables,
// read once, and the workspace's .env* files as they are at each use (the
// agent can write one at any turn), through a redact.Live that re-reads
// them only when their stat information changed.
type secrets struct {
	env     []redact.Secret
	base    *redact.Redactor            // env only: before the workspace is known
	baseErr error                       // reading workspace.from's .env files
	live    atomic.Pointer[redact.Live] // set by watch
}

// newSecrets knows the environment's secrets and those of the .env files
// of from (the spec's workspace.from), which the header is written before
// the copy of: a prompt quoting one is redacted too.
func newSecrets(from string) *secrets {
	env := redact.FromEnv(os.Environ())
	s := &secrets{}
	if from != "" {
		more, err := redact.FromDotEnv(from)
		env, s.baseErr = append(env, more...), err
	}
	s.env, s.base = env, redact.New(env...)
	return s
}

// watch makes the .env files of ws part of the secrets.
func (s *secrets) watch(ws string) { s.live.Store(redact.NewLive(ws, s.env...)) }

// redactor returns the Redactor of this moment. It is the recorder's
// Options.Redact of the run's session.
func (s *secrets) redactor() *redact.Redactor {
	red, _ := s.current()
	return red
}

// current is redactor and, when a .env file could not be read (one over
// redact.MaxDotEnv), why: its values are not redacted.
func (s *secrets) current() (*redact.Redactor, error) {
	if l := s.live.Load(); l != nil {
		red, err := l.Redactor()
		return red, errors.Join(s.baseErr, err)
	}
	return s.base, s.baseErr
}

// redactor knows the secrets of this moment; see secrets.
func (r *run) redactor() *redact.Redactor { return r.secrets.redactor() }

// redactionProblem returns the error event to record before the next
// events when a .env file cannot be read, once per distinct problem: the
// log then says which values it may hold unredacted.
func (r *run) redactionProblem() []session.Event {
	_, err := r.secrets.current()
	if err == nil {
		r.redactErr = ""
		return nil
	}
	if err.Error() == r.redactErr {
		return nil
	}
	r.redactErr = err.Error()
	return []session.Event{{Kind: session.KindError, Reason: ReasonRedactionIncomplete, Error: err.Error()}}
}

// ReasonRedactionIncomplete is the reason of the error event recorded when
// a .env file of the workspace could not be read (over redact.MaxDotEnv):
// the values it holds are not redacted from what follows.
const ReasonRedactionIncomplete = "redaction_incomplete"

// observerText passes redacted streamed text on to the observer.
type observerText struct{ o Observer }

func (t observerText) Write(p []byte) (int, error) {
	t.o.Text(string(p))
	return len(p), nil
}

// onText shows the model's streamed text, redacted a line at a time (a
// token split across deltas must not slip through): the live view prints
// whole lines instead of every delta.
func (r *run) onText(delta string) {
	if r.cfg.Observer == nil {
		return
	}
	if r.textOut == nil {
		r.textOut = r.redactor().Writer(observerText{r.cfg.Observer})
	}
	_, _ = r.textOut.Write([]byte(delta))
}

// flushText passes on the rest of the streamed text after a model call.
func (r *run) flushText() {
	if r.textOut != nil {
		_ = r.textOut.Close()
		r.textOut = nil
	}
}

// callArgs returns the arguments a call runs with: those the model sent,
// when the call belongs to the assistant message this invocation
// received; the log holds them redacted, and a call picked up from the
// log (after a crash or an approval) runs with the arguments as recorded,
// markers included.
func (r *run) callArgs(cs *callState) json.RawMessage {
	if cs.AssistantSeq == r.sent.seq && cs.Index < len(r.sent.calls) {
		return r.sent.calls[cs.Index].Args
	}
	return cs.Call.Args
}

// sentCalls are the tool calls of the latest assistant message as the
// model sent them, before redaction; see callArgs.
type sentCalls struct {
	seq   int64
	calls []session.ToolCall
}

// artifactPath is where the whole output of a call goes; call ids come
// from the model, so only safe characters of them are kept.
func (r *run) artifactPath(callID string) string {
	name := strings.Map(func(c rune) rune {
		if c == '-' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			return c
		}
		return '_'
	}, callID)
	if name == "" {
		name = "call"
	}
	return filepath.Join(r.cfg.Store.SessionDir(r.id), recorder.ArtifactsDir, name+".txt")
}
