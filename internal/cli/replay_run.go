package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type replayRunOptions struct {
	Session       string
	Strict        bool
	Ignore        []string
	WorkspaceFrom string
	Spec          string
	Keep          bool
	JSON          bool
	Quiet         bool
	// Offline serves the recorded results of MCP tools: no server runs.
	Offline bool
}

func newReplayRunCmd(f *Factory, runF func(context.Context, *replayRunOptions) error) *cobra.Command {
	opts := &replayRunOptions{}
	cmd := &cobra.Command{
		Use:   "run SESSION",
		Short: "Re-run a session offline: recorded turns, real tools, fresh workspace",
		Long: `Re-execute a recorded session with no model: each turn is answered by the
recorded assistant message (provider "recorded": no network, no key), the
tools run for real, sandboxed as in a run, in a fresh copy of the spec's
workspace.from (or --workspace-from), and approvals get the recorded
decisions. Every tool result is compared with the recording; differences
(the environment changed) are listed with codes tool_result_differs,
tool_result_missing, tool_result_extra, status_differs. The replay goes on
after a difference unless --strict.

MCP tools talk to their live servers, started as in a run; a server whose
tool list changed since the recording (its tools hash in the header) is a
difference, code mcp_tools_changed. --offline starts no server: the
recorded tools (names, schemas, treatment) answer with the recorded
results.

The replay is recorded as a session of its own in a scratch home that is
removed afterwards (--keep records it under --home instead).

Exit status: 0 no difference, 6 differences, 1 an error.`,
		Example: "  agentctl replay run 3f2a\n  agentctl replay run 3f2a --strict --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return replayRunRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "stop at the first tool result that differs; an external agent's requests compare byte for byte")
	cmd.Flags().StringArrayVar(&opts.Ignore, "ignore", nil, "an external agent's replay also treats text matching this regular expression as volatile (repeatable)")
	cmd.Flags().StringVar(&opts.WorkspaceFrom, "workspace-from", "", "initial workspace to copy instead of the spec's workspace.from")
	cmd.Flags().StringVar(&opts.Spec, "spec", "", "spec `FILE` whose tools run (default: the file the session ran from; the log's copy is never run)")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "record the replay under --home and keep it")
	cmd.Flags().BoolVar(&opts.Offline, "offline", false, "serve the recorded results of MCP tools; start no MCP server")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as one JSON object")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "no live view on stderr")
	return cmd
}

func replayRunRun(ctx context.Context, f *Factory, opts *replayRunOptions) error {
	id, evs, err := loadSession(f, opts.Session)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return fmt.Errorf("replay run %s: the log has no events", id)
	}
	// An imported session has no spec file: it replays from a minimal spec
	// with the recorded results standing in for its tools, unless --spec
	// names tools to re-run.
	sp, imported, err := replaySpec(f, "replay run", id, evs, opts.Spec)
	if err != nil {
		return err
	}
	wsFrom := ""
	if opts.WorkspaceFrom != "" {
		if wsFrom, err = filepath.Abs(opts.WorkspaceFrom); err != nil {
			return err
		}
	}
	st := f.Store()
	if !opts.Keep {
		dir, err := os.MkdirTemp("", "agentctl-replay-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		st = recorder.Store{Root: dir}
	}
	cfg := replay.SessionConfig{Store: st, Recordings: f.Store(), SessionID: id, Events: evs, Spec: sp, WorkspaceFrom: wsFrom,
		Strict: opts.Strict, Offline: opts.Offline, Ignore: opts.Ignore}
	if _, err := replaymatch.Ignores(opts.Ignore); err != nil {
		return usageError{fmt.Errorf("--%w", err)}
	}
	if imported {
		cfg.Spec = nil // the session's own: its recorded results stand in for its tools
	}
	if !opts.Quiet && !opts.JSON {
		cfg.Observer = newLiveView(f.Err)
	}
	sr, err := replay.Session(ctx, cfg)
	if sr.External != nil {
		return writeExternalReplay(f, sr, err, opts.JSON)
	}
	if sr.Own == nil {
		return err
	}
	rep := *sr.Own
	if opts.JSON {
		if e := json.NewEncoder(f.Out).Encode(rep); e != nil {
			return e
		}
	} else {
		writeReplayRun(termsafe.Writer(f.Out), rep, opts.Keep)
		if imported {
			fmt.Fprintf(f.Out, "  %s: no spec; the recorded results stood in for its tools (--spec FILE re-runs them)\n", termsafe.Line(standInWhat(evs[0])))
		}
	}
	if err != nil {
		return err
	}
	if sr.Differs() {
		return withCode(ExitChecksFailed, nil)
	}
	return nil
}

