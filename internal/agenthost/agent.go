package agenthost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
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

// dirSetter is a backend that compares the agent's requests with a
// recording (proxy.Replay): it is told the fresh workspace the agent runs
// in, so that the workspace path in them compares as the recorded one.
type dirSetter interface{ SetDir(dir string) }

// Agent is an external agent's run as the runner hosts it (runner.Hosted):
// the program the spec's agent: names, started in the sandbox with the
// proxy served inside its network namespace, its model calls answered by
// Backend and recorded into the session.
type Agent struct {
	// Backend answers the agent's model calls: proxy.NewScripted,
	// proxy.NewUpstream or a recorded session's replay.
	Backend proxy.Backend
	// ReplayOf names the recorded session whose answers Backend replays
	// (replay run); the header records it as the parent session.
	ReplayOf string
	// Fork, with ReplayOf, makes the run a fork of that session (see
	// Fork).
	Fork *Fork
}

var _ runner.Hosted = (*Agent)(nil)

// Plan gives the runner what the header records and the models the run
// may bill.
func (a *Agent) Plan() (runner.HostPlan, error) {
	if a.Backend == nil {
		return runner.HostPlan{}, errors.New("an external agent needs a model backend for the proxy (scripted, upstream or a recorded session)")
	}
	p := runner.HostPlan{ReplayOf: a.ReplayOf}
	if f := a.Fork; f != nil {
		p.ForkedFrom = f.From
		if f.Model != "" {
			p.Models = []string{f.Model}
		}
	}
	return p, nil
}

// Run runs the agent in h's session until it exits, then records how it
// ended.
func (a *Agent) Run(ctx context.Context, h *runner.Host) (runner.Result, error) {
	x := &externalRun{h: h, a: a, sp: h.Spec(), changed: map[string]bool{}, art: proxy.NewSessionSink(h.Session())}
	defer x.art.Close()
	return x.run(ctx)
}

// externalRun is one hosted run: the agent's model calls arrive from the
// proxy's goroutines, so appends and the fold are serialised by mu, and
// the policy's verdicts are remembered for the end.
type externalRun struct {
	h       *runner.Host
	a       *Agent
	sp      *spec.Spec
	mu      sync.Mutex
	over    string // the budget a refused call met, once one was
	stop    context.CancelCauseFunc
	changed map[string]bool // models a model_changed was recorded for
	// forkLive is set at a fork's first live call (Agent.Fork).
	forkLive bool
	art      *proxy.SessionSink
	// sideSpent and sideCalls fold the model calls of the run's side
	// threads (see sideSink): sessions of their own, whose spend is the
	// run's and whose divergence in a replay is the run's.
	sideSpent    session.Spend
	sideCalls    session.ModelCalls
	sideDiverged string // the side thread of sideCalls.Diverged
}

// Causes of an external agent's stop.
var (
	errBudgetStop = errors.New("budget")
	errWallStop   = errors.New("max_wall")
)

