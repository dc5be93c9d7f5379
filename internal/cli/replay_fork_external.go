package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/internal/agent"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// externalForkOutput is the --json object of `replay fork` on an external
// agent's session: the fork (replay.ExternalForkReport) and the run's
// outcome as `run --json` prints it. Its fields only grow.
type externalForkOutput struct {
	replay.ExternalForkReport
	Run runOutput `json:"run"`
}

// replayForkExternal forks an external agent's session: the agent runs
// again in a fresh workspace from the spec, its model calls up to --from
// are served from the recording, the rest by the model --model and
// --script name (the pinned one by default), as replay.ForkExternal does.
// The flags and output mirror agentctl's own fork; --prompt and
// --rerun-bash, which act on copied events, have no meaning here.
func replayForkExternal(ctx context.Context, f *Factory, opts *replayForkOptions, id string, evs []session.Event, sp *spec.Spec) error {
	if opts.Prompt != "" {
		return usageError{fmt.Errorf("replay fork %s: --prompt: the session ran an external agent, whose requests come from the program itself (its first message is the spec's prompt, which its replayed calls must match); edit the spec's prompt and use agentctl run instead", id)}
	}
	if opts.RerunBash {
		return usageError{fmt.Errorf("replay fork %s: --rerun-bash: the session ran an external agent, which runs its own tools again in the fork's fresh workspace; drop the flag", id)}
	}
	live := *sp
	if err := forkModel(&live, opts); err != nil {
		return err
	}
	cfg, err := runConfig(f, &live, opts.Quiet || opts.JSON)
	if err != nil {
		return fmt.Errorf("replay fork %s: %w", id, err)
	}
	backend, err := agent.Backend(&live)
	if err != nil {
		return fmt.Errorf("replay fork %s: %w", id, err)
	}
	src := f.Store()
	rep, err := replay.ForkExternal(ctx, replay.ExternalForkConfig{Store: cfg.Store, SessionID: id, Events: evs, From: opts.From,
		Artifacts: func(rel string) ([]byte, error) { return proxy.ReadArtifact(src.SessionDir(id), rel) },
		Spec:      sp, Live: backend, Provider: live.Model.Provider, Model: live.Model.ID,
		ForkID: opts.ForkID, Observer: cfg.Observer})
	flushTelemetry(f, cfg.Observer)
	if rep.SessionID == "" {
		return err
	}
	sealSession(f, rep.SessionID)
	if opts.JSON {
		// reportRun prints the run's object; the fork's goes around it.
		var buf strings.Builder
		ff := *f
		ff.Out = &buf
		rerr := reportRun(&ff, rep.Result, err, true)
		out := externalForkOutput{ExternalForkReport: rep}
		_ = json.Unmarshal([]byte(buf.String()), &out.Run)
		if e := json.NewEncoder(f.Out).Encode(out); e != nil {
			return e
		}
		return rerr
	}
	writeExternalFork(f.Out, rep, live.Model)
	return reportRun(f, rep.Result, err, false)
}

func writeExternalFork(w io.Writer, rep replay.ExternalForkReport, m spec.Model) {
	note := ""
	if rep.ModelChanged {
		note = ", model changed to " + m.Provider + "/" + m.ID
	}
	fmt.Fprintf(w, "forked %s at seq %d into %s (external agent run again: %d of %d recorded model calls replayed, %d live on %s/%s%s)\n",
		rep.ParentID, rep.ForkedFrom, rep.SessionID, rep.Replayed, rep.RecordedTurns, rep.Live, m.Provider, m.ID, note)
	for _, fd := range rep.Findings {
		mark := "volatile"
		if fd.Fatal {
			mark = "DIVERGED"
		}
		fmt.Fprintf(w, "  turn %d: %s: %s\n", fd.Turn, mark, fd.What)
	}
}