func writeReplayRun(w io.Writer, rep replay.RunReport, kept bool) {
	fmt.Fprintf(w, "replay of %s: %s (recorded %s), %d of %d recorded turns, %d tool results, %d same, %d differences\n",
		rep.SessionID, rep.ReplayStatus, rep.LogStatus, rep.Turns, rep.RecordedTurns, rep.ToolResults, rep.Same, len(rep.Differences))
	for _, d := range rep.Differences {
		switch d.Code {
		case replay.CodeMCPToolsChanged:
			fmt.Fprintf(w, "  [%s] mcp server %s: log has %s, the server now lists %s\n", d.Code, d.Tool, d.Log, d.Replay)
		case replay.CodeStatusDiffers:
			if d.Session != "" {
				fmt.Fprintf(w, "  [%s] subagent %s: log has %s, replay produced %s\n", d.Code, d.Session, d.Log, d.Replay)
				continue
			}
			fmt.Fprintf(w, "  [%s] log has %s, replay produced %s\n", d.Code, d.Log, d.Replay)
		default:
			where := fmt.Sprintf("call %s (%s", d.CallID, d.Tool)
			if d.Session != "" {
				where = fmt.Sprintf("subagent %s turn %d: %s", d.Session, d.Turn, where)
			}
			if d.Seq > 0 {
				where += fmt.Sprintf(", seq %d", d.Seq)
			}
			field := ""
			if d.Field != "" {
				field = " field " + d.Field
			}
			fmt.Fprintf(w, "  [%s] %s)%s: log has %q, replay produced %q\n", d.Code, where, field, excerpt(d.Log, 60), excerpt(d.Replay, 60))
			if d.ChildSessionID != "" {
				fmt.Fprintf(w, "    its result came from the replay of subagent %s, whose turn %d answered\n", d.ChildSessionID, d.ChildTurn)
			}
		}
	}
	for _, c := range rep.Subagents {
		fmt.Fprintf(w, "  subagent %s (of %s): %s (recorded %s), %d of %d recorded turns, %d tool results, %d same\n",
			c.SessionID, c.ParentSessionID, c.ReplayStatus, c.LogStatus, c.Turns, c.RecordedTurns, c.ToolResults, c.Same)
	}
	if rep.Stopped {
		fmt.Fprintln(w, "  stopped at the first difference (--strict)")
	}
	if rep.Reason != "" {
		fmt.Fprintf(w, "  %s\n", rep.Reason)
	}
	if kept {
		fmt.Fprintf(w, "  replay session: %s\n", rep.ReplaySessionID)
	}
}

type replayForkOptions struct {
	Session string
	From    int64
	Model   string
	Script  string
	Spec    string
	Prompt  string
	ForkID  string
	JSON    bool
	Quiet   bool
	// RerunBash lets the workspace rebuild run recorded bash calls again.
	RerunBash bool
}

