package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// ReasonAgentFailed is the reason of a run whose external agent exited
// with a non-zero status (or could not start).
const ReasonAgentFailed = "agent_failed"

// budgetStopDelay is how long an external agent has, after a call was
// refused for the budget, to exit on its own (it got a provider-shaped
// error) before it is interrupted.
const budgetStopDelay = 2 * time.Second

// externalRun is what an external agent's run adds to run: the agent's
// model calls arrive from the proxy's goroutines, so appends and the fold
// are serialised, and the policy's verdicts are remembered for the end.
type externalRun struct {
	*run
	mu      sync.Mutex
	over    string // the budget a refused call met, once one was
	stop    context.CancelCauseFunc
	changed map[string]bool // models a model_changed was recorded for
	// forkLive is set at a fork's first live call (cfg.Fork).
	forkLive bool
	art      *proxy.SessionSink
}

// Causes of an external agent's stop.
var (
	errBudgetStop = errors.New("budget")
	errWallStop   = errors.New("max_wall")
)

// startExternal runs an external agent (spec agent:) in a new session: the
// header, the workspace, the sandbox with the proxy served inside the
// agent's network namespace, the agent until it exits, then the done
// checks. The proxy records the agent's model calls into the session (the
// runner's Sink), and its Policy enforces the pinned model, the budget at
// dispatch and the wall time.
func startExternal(ctx context.Context, cfg Config) (res Result, err error) {
	defer func() { res.External = true }()
	sp := cfg.Spec
	if cfg.Backend == nil {
		return Result{}, errors.New("start: an external agent needs a model backend for the proxy (scripted, upstream or a recorded session)")
	}
	if err := needPrice(sp, sp.Budget.Session(), sp.Model.ID); err != nil {
		return Result{}, fmt.Errorf("start: %w", err)
	}
	if f := cfg.Fork; f != nil && f.Model != "" {
		if err := needPrice(sp, sp.Budget.Session(), f.Model); err != nil {
			return Result{}, fmt.Errorf("start: %w", err)
		}
	}
	prompt, id, ws, err := newSession(cfg)
	if err != nil {
		return Result{}, err
	}
	ha := map[string]any{"agent": sp.Agent.Command, "source": "external_agent"}
	if cfg.ReplayOf != "" {
		// A replay or fork of that session: show --tree and sessions
		// tell it from a subagent by this (session.State.ReplayOf).
		ha["replay_of"] = cfg.ReplayOf
	}
	attrs, _ := json.Marshal(ha)
	header := session.Event{
		Kind: session.KindSessionStarted, SessionID: id, Name: sp.Name,
		Provider: sp.Model.Provider, Model: sp.Model.ID, System: sp.System,
		Spec: sp.JSON(), SpecPath: sp.Path, SpecHash: specHash(sp),
		AgentctlVersion: buildinfo.Version, HarnessCommit: buildinfo.Commit(),
		Workspace: ws, Attrs: attrs, Text: prompt, ParentSessionID: cfg.ReplayOf,
	}
	if cfg.Fork != nil {
		header.ForkedFrom = cfg.Fork.From
	}
	header.TS = time.Now()
	if cfg.Clock != nil {
		header.TS = cfg.Clock()
	}
	sec := newSecrets(sp.Workspace.From)
	sec.watch(ws)
	sess, err := cfg.Store.Create(header, recorder.Options{Clock: cfg.Clock, NoSync: cfg.NoSync, Redact: sec.redactor})
	if err != nil {
		return Result{}, fmt.Errorf("create session: %w", err)
	}
	defer sess.Close()
	hdr := sess.Header()
	r := &run{cfg: cfg, sess: sess, st: newState(hdr.System), id: id, ws: ws, started: time.Now(), secrets: sec}
	r.st.add(hdr)
	r.observe(hdr)
	x := &externalRun{run: r, changed: map[string]bool{}, art: proxy.NewSessionSink(sess)}
	defer x.art.Close()
	return x.run1(ctx, prompt)
}

