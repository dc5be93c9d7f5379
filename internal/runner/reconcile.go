package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// Lookuper is the optional ability of a tool to say what an earlier call
// with the same idempotency key did (custom tools with a `lookup` command).
type Lookuper interface {
	HasLookup() bool
	LookupResult(ctx context.Context, call tools.Call) (output string, found bool, err error)
}

// Idempotenter says whether repeating a call with the same key is safe.
type Idempotenter interface {
	Idempotent() bool
}

// reconcile settles every intent with no result (a crash between the call
// and its result) before any model or tool call, one `reconciled` event
// each. done is true when the run must stop (needs_human).
func (r *run) reconcile(ctx context.Context) (Result, bool, error) {
	for _, cs := range r.st.openCalls() {
		if !cs.Intent {
			continue
		}
		if cs.Call.Name == tools.NameTask {
			// A subagent: resume it or take its result (subagent.go).
			if res, stopped, err := r.reconcileTask(ctx, cs); stopped || err != nil {
				return res, true, err
			}
			continue
		}
		outcome, output, why := r.settle(ctx, cs)
		ev := session.Event{Kind: session.KindReconciled, CallID: cs.Call.ID, Tool: cs.Call.Name,
			IdempotencyKey: cs.IntentKey, Outcome: outcome, Output: r.capOutput(output), Reason: why}
		// Whatever the outcome, the workspace as the call left it is
		// committed: the record holds what is there, even when a human
		// must still say what it means.
		if t, ok := r.cfg.Tools.Get(cs.Call.Name); !ok || t.SideEffects() {
			ev.GitSHA = r.commitCall(ctx, cs)
		}
		if r.gitErr != nil {
			res, err := r.fail(ReasonGitError, r.gitErr)
			return res, true, err
		}
		if err := r.append(ev); err != nil {
			return r.result(), true, err
		}
		if outcome == session.ReconciledNeedsHuman {
			res, err := r.finish(session.StatusNeedsHuman, fmt.Sprintf(
				"call %s (%s) with idempotency key %s may or may not have taken effect: %s; check it by hand, then record the outcome or fork the session",
				cs.Call.ID, cs.Call.Name, cs.IntentKey, why))
			return res, true, err
		}
	}
	return r.result(), false, nil
}

// settle decides what happened to one pending intent.
func (r *run) settle(ctx context.Context, cs *callState) (outcome, output, why string) {
	t, ok := r.cfg.Tools.Get(cs.Call.Name)
	if !ok {
		return session.ReconciledNeedsHuman, "", "the tool is no longer in the registry"
	}
	repeat := func(reason string) (string, string, string) {
		// Bounded by tool_timeout like the call it repeats (a hung MCP
		// server must not hold the resume longer than the call could).
		res := t.Run(ctx, tools.Call{Args: cs.Call.Args, Workspace: r.ws, IdempotencyKey: cs.IntentKey,
			Env: PassEnv(r.cfg.Spec.Sandbox.Env), Sandbox: r.sandbox, MaxOutput: r.outputCap(),
			Timeout: time.Duration(r.cfg.Spec.ToolTimeout), Redactor: r.redactor()})
		out := res.Output
		if res.Status != session.ResultOK && res.Error != "" {
			out = strings.TrimSpace(out + "\n" + res.Error)
		}
		return session.ReconciledRepeated, out, reason
	}
	if !t.SideEffects() {
		return repeat("no side effects: safe to repeat")
	}
	if l, ok := t.(Lookuper); ok && l.HasLookup() {
		out, found, err := l.LookupResult(ctx, tools.Call{Workspace: r.ws, IdempotencyKey: cs.IntentKey, Sandbox: r.sandbox,
			Timeout: time.Duration(r.cfg.Spec.ToolTimeout), Env: PassEnv(r.cfg.Spec.Sandbox.Env)})
		switch {
		case err != nil:
			return session.ReconciledNeedsHuman, "", "lookup failed: " + err.Error()
		case found:
			return session.ReconciledRecovered, out, "lookup found the stored result"
		}
		if i, ok := t.(Idempotenter); ok && i.Idempotent() {
			return repeat("lookup does not know the key; the tool is idempotent, repeated with the same key")
		}
		return session.ReconciledNeedsHuman, "", "lookup does not know the key and the tool is not idempotent"
	}
	if i, ok := t.(Idempotenter); ok {
		if i.Idempotent() {
			return repeat("idempotent tool, repeated with the same key")
		}
		return session.ReconciledNeedsHuman, "", "the tool is not idempotent and has no lookup"
	}
	return r.settleBuiltin(cs, repeat)
}

// settleBuiltin checks the workspace for the effect of a file tool.
func (r *run) settleBuiltin(cs *callState, repeat func(string) (string, string, string)) (string, string, string) {
	var a struct {
		Path, Content, Old, New string
	}
	_ = json.Unmarshal(cs.Call.Args, &a)
	switch cs.Call.Name {
	case "write_file":
		p, err := tools.Confine(r.ws, a.Path)
		if err != nil {
			return session.ReconciledNeedsHuman, "", err.Error()
		}
		if b, err := os.ReadFile(p); err == nil && string(b) == a.Content {
			return session.ReconciledRecovered, fmt.Sprintf("%s already holds the content (%d bytes)", a.Path, len(b)), "the file already has the content"
		}
		return repeat("the file does not have the content yet; writing is idempotent")
	case "edit_file":
		p, err := tools.Confine(r.ws, a.Path)
		if err != nil {
			return session.ReconciledNeedsHuman, "", err.Error()
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return session.ReconciledNeedsHuman, "", err.Error()
		}
		has := func(s string) int { return strings.Count(string(b), s) }
		switch {
		case has(a.Old) == 0 && has(a.New) > 0:
			return session.ReconciledRecovered, "edited " + a.Path, "the edit is already in the file"
		case has(a.Old) == 1:
			return repeat("the edit is not in the file yet")
		}
		return session.ReconciledNeedsHuman, "", "the file matches neither the state before nor after the edit"
	}
	return session.ReconciledNeedsHuman, "", "a command may have had effects that agentctl cannot check"
}