func (x *externalRun) run(parent context.Context) (runner.Result, error) {
	h, sp := x.h, x.sp
	cfg, err := h.Setup()
	if err != nil {
		return h.Fail(runner.ReasonSetupError, err)
	}
	// The agent gets a placeholder key; the proxy adds the real one to
	// what it forwards upstream.
	backend := x.a.Backend
	if d, ok := backend.(dirSetter); ok {
		d.SetDir(h.Workspace())
	}
	if ks := keySpec(sp, x.a.Fork); ks.Model.KeyEnv() != "" {
		if key := upstreamKey(ks); key != dummyKey {
			backend = proxy.WithKey(backend, key)
		}
	}
	srv, err := proxy.New(proxy.Config{Backend: backend, Sink: (*runSink)(x), OpenSide: x.openSide,
		Header: session.Event{Name: sp.Name}, Policy: x.policy, Redactor: h.Redactor()})
	if err != nil {
		return h.Fail(runner.ReasonSetupError, err)
	}
	ctx, stopWatch := h.WatchCancel(parent)
	defer stopWatch()
	agentCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	x.stop = stop
	if d, ok := h.Deadline(); ok {
		var cancel context.CancelFunc
		agentCtx, cancel = context.WithDeadlineCause(agentCtx, d, errWallStop)
		defer cancel()
	}
	unconfined := cfg.Unconfined
	envFor := func(addr string) []string {
		return agentEnv(sp, h.Workspace(), "http://"+addr+"/s/"+h.ID(), h.ID(), h.Prompt(), dummyKey, unconfined)
	}
	outPath := filepath.Join(h.Store().SessionDir(h.ID()), recorder.ArtifactsDir, AgentOutput)
	p, err := startAgent(cfg, h.Workspace(), sp.Agent.Command, envFor, srv, h.Redactor(), outPath)
	if err != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		return h.Fail(ReasonAgentFailed, err)
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
func (x *externalRun) end(ctx context.Context, exit agentExit) (runner.Result, error) {
	h := x.h
	if x.over != "" {
		return h.OverBudget(x.over)
	}
	switch exit.Killed {
	case "max_wall":
		return h.WallExceeded("the agent")
	case "interrupted":
		return h.Interrupted(ctx)
	}
	// A replay that diverged, or model calls that all failed, end the run
	// failed whatever the agent's exit: its exit is then part of the story.
	// A side thread that diverged is the run's divergence too.
	reason, detail := h.State().ModelCalls.Failure()
	if d := x.sideCalls.Diverged; d != nil && h.State().ModelCalls.Diverged == nil {
		reason, detail = session.ErrorTypeReplayDivergence, fmt.Sprintf("side thread %s: %s", x.sideDiverged, d.Error)
	}
	if reason != "" {
		if exit.Code != 0 {
			detail += fmt.Sprintf("; then the agent %s exited with status %d", x.sp.Agent.Command[0], exit.Code)
		}
		return h.Fail(reason, errors.New(detail))
	}
	if exit.Code != 0 {
		tail := strings.TrimSpace(exit.Tail)
		msg := fmt.Sprintf("the agent %s exited with status %d", x.sp.Agent.Command[0], exit.Code)
		if tail != "" {
			msg += "; its output ends: " + runner.ClipTail(tail, 1500)
		}
		msg += " (whole output: " + filepath.ToSlash(filepath.Join(recorder.ArtifactsDir, AgentOutput)) + ")"
		return h.Fail(ReasonAgentFailed, errors.New(msg))
	}
	return h.Evaluate(ctx)
}

// policy is the proxy's check of each model call before it is served:
// the pinned model, the budget at dispatch and the wall time. A refusal is
// answered in the provider's error shape with a status SDKs do not retry.
func (x *externalRun) policy(ctx context.Context, c *proxy.Call) *proxy.Refusal {
	x.mu.Lock()
	defer x.mu.Unlock()
	h := x.h
	st := h.State()
	if x.over != "" {
		return &proxy.Refusal{Status: 400, Type: "budget_exceeded", Message: "agentctl: the run's budget is spent: " + x.over}
	}
	model, err := x.forkModel(c)
	if err != nil {
		return &proxy.Refusal{Status: 500, Type: "api_error", Message: "agentctl: " + err.Error()}
	}
	if model != "" && model != st.Model {
		switch x.sp.Agent.ModelChangePolicy() {
		case spec.ModelChangeRecord:
			if !x.changed[model] {
				x.changed[model] = true
				prev := st.Model
				if _, err := h.Append(session.Event{Kind: session.KindModelChanged, Provider: c.Provider, Model: model,
					Reason: fmt.Sprintf("the agent asked for %s; was %s (agent.model_change: record)", model, prev)}); err != nil {
					return &proxy.Refusal{Status: 500, Type: "api_error", Message: "agentctl: " + err.Error()}
				}
			}
		default:
			return &proxy.Refusal{Status: 400, Type: "invalid_request_error",
				Message: fmt.Sprintf("agentctl: this session is pinned to model %q; the request asked for %q (set agent.model_change: record in the spec to allow it and record the change)", st.Model, model)}
		}
	}
	// The side threads' spend is charged with the session's own.
	over := h.SpentWith(x.sideSpent)
	if over == "" {
		if b := h.Budget(); b.MaxTokens > 0 {
			spent := st.Tokens() + x.sideSpent.Tokens()
			if est := session.EstimateTokens(c.Messages); spent+est > b.MaxTokens {
				over = fmt.Sprintf("max_tokens %d: %d spent, and this request's input alone is about %d tokens", b.MaxTokens, spent, est)
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
// proxy records goes through the Host, so the run's fold (what it
// reports, what the policy checks the budget against) sees it.
type runSink externalRun

var _ proxy.Sink = (*runSink)(nil)

func (s *runSink) SessionID() string { return s.h.ID() }

func (s *runSink) Append(evs ...session.Event) ([]session.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range evs {
		if e := &evs[i]; e.Kind == session.KindModelCall {
			// The spec's model.price (a scripted or unlisted model), as
			// agentctl's own loop bills it; the proxy knows only its table.
			s.h.Bill(e)
		}
	}
	return s.h.Append(evs...)
}

// AppendArtifact and ReadArtifact are the session's (proxy.SessionSink):
// the raw bodies need no fold.
func (s *runSink) AppendArtifact(name string, parts ...[]byte) ([]string, func() error, error) {
	return s.art.AppendArtifact(name, parts...)
}

func (s *runSink) ReadArtifact(ref string) ([]byte, error) { return s.art.ReadArtifact(ref) }

// openSide is the proxy's Opener of the run's side threads: a call of the
// agent that shares nothing with its conversation (a title or quota call:
// session.Route decides, in the proxy) is recorded as session
// <run>-side<N> in the run's store, its header naming the run. It is
// finished by the proxy's Close when the agent is done.
func (x *externalRun) openSide(id string, header session.Event) (proxy.Sink, error) {
	sink, err := proxy.StoreSessions{Store: x.h.Store(), Options: recorder.Options{Redact: x.h.Redactor}}.Open(id, header)
	if err != nil {
		return nil, err
	}
	return &sideSink{Sink: sink, x: x}, nil
}

// sideSink records a side thread of the run: its calls are billed as the
// run's are (the spec's model.price) and their spend and failures folded
// into the run (externalRun.sideSpent, sideCalls), for the budget the
// policy checks and the run's end. Their events stay in the side
// thread's own log: the run's log keeps one conversation.
type sideSink struct {
	proxy.Sink
	x *externalRun
}

func (s *sideSink) Append(evs ...session.Event) ([]session.Event, error) {
	x := s.x
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range evs {
		if evs[i].Kind == session.KindModelCall {
			x.h.Bill(&evs[i])
		}
	}
	out, err := s.Sink.Append(evs...)
	for _, e := range out {
		if e.Kind != session.KindModelCall {
			continue
		}
		x.sideSpent.InputTokens += e.InputTokens
		x.sideSpent.OutputTokens += e.OutputTokens
		x.sideSpent.CostUSD += e.CostUSD
		was := x.sideCalls.Diverged
		x.sideCalls.Add(e)
		if was == nil && x.sideCalls.Diverged != nil {
			x.sideDiverged = s.SessionID()
		}
	}
	return out, err
}

// Close closes the side thread's session (the proxy's Finish calls it).
func (s *sideSink) Close() error {
	if c, ok := s.Sink.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// upstreamKey is the key the proxy puts on the calls it forwards upstream
// (proxy.WithKey; the agent never sees it): the variable
// model.api_key_env names, else the provider's usual one, else the
// dummy (the upstream then says what is missing).
func upstreamKey(sp *spec.Spec) string {
	names := []string{sp.Model.APIKeyEnv, spec.Model{Provider: sp.Model.Provider}.KeyEnv()}
	for _, n := range names {
		if v := os.Getenv(n); n != "" && v != "" {
			return v
		}
	}
	return dummyKey
}

var _ http.Handler = (*proxy.Server)(nil)
