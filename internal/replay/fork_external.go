package replay

import (
	"context"
	"fmt"
	"github.com/agentctl/agentctl/internal/modelapi"
	"net/http"
	"sync/atomic"

	"github.com/agentctl/agentctl/internal/agenthost"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// ExternalForkConfig is what a fork of an external agent's session needs.
type ExternalForkConfig struct {
	Store     recorder.Store
	SessionID string
	Events    []session.Event
	// Artifacts reads the files the parent's events name (its raw
	// bodies): proxy.ReadArtifact over the parent's folder.
	Artifacts func(rel string) ([]byte, error)
	// Sides are the parent's side threads (proxy.SideThreads): the
	// program's title or quota calls are served their own recorded
	// answers up to the fork's turn, as the parent's conversation is.
	Sides []proxy.ReplayConfig
	// From is the parent's seq the fork is made at: the model calls at or
	// before it are replayed, the rest are live.
	From int64
	// Spec is the parent's spec: the agent runs as it did, asking for the
	// model it asked for (its replayed calls must match the recording).
	Spec *spec.Spec
	// Live serves the calls after the replayed ones (the new model's
	// backend: proxy.NewScripted, proxy.NewUpstream). Provider and Model,
	// when they differ from the parent's, are the model it goes live on:
	// the live calls ask for it (proxy.WithModel), a scripted one starts
	// its script at its first turn (proxy.AfterTurn), and the change is
	// recorded as model_changed.
	Live            proxy.Backend
	Provider, Model string
	ForkID          string
	Observer        runner.Observer
	// Tags label the fork over its spec's (runner.Config.Tags).
	Tags map[string]string
}

// ExternalForkReport is the outcome of ForkExternal; --json prints it.
type ExternalForkReport struct {
	SessionID  string `json:"session_id"`
	ParentID   string `json:"parent_session_id"`
	ForkedFrom int64  `json:"forked_from"`
	// Replayed is the number of the parent's model calls served from the
	// recording (the proxy's --until); RecordedTurns how many it has.
	Replayed      int `json:"replayed"`
	RecordedTurns int `json:"recorded_turns"`
	// Live counts the model calls served live; ModelChanged says the
	// first of them went to another model (a model_changed was recorded).
	Live         int             `json:"live"`
	ModelChanged bool            `json:"model_changed"`
	Findings     []proxy.Finding `json:"findings"`
	Diverged     bool            `json:"diverged"`
	Result       runner.Result   `json:"result"`
	// Normalised is what each normaliser changed in the replayed turns.
	Normalised []replaymatch.Change `json:"normalised"`
}

// ForkExternal forks an external agent's session at seq From. A program's
// memory cannot be given the parent's events, so the fork is the agent run
// again from its start, in a fresh workspace from the spec, with the proxy
// serving its first model calls (those at or before From) byte for byte
// from the parent's recording, and the rest from Live: the what-if run for
// agents agentctl does not drive. The new session's header names
// parent_session_id and forked_from; its log holds every call, replayed
// and live, as a run records them, so it replays and verifies on its own.
// A replayed call that does not match its recorded turn (the agent did
// something else this time) gets a provider-shaped error naming the turn,
// and the report has the finding.
//
// As in Fork, a cut between an assistant message and its model_call is
// refused, before anything is created.
func ForkExternal(ctx context.Context, cfg ExternalForkConfig) (ExternalForkReport, error) {
	evs := cfg.Events
	rep := ExternalForkReport{ParentID: cfg.SessionID, ForkedFrom: cfg.From, Findings: []proxy.Finding{}}
	if len(evs) == 0 || evs[0].Kind != session.KindSessionStarted {
		return rep, fmt.Errorf("fork %s: the log does not start with session_started", cfg.SessionID)
	}
	last := evs[len(evs)-1].Seq
	if cfg.From < 1 || cfg.From > last {
		return rep, fmt.Errorf("fork %s: --from %d is outside the log (seq 1..%d)", cfg.SessionID, cfg.From, last)
	}
	if k := evs[cfg.From-1]; k.Kind == session.KindAssistantMessage && int(cfg.From) < len(evs) && evs[cfg.From].Kind == session.KindModelCall {
		return rep, fmt.Errorf("fork %s: --from %d separates an assistant message from its model_call; use --from %d", cfg.SessionID, cfg.From, cfg.From+1)
	}
	until := proxy.TurnsThrough(evs, cfg.From)
	rep.Replayed = until
	kept := session.Fold(evs[:cfg.From])
	fork := &agenthost.Fork{From: cfg.From, Until: until}
	live := cfg.Live
	changes := false
	if p, m := cfg.Provider, cfg.Model; m != "" && (m != kept.Model || (p != "" && p != kept.Provider)) {
		changes = true
		fork.Provider, fork.Model = p, m
		live = proxy.WithModel(proxy.AfterTurn(live, until), m)
	}
	counted := &liveCounter{Backend: live}
	var ignore []replaymatch.Normaliser
	if cfg.Spec != nil && cfg.Spec.Agent != nil {
		var err error
		if ignore, err = replaymatch.Ignores(cfg.Spec.Agent.ReplayIgnore); err != nil {
			return rep, fmt.Errorf("fork %s: agent.replay_%w", cfg.SessionID, err)
		}
	}
	rb, err := proxy.NewReplay(proxy.ReplayConfig{Events: evs, Artifacts: cfg.Artifacts, Until: until, Live: counted, Ignore: ignore, Sides: cfg.Sides})
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
	}
	rep.RecordedTurns = rb.Turns()
	var backend proxy.Backend = rb
	if until == 0 {
		// Nothing to replay (Until 0 would mean every turn).
		backend = counted
	}
	res, err := runner.Start(ctx, runner.Config{Spec: cfg.Spec, Store: cfg.Store,
		Agent: &agenthost.Agent{Backend: backend, ReplayOf: cfg.SessionID, Fork: fork}, SessionID: cfg.ForkID, Observer: cfg.Observer, Tags: cfg.Tags})
	rep.SessionID, rep.Result = res.SessionID, res
	rep.Live = int(counted.n.Load())
	rep.ModelChanged = changes && rep.Live > 0
	if f := rb.Findings(); f != nil {
		rep.Findings = f
	}
	rep.Diverged = rb.Diverged()
	rep.Normalised = rb.Normalised()
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
	}
	return rep, nil
}

// liveCounter counts the model calls a fork served live.
type liveCounter struct {
	proxy.Backend
	n atomic.Int64
}

func (l *liveCounter) Serve(ctx context.Context, c *proxy.Call, w http.ResponseWriter) error {
	if c.Op() == modelapi.OpGenerate {
		l.n.Add(1)
	}
	return l.Backend.Serve(ctx, c, w)
}
