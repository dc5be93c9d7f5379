package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/agentctl/agentctl/proxy"
	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner"
	"github.com/agentctl/agentctl/runner/sandbox"
	"github.com/agentctl/agentctl/runner/spec"
	"github.com/agentctl/agentctl/session"
)

// externalReplay is the --json report of `replay run` on an external
// agent's session. Its fields only grow.
type externalReplay struct {
	SessionID       string          `json:"session_id"`
	ReplaySessionID string          `json:"replay_session_id"`
	LogStatus       string          `json:"log_status"`
	ReplayStatus    string          `json:"replay_status"`
	ReplayReason    string          `json:"replay_reason,omitempty"`
	RecordedTurns   int             `json:"recorded_turns"`
	Turns           int             `json:"turns"`
	Findings        []proxy.Finding `json:"findings"`
	Diverged        bool            `json:"diverged"`
	Kept            bool            `json:"kept"`
}

// replayExternal re-runs an external agent against its recording: the
// program starts again in a fresh workspace, under the sandbox with the
// network namespace empty (the spec's allowlist and network: allow are
// dropped), and the proxy answers each model call with the recorded bytes
// (proxy.Replay: matched by position, volatile parts reported, --strict
// for any difference). A call that diverges gets a provider-shaped error
// naming the turn, and the replay exits 6.
func replayExternal(ctx context.Context, f *Factory, opts *replayRunOptions, id string, evs []session.Event, sp *spec.Spec) error {
	src := f.Store()
	rb, err := proxy.NewReplay(proxy.ReplayConfig{Events: evs, Strict: opts.Strict,
		Artifacts: func(rel string) ([]byte, error) { return proxy.ReadArtifact(src.SessionDir(id), rel) }})
	if err != nil {
		return fmt.Errorf("replay run %s: %w", id, err)
	}
	// Offline: nothing but the proxy is reachable from the agent.
	sp.Sandbox.Network, sp.Sandbox.Allow = sandbox.NetworkDeny, nil
	st := src
	if !opts.Keep {
		dir, err := os.MkdirTemp("", "agentctl-replay-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		st = recorder.Store{Root: dir}
	}
	cfg := runner.Config{Spec: sp, Store: st, Backend: rb, ReplayOf: id}
	if !opts.Quiet && !opts.JSON {
		cfg.Observer = newLiveView(f.Err)
	}
	res, err := runner.Start(ctx, cfg)
	if err != nil && res.SessionID == "" {
		return fmt.Errorf("replay run %s: %w", id, err)
	}
	rep := externalReplay{SessionID: id, ReplaySessionID: res.SessionID, LogStatus: string(session.Fold(evs).Status()),
		ReplayStatus: string(res.Status), ReplayReason: res.Reason, RecordedTurns: rb.Turns(), Turns: res.Turns,
		Findings: rb.Findings(), Diverged: rb.Diverged(), Kept: opts.Keep}
	if rep.Findings == nil {
		rep.Findings = []proxy.Finding{}
	}
	if opts.JSON {
		if e := json.NewEncoder(f.Out).Encode(rep); e != nil {
			return e
		}
	} else {
		writeExternalReplay(f.Out, rep)
	}
	if err != nil {
		return err
	}
	if rep.Diverged || rep.ReplayStatus != rep.LogStatus {
		return withCode(ExitChecksFailed, nil)
	}
	return nil
}

func writeExternalReplay(w io.Writer, r externalReplay) {
	fatal := 0
	for _, f := range r.Findings {
		if f.Fatal {
			fatal++
		}
	}
	fmt.Fprintf(w, "replay of %s (external agent): %s (recorded %s), %d of %d recorded model calls, %d findings, %d diverging\n",
		r.SessionID, r.ReplayStatus, r.LogStatus, r.Turns, r.RecordedTurns, len(r.Findings), fatal)
	for _, f := range r.Findings {
		mark := "volatile"
		if f.Fatal {
			mark = "DIVERGED"
		}
		fmt.Fprintf(w, "  turn %d: %s: %s\n", f.Turn, mark, f.What)
	}
	if r.ReplayReason != "" && r.ReplayStatus != r.LogStatus {
		fmt.Fprintf(w, "  replay ended: %s\n", r.ReplayReason)
	}
	if r.Kept {
		fmt.Fprintf(w, "  replay session: %s\n", r.ReplaySessionID)
	}
}