func newReplayForkCmd(f *Factory, runF func(context.Context, *replayForkOptions) error) *cobra.Command {
	opts := &replayForkOptions{}
	cmd := &cobra.Command{
		Use:   "fork SESSION --from SEQ [--model PROVIDER/ID] [--prompt TEXT]",
		Short: "Start a new session from a session's first SEQ events and continue it live",
		Long: `Copy the session's events up to --from SEQ into a new session (its header
names parent_session_id and forked_from), rebuild its workspace as it was at
SEQ (a fresh copy of workspace.from with the recorded workspace edits
re-applied; custom tools, which may act on the world, are never repeated),
and continue it live against the pinned model, or the one --model names
(recorded as a model_changed event: a model change is never silent).
--prompt adds a user message first. For --model scripted/ID, --script
names the scripted model's turns.

The effects of bash calls are not in the log: a fork past one is refused,
with every such call listed, unless --rerun-bash runs them again in the
sandbox, in order (the fork's log says so). A call cancelled mid-run or
in flight at a crash cannot be reconstructed at all: fork from before it.

A session of an external agent (spec agent:) cannot be copied into the
program's memory: its fork runs the agent again in a fresh workspace from
the spec, the proxy answering its model calls up to SEQ with the recorded
bytes and the rest live, on --model (a scripted one from the first turn of
--script), recorded as a model_changed at the first live call. A replayed
call the agent makes differently this time gets an error naming the turn.
The pinned model and the spec's budget hold for the live calls; --prompt
and --rerun-bash do not apply.

Exit status: as 'agentctl run' (0 done, 3 awaiting approval, 4 budget,
6 evaluation failed, 130 interrupted, 1 error).`,
		Example: `  agentctl replay fork 3f2a --from 12 --model anthropic/claude-sonnet-4-5
  agentctl replay fork 3f2a --from 6 --model scripted/alt --script alt.yaml
  agentctl replay fork 3f2a --from 20 --prompt "Also update the changelog"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if opts.From <= 0 {
				return usageError{fmt.Errorf("replay fork: --from SEQ is required")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return replayForkRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().Int64Var(&opts.From, "from", 0, "keep the events up to and including `SEQ`")
	cmd.Flags().StringVar(&opts.Model, "model", "", "continue against `PROVIDER/ID` instead of the pinned model")
	cmd.Flags().StringVar(&opts.Script, "script", "", "turns of the scripted model (with --model scripted/ID)")
	cmd.Flags().StringVar(&opts.Spec, "spec", "", "spec `FILE` whose tools run (default: the file the session ran from; the log's copy is never run)")
	cmd.Flags().StringVar(&opts.Prompt, "prompt", "", "a user message to add before continuing")
	cmd.Flags().StringVar(&opts.ForkID, "session-id", "", "use this id for the new session (default: random)")
	cmd.Flags().BoolVar(&opts.RerunBash, "rerun-bash", false, "rebuild the workspace by running the recorded bash calls again in the sandbox (their effects are not in the log)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object with the outcome at the end")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "no live view on stderr")
	_ = cmd.Flags().MarkHidden("session-id")
	return cmd
}

func replayForkRun(ctx context.Context, f *Factory, opts *replayForkOptions) error {
	id, evs, err := loadSession(f, opts.Session)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return fmt.Errorf("replay fork %s: the log has no events", id)
	}
	// An imported session has no spec file: it forks with a minimal spec
	// whose tools say they cannot run here, unless --spec gives tools.
	sp, imported, err := replaySpec(f, "replay fork", id, evs, opts.Spec)
	if err != nil {
		return err
	}
	if sp.External() {
		if opts.Prompt != "" {
			return usageError{fmt.Errorf("replay fork %s: --prompt: the session ran an external agent, whose requests come from the program itself (its first message is the spec's prompt, which its replayed calls must match); edit the spec's prompt and use agentctl run instead", id)}
		}
		if opts.RerunBash {
			return usageError{fmt.Errorf("replay fork %s: --rerun-bash: the session ran an external agent, which runs its own tools again in the fork's fresh workspace; drop the flag", id)}
		}
	}
	live := *sp
	if err := forkModel(&live, opts); err != nil {
		return err
	}
	var view runner.Observer
	if !opts.Quiet && !opts.JSON {
		view = newLiveView(f.Err)
	}
	obs := withTelemetry(f, view)
	rep, err := replay.ForkSession(ctx, replay.ForkSessionConfig{Store: f.Store(), Recordings: f.Store(), SessionID: id, Events: evs,
		From: opts.From, Spec: sp, StandIn: imported, Model: &live.Model, Prompt: opts.Prompt, RerunBash: opts.RerunBash,
		ForkID: opts.ForkID, Observer: obs})
	flushTelemetry(f, obs)
	if rep.SessionID() == "" {
		return err
	}
	sealSession(f, rep.SessionID())
	if rep.External != nil {
		return writeExternalForkRun(f, *rep.External, rep.Model, err, opts.JSON)
	}
	fr := rep.Own
	if !opts.JSON {
		note := ""
		if fr.Rerun > 0 {
			note += fmt.Sprintf(", %d bash calls run again", fr.Rerun)
		}
		if fr.ModelChanged {
			note += ", model changed to " + session.ModelName(rep.Model.Provider, rep.Model.ID)
		}
		if fr.GitSHA != "" {
			note += ", workspace from the run branch at commit " + fr.GitSHA
		}
		fmt.Fprintf(f.Out, "forked %s at seq %d into %s (%d events copied, %d workspace edits re-applied, %d custom calls not repeated%s)\n",
			id, opts.From, fr.SessionID, fr.Copied, fr.Reapplied, fr.Skipped, note)
	}
	return reportRun(f, fr.Result, err, opts.JSON)
}

// replaySpec is the spec replay run and fork go on with
// (replay.ContinueSpec): for a session agentctl ran, the spec file (a
// changed one is warned about); for an imported one with no --spec, the
// minimal spec replay.ImportedSpec makes from its events (imported reports
// that case).
func replaySpec(f *Factory, cmd, id string, evs []session.Event, specFile string) (sp *spec.Spec, imported bool, err error) {
	sp, standIn, changes, err := replay.ContinueSpec(f.Home, evs, specFile)
	if err != nil {
		return nil, false, fmt.Errorf("%s %s: %w", cmd, id, err)
	}
	warnSpecChanges(f, cmd, id, sp, changes)
	return sp, standIn != "", nil
}

// standInWhat says where a session replayed without a spec came from.
func standInWhat(hdr session.Event) string {
	if from := session.ImportedFrom(hdr); from != "" {
		return "imported from " + from
	}
	return "recorded by agentctl proxy for a program it did not start"
}

// forkModel points sp at the model a fork goes on with: --model
// PROVIDER/ID (another provider starts from a bare model; another id of
// the same provider drops the spec's price, which is its own model's) and
// --script for a scripted one.
func forkModel(sp *spec.Spec, opts *replayForkOptions) error {
	if opts.Model != "" {
		p, m, ok := strings.Cut(opts.Model, "/")
		if !ok || p == "" || m == "" {
			return usageError{fmt.Errorf("replay fork: --model %q: want PROVIDER/ID, e.g. openai/gpt-4o-mini", opts.Model)}
		}
		if p != sp.Model.Provider {
			sp.Model = spec.Model{Provider: p, ID: m, MaxTokens: sp.Model.MaxTokens}
		} else {
			if m != sp.Model.ID {
				sp.Model.Price = nil
			}
			sp.Model.ID = m
		}
	}
	if opts.Script != "" {
		abs, err := filepath.Abs(opts.Script)
		if err != nil {
			return err
		}
		sp.Model.Script = abs
	}
	if sp.Model.Scripted() && sp.Model.Script == "" {
		return usageError{fmt.Errorf("replay fork: --model scripted/%s needs --script FILE", sp.Model.ID)}
	}
	return nil
}
