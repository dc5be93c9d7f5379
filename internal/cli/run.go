package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/fixtures"
	"github.com/agentctl/agentctl/internal/agent"
	"github.com/agentctl/agentctl/internal/crashtest"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

type runOptions struct {
	Unsandboxed bool
	Spec        string
	Prompt      string
	JSON        bool
	Quiet       bool
	SessionID   string
	Tags        []string
}

func newRunCmd(f *Factory, runF func(context.Context, *runOptions) error) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [SPEC.yaml]",
		Short: "Run an agent from a spec, recording every event",
		Long: `Run one agent through the harness loop: project the session log, call the
model, check permissions and approvals, run tools in the session's own
workspace, record, compact, and stop on done, budget or interruption.

Every event is durable in the session log before it is shown. The run
needs no API key with the scripted provider (see fixtures/agents/). With
no SPEC, the embedded default agent (fixtures/agents/fix-typo.yaml, a
scripted model) runs, so a fresh machine can try agentctl at once.
SIGINT or SIGTERM stops the run cleanly; 'agentctl resume' continues it.`,
		Example: `  agentctl run
  agentctl run fixtures/agents/fix-typo.yaml
  agentctl run fixtures/agents/fix-typo.yaml --json | jq .status
  agentctl run spec.yaml --prompt "Fix the failing test in pkg/db"
  agentctl run spec.yaml --tag env=ci --tag pr=1234`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Spec = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Prompt, "prompt", "", "first user message (overrides the spec's prompt)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object with the outcome at the end")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "no live view on stderr")
	cmd.Flags().BoolVar(&opts.Unsandboxed, "unsandboxed", false, "where this machine has no namespaces, run tools unconfined instead of refusing (same as sandbox.unconfined: true; recorded in the session's spec)")
	cmd.Flags().StringArrayVar(&opts.Tags, "tag", nil, "label the session KEY=VALUE (repeatable; over the spec's tags:; the sessions view's tags column, sessions --tag)")
	cmd.Flags().StringVar(&opts.SessionID, "session-id", "", "use this id for the new session (default: random)")
	_ = cmd.Flags().MarkHidden("session-id")
	return cmd
}

func runRun(ctx context.Context, f *Factory, opts *runOptions) error {
	tags, err := session.ParseTags(opts.Tags)
	if err != nil {
		return usageError{fmt.Errorf("--tag: %w", err)}
	}
	path := opts.Spec
	if path == "" {
		dir, err := fixtures.Extract(filepath.Join(f.Home, "default-agent"))
		if err != nil {
			return fmt.Errorf("extract the embedded default agent: %w", err)
		}
		path = filepath.Join(dir, fixtures.DefaultAgent)
	}
	sp, err := specFromArg(path)
	if err != nil {
		return err
	}
	if opts.Unsandboxed {
		sp.Sandbox.Unconfined = true
	}
	if err := session.ValidateTags(session.MergeTags(sp.Tags, tags)); err != nil {
		return usageError{fmt.Errorf("--tag with the spec's tags: %w", err)}
	}
	cfg, err := runConfig(f, sp, opts.Quiet || opts.JSON)
	if err != nil {
		return err
	}
	cfg.Prompt, cfg.SessionID, cfg.Tags = opts.Prompt, opts.SessionID, tags
	res, err := runner.Start(ctx, cfg)
	flushTelemetry(f, cfg.Observer)
	sealSession(f, res.SessionID)
	return reportRun(f, res, err, opts.JSON)
}

func runConfig(f *Factory, sp *spec.Spec, quiet bool) (runner.Config, error) {
	cfg, err := agent.Config(sp, f.Home)
	if err != nil {
		return runner.Config{}, err
	}
	cfg.Store, cfg.NoSync = f.Store(), os.Getenv(crashtest.NoSyncEnv) == "1"
	var view runner.Observer
	if !quiet {
		view = newLiveView(f.Err)
	}
	cfg.Observer = withTelemetry(f, view)
	return cfg, nil
}