func (x *externalRun) run1(parent context.Context, prompt string) (Result, error) {
	r := x.run
	sp := r.cfg.Spec
	if err := prepareWorkspace(sp, r.ws); err != nil {
		return r.fail(ReasonSetupError, err)
	}
	if err := r.setupSandbox(); err != nil {
		return r.fail(ReasonSetupError, err)
	}
	// The agent gets a placeholder key; the proxy adds the real one to
	// what it forwards upstream.
	backend := r.cfg.Backend
	if ks := keySpec(sp, r.cfg.Fork); ks.Model.Provider == "openai" || ks.Model.Provider == "anthropic" {
		if key := upstreamKey(ks); key != dummyKey {
			backend = proxy.WithKey(backend, key)
		}
	}
	srv, err := proxy.New(proxy.Config{Backend: backend, Sink: (*runSink)(x), Policy: x.policy, Redactor: r.redactor()})
	if err != nil {
		return r.fail(ReasonSetupError, err)
	}
	ctx, stopWatch := r.watchCancel(parent)
	defer stopWatch()
	agentCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	x.stop = stop
	if w := r.budget().MaxWall; w > 0 {
		var cancel context.CancelFunc
		agentCtx, cancel = context.WithDeadlineCause(agentCtx, r.started.Add(w-r.wall()), errWallStop)
		defer cancel()
	}
	cfg := *r.sandbox
	unconfined := cfg.Unconfined
	envFor := func(addr string) []string {
		return agentEnv(sp, r.ws, "http://"+addr+"/s/"+r.id, r.id, prompt, dummyKey, unconfined)
	}
	outPath := filepath.Join(r.cfg.Store.SessionDir(r.id), recorder.ArtifactsDir, AgentOutput)
	p, err := startAgent(cfg, r.ws, sp.Agent.Command, envFor, srv, r.redactor(), outPath)
	if err != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		return r.fail(ReasonAgentFailed, err)
	}
	exit := p.wait(agentCtx, func() string {
		switch c := context.Cause(agentCtx); {
		case errors.Is(c, errBudgetStop):
			return "budget"
		case errors.Is(c, errWallStop):
			return "max_wall"
		}
		return "interrupted"
	})
	_ = srv.Close()
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.end(ctx, exit)
}

// end records how the run ended, from how the agent did.
func (x *externalRun) end(ctx context.Context, exit agentExit) (Result, error) {
	r := x.run
	if x.over != "" {
		return r.overBudget(x.over)
	}
	switch exit.Killed {
	case "max_wall":
		return r.overBudget(r.wallReason("the agent"))
	case "interrupted":
		reason := r.interruptReason(ctx)
		evs := []session.Event{}
		if r.st.LastKind != session.KindInterrupted {
			evs = append(evs, session.Event{Kind: session.KindInterrupted, Reason: reason})
		}
		evs = append(evs, session.Event{Kind: session.KindSessionFinished, Status: string(session.StatusInterrupted), Reason: reason})
		err := r.append(evs...)
		return r.result(), err
	}
	// A replay that diverged, or model calls that all failed, end the run
	// failed whatever the agent's exit: its exit is then part of the story.
	if reason, detail := r.st.ModelCalls.Failure(); reason != "" {
		if exit.Code != 0 {
			detail += fmt.Sprintf("; then the agent %s exited with status %d", r.cfg.Spec.Agent.Command[0], exit.Code)
		}
		return r.fail(reason, errors.New(detail))
	}
	if exit.Code != 0 {
		tail := strings.TrimSpace(exit.Tail)
		msg := fmt.Sprintf("the agent %s exited with status %d", r.cfg.Spec.Agent.Command[0], exit.Code)
		if tail != "" {
			msg += "; its output ends: " + clipTail(tail, 1500)
		}
		msg += " (whole output: " + filepath.ToSlash(filepath.Join(recorder.ArtifactsDir, AgentOutput)) + ")"
		return r.fail(ReasonAgentFailed, errors.New(msg))
	}
	res, _, err := r.evaluate(ctx)
	return res, err
}

