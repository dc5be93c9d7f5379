package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// Hosted is an agent agentctl does not drive (spec agent:): a program
// whose model calls reach the session through agentctl's proxy. It is the
// boundary between the runner, which owns the session, and agenthost,
// which owns the program and the proxy; the runner does not link the
// proxy.
type Hosted interface {
	// Plan is what the new session's header and price checks need to
	// know before anything runs; an error refuses the run before a
	// session exists.
	Plan() (HostPlan, error)
	// Run runs the agent in the session h holds, until it exits, and
	// records how it ended through h.
	Run(ctx context.Context, h *Host) (Result, error)
}

// HostPlan is what a hosted run adds to a new session's header.
type HostPlan struct {
	// ReplayOf names the recorded session the run replays or forks: the
	// header's parent_session_id and attrs.replay_of (show --tree and
	// sessions tell a replay from a subagent by it).
	ReplayOf string
	// ForkedFrom is the parent's seq a fork was asked at (forked_from).
	ForkedFrom int64
	// Models are models other than the spec's the run may bill (a fork's
	// live model): a budget needs a price for each before the run starts.
	Models []string
}

// Host is the session of a hosted run, as the agent host sees it: appends
// go through the run's fold (what it reports, what the budget is checked
// against), and the endings (failed, over budget, interrupted, the done
// checks) are recorded exactly as for agentctl's own loop. A Host is not
// safe for concurrent use: the agent host serialises the proxy's calls.
type Host struct {
	r      *run
	prompt string
}

// startHosted runs an external agent in a new session: the header, then
// cfg.Agent with the session.
func startHosted(ctx context.Context, cfg Config) (res Result, err error) {
	defer func() { res.External = true }()
	sp := cfg.Spec
	if cfg.Agent == nil {
		return Result{}, errors.New("start: an external agent (spec agent:) needs its host: build the run config with agent.Config, which gives it one")
	}
	plan, err := cfg.Agent.Plan()
	if err != nil {
		return Result{}, fmt.Errorf("start: %w", err)
	}
	for _, m := range append([]string{sp.Model.ID}, plan.Models...) {
		if err := needPrice(sp, sp.Budget.Session(), m); err != nil {
			return Result{}, fmt.Errorf("start: %w", err)
		}
	}
	prompt, id, ws, err := newSession(cfg)
	if err != nil {
		return Result{}, err
	}
	ha := map[string]any{"agent": sp.Agent.Command, "source": "external_agent"}
	if plan.ReplayOf != "" {
		ha["replay_of"] = plan.ReplayOf
	}
	attrs, _ := json.Marshal(ha)
	attrs = session.WithTags(attrs, session.MergeTags(sp.Tags, cfg.Tags), "")
	header := session.Event{
		Kind: session.KindSessionStarted, SessionID: id, Name: sp.Name,
		Provider: sp.Model.Provider, Model: sp.Model.ID, System: sp.System,
		Spec: sp.JSON(), SpecPath: sp.Path, SpecHash: specHash(sp),
		AgentctlVersion: buildinfo.Version, HarnessCommit: buildinfo.Commit(),
		Workspace: ws, Attrs: attrs, Text: prompt, ParentSessionID: plan.ReplayOf,
		ForkedFrom: plan.ForkedFrom,
	}
	sess, sec, err := createSession(cfg, &header, ws)
	if err != nil {
		return Result{}, err
	}
	defer sess.Close()
	hdr := sess.Header()
	r := &run{cfg: cfg, sess: sess, st: newState(hdr.System), id: id, ws: ws, started: time.Now(), secrets: sec}
	r.st.add(hdr)
	r.observe(hdr)
	return cfg.Agent.Run(ctx, &Host{r: r, prompt: prompt})
}

// ID is the session's id.
func (h *Host) ID() string { return h.r.id }

// Spec is the spec the session runs.
func (h *Host) Spec() *spec.Spec { return h.r.cfg.Spec }

// Workspace is the session's workspace, an absolute path.
func (h *Host) Workspace() string { return h.r.ws }