// runOutput is the --json object of run and resume. Its fields only grow.
type runOutput struct {
	SessionID    string  `json:"session_id"`
	Status       string  `json:"status"`
	Reason       string  `json:"reason,omitempty"`
	Events       int64   `json:"events"`
	Turns        int     `json:"turns"`
	ToolCalls    int64   `json:"tool_calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Error        string  `json:"error,omitempty"`
	ExitCode     int     `json:"exit_code"`
	// External: an external agent's run (spec agent:); it is not resumed.
	External bool `json:"external,omitempty"`
}

// reportRun prints the outcome and turns it into the exit code.
func reportRun(f *Factory, res runner.Result, err error, asJSON bool) error {
	err = diskFull(err, res.SessionID)
	if err != nil && res.SessionID == "" {
		return err
	}
	if res.Status == session.StatusRunning && (err != nil || res.Err != nil) {
		// It stopped without recording its end (the log could not be
		// written): no process runs it now, and the sessions view says
		// crashed, as resume will take it.
		res.Status = session.StatusCrashed
	}
	code := exitCodeForRun(res.Status, res.Reason)
	if err != nil || res.Err != nil {
		code = ExitError
	}
	if wm := (*runner.WorkspaceMismatchError)(nil); errors.As(err, &wm) {
		code = ExitNeedsHuman // a human decides: --on-mismatch=reset or accept
	}
	out := runOutput{SessionID: res.SessionID, Status: string(res.Status), Reason: res.Reason, Events: res.Events,
		Turns: res.Turns, ToolCalls: res.ToolCalls, InputTokens: res.InputTokens, OutputTokens: res.OutputTokens,
		CostUSD: res.CostUSD, ExitCode: code, External: res.External}
	if err != nil {
		out.Error = err.Error()
	} else if res.Err != nil {
		out.Error = res.Err.Error()
	}
	if asJSON {
		if e := json.NewEncoder(f.Out).Encode(out); e != nil {
			return e
		}
		return withCode(code, nil)
	}
	writeRunSummary(f.Out, out)
	if out.Error != "" {
		return withCode(code, fmt.Errorf("session %s: %s", res.SessionID, out.Error))
	}
	return withCode(code, nil)
}

// diskFull says what a full disk did to a run, when err is one: the write
// that failed was cut off, so every event recorded before it is intact.
func diskFull(err error, id string) error {
	if !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	if id == "" {
		return fmt.Errorf("the disk is full, so no session was started (nothing of it is left behind): %w; free space and run it again", err)
	}
	return fmt.Errorf("the disk is full: %w; nothing recorded was lost (the log keeps every event before the write that failed); free space, then 'agentctl resume %s'", err, id)
}

func writeRunSummary(w io.Writer, o runOutput) {
	fmt.Fprintf(w, "session %s %s: %d turns, %d tool calls, %d tokens, $%.4f\n",
		o.SessionID, o.Status, o.Turns, o.ToolCalls, o.InputTokens+o.OutputTokens, o.CostUSD)
	if o.Reason != "" {
		fmt.Fprintf(w, "  %s\n", o.Reason)
	}
	switch st := session.Status(o.Status); {
	case o.External && (st == session.StatusInterrupted || st == session.StatusBudgetExceeded):
		// The program keeps its own state: there is nothing to resume.
		fmt.Fprintf(w, "  next: run the spec again (an external agent is not resumed), or re-run this one offline: agentctl replay run %s\n", o.SessionID)
	case st == session.StatusAwaitingApproval:
		fmt.Fprintf(w, "  next: agentctl approve %s (or deny), then agentctl resume %s\n", o.SessionID, o.SessionID)
	case st == session.StatusInterrupted:
		fmt.Fprintf(w, "  next: agentctl resume %s\n", o.SessionID)
	case st == session.StatusBudgetExceeded:
		// Resuming as is would stop on the same limit: name the one to raise.
		fmt.Fprintf(w, "  next: agentctl resume %s --budget %s=VALUE (raise the limit that stopped it; 0 lifts it)\n", o.SessionID, budgetKey(o.Reason))
	}
	fmt.Fprintf(w, "  timeline: agentctl show %s\n", o.SessionID)
}

// budgetKey is the budget key a budget_exceeded reason starts with
// ("max_wall 2s: …"), or KEY.
func budgetKey(reason string) string {
	if k, _, _ := strings.Cut(reason, " "); session.IsBudgetKey(k) {
		return k
	}
	return "KEY"
}

// exitCodeForRun separates a failed evaluation (checks failed) from other
// failures (errors).
func exitCodeForRun(s session.Status, reason string) int {
	if s == session.StatusFailed && !strings.HasPrefix(reason, runner.ReasonEvaluationFailed) {
		return ExitError
	}
	return ExitCodeFor(s)
}

type resumeOptions struct {
	Session          string
	JSON             bool
	Quiet            bool
	Model            string
	AllowModelChange bool
	Spec             string
	Workspace        string
	AllowSpecChange  bool
	Unsandboxed      bool
	Budget           []string
	OnMismatch       string
}

func newResumeCmd(f *Factory, runF func(context.Context, *resumeOptions) error) *cobra.Command {
	opts := &resumeOptions{}
	cmd := &cobra.Command{
		Use:   "resume SESSION",
		Short: "Continue a stopped session (approval decided, interrupted, crashed)",
		Long: `Continue a session that stopped before it was done: after 'approve' or
'deny', after an interruption, after a budget stop or a provider error, or
after a crash. Resume takes the session's lease (a live writer is refused),
cuts a torn log tail, folds the log, settles tool calls that were in flight,
then goes on with the pinned model recorded in the header.

Tools, commands and the workspace come from the spec file the session ran
from (or --spec), never from the copy inside the log: a log is not signed.
A spec file that differs from the recorded one is refused unless
--allow-spec-change says the change is wanted (it is recorded). The
workspace is the session's own folder, or the one the spec names.

The budget in force is the one the session recorded, with every earlier
--budget laid over it; a session its budget stopped goes on only once
--budget raises the limit that stopped it (the change is recorded as a
budget_changed event, and stays in force on later resumes).`,
		Example: "  agentctl resume 3f2a\n  agentctl resume 3f2a --budget max_wall=10m --budget max_cost_usd=0.50\n  agentctl resume 3f2a --spec agents/fix.yaml --allow-spec-change",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return resumeRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object with the outcome at the end")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "no live view on stderr")
	cmd.Flags().StringVar(&opts.Model, "model", "", "continue with `PROVIDER/ID` instead of the pinned model (needs --allow-model-change)")
	cmd.Flags().BoolVar(&opts.AllowModelChange, "allow-model-change", false, "allow --model to differ from the pinned model; the change is recorded")
	cmd.Flags().StringVar(&opts.Spec, "spec", "", "spec `FILE` to go on with (default: the file the session ran from)")
	cmd.Flags().BoolVar(&opts.AllowSpecChange, "allow-spec-change", false, "go on although the spec file differs from the recorded spec; the change is recorded")
	cmd.Flags().StringVar(&opts.Workspace, "workspace", "", "the session's workspace `DIR`, when it is not the session's own folder or the spec's workspace.path")
	cmd.Flags().BoolVar(&opts.Unsandboxed, "unsandboxed", false, "as for run: where this machine has no namespaces, run tools unconfined")
	cmd.Flags().StringVar(&opts.OnMismatch, "on-mismatch", "", "when the workspace differs from the session's recorded git state: `reset` puts it back at the recorded commit, accept records the changes as a commit; either is recorded (an error event, reason workspace_mismatch). Without it such a resume stops with exit 5 and lists the paths")
	cmd.Flags().StringArrayVar(&opts.Budget, "budget", nil, "raise (or set) one budget limit, `KEY=VALUE`: max_tokens, max_tool_calls, max_cost_usd or max_wall (e.g. max_wall=10m; 0 lifts it); repeatable; recorded as budget_changed")
	return cmd
}

func resumeRun(ctx context.Context, f *Factory, opts *resumeOptions) error {
	st := f.Store()
	id, err := st.Resolve(opts.Session)
	if err != nil {
		return err
	}
	evs, _, err := st.Load(id)
	if errors.Is(err, recorder.ErrNotStarted) {
		// Nothing to go on with, and nothing lost: the folder goes too.
		if removed, rerr := st.RemoveNotStarted(id); rerr != nil {
			return fmt.Errorf("resume %s: %w (%v)", id, err, rerr)
		} else if removed {
			return fmt.Errorf("resume %s: %w; its empty folder is removed: run the spec again (agentctl run SPEC)", id, err)
		}
	}
	if err != nil {
		return err
	}
	if len(evs) == 0 || evs[0].Kind != session.KindSessionStarted {
		return fmt.Errorf("resume %s: the log has no session header", id)
	}
	if from := session.ImportedFrom(evs[0]); from != "" && session.Fold(evs).Status() == session.StatusImported {
		return fmt.Errorf("resume %s: the session was imported from %s: it ran there, and holds no run of agentctl's to go on with (no spec, no end of ours); continue it with 'agentctl replay fork %s --from SEQ' instead", id, from, id)
	}
	sp, changes, err := sessionSpec(f, evs[0], opts.Spec, opts.Workspace, opts.Unsandboxed)
	if err != nil {
		return fmt.Errorf("resume %s: %w", id, err)
	}
	if len(changes) > 0 && !opts.AllowSpecChange {
		hint := "check the change, then pass --allow-spec-change to go on with it (it is recorded), or restore the file"
		if slices.Equal(changes, []string{"sandbox"}) {
			hint += "; if the run used --unsandboxed, pass it to resume too"
		}
		return fmt.Errorf("resume %s: the spec %s differs from the one the session recorded (changed: %s); %s",
			id, sp.Path, strings.Join(changes, ", "), hint)
	}
	// The session's current model: the header's, or the latest change.
	fold := session.Fold(evs)
	fileModel := sp.Model.ID
	sp.Model.Provider, sp.Model.ID = fold.Provider, fold.Model
	if opts.Model != "" {
		prov, model, ok := strings.Cut(opts.Model, "/")
		if !ok || prov == "" || model == "" {
			return usageError{fmt.Errorf("--model %q: use PROVIDER/ID, e.g. openai/gpt-4o-mini", opts.Model)}
		}
		sp.Model.Provider, sp.Model.ID = prov, model
	}
	if sp.Model.ID != fileModel {
		sp.Model.Price = nil // the spec's price is its own model's, not this one's
	}
	cfg, err := runConfig(f, sp, opts.Quiet || opts.JSON)
	if err != nil {
		return fmt.Errorf("resume %s: %w", id, err)
	}
	cfg.Resume.AllowModelChange, cfg.Resume.SpecChanges = opts.AllowModelChange, changes
	var check session.Budget
	for _, b := range opts.Budget {
		if err := check.Set(b); err != nil {
			return usageError{fmt.Errorf("resume %s: --budget: %w", id, err)}
		}
	}
	cfg.Resume.Budget = opts.Budget
	switch opts.OnMismatch {
	case "", runner.WorkspaceAccept, runner.WorkspaceReset:
		cfg.Resume.WorkspaceChoice = opts.OnMismatch
	default:
		return usageError{fmt.Errorf("resume %s: --on-mismatch %q: use reset or accept", id, opts.OnMismatch)}
	}
	resumeTelemetry(cfg.Observer, id, evs)
	res, err := runner.Resume(ctx, cfg, id)
	flushTelemetry(f, cfg.Observer)
	sealSession(f, res.SessionID) // none when it was refused before it opened the log
	return reportRun(f, res, err, opts.JSON)
}