// policy is the proxy's check of each model call before it is served:
// the pinned model, the budget at dispatch and the wall time. A refusal is
// answered in the provider's error shape with a status SDKs do not retry.
func (x *externalRun) policy(ctx context.Context, c *proxy.Call) *proxy.Refusal {
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.run
	if x.over != "" {
		return &proxy.Refusal{Status: 400, Type: "budget_exceeded", Message: "agentctl: the run's budget is spent: " + x.over}
	}
	model, err := x.forkModel(c)
	if err != nil {
		return &proxy.Refusal{Status: 500, Type: "api_error", Message: "agentctl: " + err.Error()}
	}
	if model != "" && model != r.st.Model {
		switch r.cfg.Spec.Agent.ModelChangePolicy() {
		case spec.ModelChangeRecord:
			if !x.changed[model] {
				x.changed[model] = true
				prev := r.st.Model
				if err := r.append(session.Event{Kind: session.KindModelChanged, Provider: c.Provider, Model: model,
					Reason: fmt.Sprintf("the agent asked for %s; was %s (agent.model_change: record)", model, prev)}); err != nil {
					return &proxy.Refusal{Status: 500, Type: "api_error", Message: "agentctl: " + err.Error()}
				}
			}
		default:
			return &proxy.Refusal{Status: 400, Type: "invalid_request_error",
				Message: fmt.Sprintf("agentctl: this session is pinned to model %q; the request asked for %q (set agent.model_change: record in the spec to allow it and record the change)", r.st.Model, model)}
		}
	}
	over := r.spent()
	if over == "" {
		if b := r.budget(); b.MaxTokens > 0 {
			if est := session.EstimateTokens(c.Messages); r.st.Tokens()+est > b.MaxTokens {
				over = fmt.Sprintf("max_tokens %d: %d spent, and this request's input alone is about %d tokens", b.MaxTokens, r.st.Tokens(), est)
			}
		}
	}
	if over == "" {
		return nil
	}
	x.over = over
	if x.stop != nil {
		time.AfterFunc(budgetStopDelay, func() { x.stop(errBudgetStop) })
	}
	return &proxy.Refusal{Status: 400, Type: "budget_exceeded", Message: "agentctl: the run's budget is spent: " + over}
}

// runSink is the proxy's Sink over the run's session: every event the
// proxy records goes through run.append, so the run's fold (what it
// reports, what the policy checks the budget against) sees it.
type runSink externalRun

var _ proxy.Sink = (*runSink)(nil)

func (s *runSink) SessionID() string { return s.id }

func (s *runSink) Append(evs ...session.Event) ([]session.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range evs {
		if e := &evs[i]; e.Kind == session.KindModelCall {
			// The spec's model.price (a scripted or unlisted model), as
			// agentctl's own loop bills it; the proxy knows only its table.
			e.CostUSD = s.billed(provider.Response{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
				CacheReadTokens: e.CacheReadInputTokens, CacheCreationTokens: e.CacheCreationInputTokens, CostUSD: e.CostUSD}, e.Model)
		}
	}
	return s.run.appendOut(evs...)
}

// AppendArtifact and ReadArtifact are the session's (proxy.SessionSink):
// the raw bodies need no fold.
func (s *runSink) AppendArtifact(name string, parts ...[]byte) ([]string, func() error, error) {
	return s.art.AppendArtifact(name, parts...)
}

func (s *runSink) ReadArtifact(ref string) ([]byte, error) { return s.art.ReadArtifact(ref) }

// upstreamKey is the key the proxy puts on the calls it forwards upstream
// (proxy.WithKey; the agent never sees it): the variable
// model.api_key_env names, else the provider's usual one, else the
// dummy (the upstream then says what is missing).
func upstreamKey(sp *spec.Spec) string {
	names := []string{sp.Model.APIKeyEnv}
	switch sp.Model.Provider {
	case "openai":
		names = append(names, "OPENAI_API_KEY")
	case "anthropic":
		names = append(names, "ANTHROPIC_API_KEY")
	}
	for _, n := range names {
		if v := os.Getenv(n); n != "" && v != "" {
			return v
		}
	}
	return dummyKey
}

var _ http.Handler = (*proxy.Server)(nil)