// Prompt is the session's first user message.
func (h *Host) Prompt() string { return h.prompt }

// Session is the open log, for what needs no fold (raw bodies as
// artifacts).
func (h *Host) Session() *recorder.Session { return h.r.sess }

// Store is the home the session is in.
func (h *Host) Store() recorder.Store { return h.r.cfg.Store }

// State is the fold of the session so far. Read it only between appends.
func (h *Host) State() *session.State { return &h.r.st.State }

// Append makes events durable and folds them; it returns them as written
// (seq, ts, redacted).
func (h *Host) Append(evs ...session.Event) ([]session.Event, error) { return h.r.appendOut(evs...) }

// Bill sets a model call's cost as agentctl's own loop bills it: the
// spec's model.price for a scripted or unlisted model, else the table's.
func (h *Host) Bill(e *session.Event) {
	e.CostUSD = h.r.billed(provider.Response{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
		CacheReadTokens: e.CacheReadInputTokens, CacheCreationTokens: e.CacheCreationInputTokens, CostUSD: e.CostUSD}, e.Model)
}

// Redactor is what the session's log is redacted with (the spec's
// secrets and the workspace's .env files), for the agent's output.
func (h *Host) Redactor() *redact.Redactor { return h.r.redactor() }

// Setup prepares the workspace and the sandbox the agent runs in.
func (h *Host) Setup() (sandbox.Config, error) {
	if err := prepareWorkspace(h.r.cfg.Spec, h.r.ws); err != nil {
		return sandbox.Config{}, err
	}
	if err := h.r.setupSandbox(); err != nil {
		return sandbox.Config{}, err
	}
	return *h.r.sandbox, nil
}

// WatchCancel cancels ctx when the session's cancel file appears (agentctl
// cancel), as for agentctl's own loop.
func (h *Host) WatchCancel(ctx context.Context) (context.Context, func()) {
	return h.r.watchCancel(ctx)
}

// Deadline is when the budget's max_wall runs out, if it has one.
func (h *Host) Deadline() (time.Time, bool) {
	w := h.r.budget().MaxWall
	if w <= 0 {
		return time.Time{}, false
	}
	return h.r.started.Add(w - h.r.wall()), true
}

// Budget is the budget in force.
func (h *Host) Budget() session.Budget { return h.r.budget() }

// Spent names the budget limit the session has reached, "" if none.
func (h *Host) Spent() string { return h.r.spent() }

// SpentWith is Spent with extra charged besides what the session's log
// folds: the spend of the run's side threads (an external agent's title
// or quota calls, recorded as sessions of their own), which is the run's.
func (h *Host) SpentWith(extra session.Spend) string { return h.r.spentWith(extra) }

// Fail records an error and a failed finish.
func (h *Host) Fail(reason string, cause error) (Result, error) { return h.r.fail(reason, cause) }

// OverBudget records a budget stop for why.
func (h *Host) OverBudget(why string) (Result, error) { return h.r.overBudget(why) }

// WallExceeded records the max_wall stop of what was cut at the deadline.
func (h *Host) WallExceeded(what string) (Result, error) { return h.r.overBudget(h.r.wallReason(what)) }

// Interrupted records an interruption (a signal, the cancel file) as the
// session's end.
func (h *Host) Interrupted(ctx context.Context) (Result, error) {
	r := h.r
	reason := r.interruptReason(ctx)
	var evs []session.Event
	if r.st.LastKind != session.KindInterrupted {
		evs = append(evs, session.Event{Kind: session.KindInterrupted, Reason: reason})
	}
	evs = append(evs, session.Event{Kind: session.KindSessionFinished, Status: string(session.StatusInterrupted), Reason: reason})
	err := r.append(evs...)
	return r.result(), err
}

// Evaluate runs the spec's done checks and records the session's end.
func (h *Host) Evaluate(ctx context.Context) (Result, error) {
	res, _, err := h.r.evaluate(ctx)
	return res, err
}
