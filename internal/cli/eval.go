package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/internal/evals"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/termsafe"
	"github.com/agentctl/agentctl/internal/vfs"
)

type evalOptions struct {
	Suite    string
	JUnit    string
	JSON     bool
	JSONOut  string
	Parallel int
	Shard    string
	Filter   string
	Quiet    bool
	// Repeat overrides every scenario's repeat when positive.
	Repeat int
	// Baseline is --baseline: a report file or history:BRANCH.
	Baseline string
	Gate     gateOptions
	History  evalHistoryOptions
}

const evalExitHelp = `Exit status: 0 every scenario that ran met its threshold (and, with a
baseline, none regressed or is missing), 9 regressed against the
baseline (a scenario regressed, or one is missing without
--allow-missing), 6 some scenario missed its threshold (and nothing
regressed), 10 nothing ran: every scenario was not run here (or, with
--require-all, some was), 1 an error (the suite does not load, a report
cannot be written), 130 interrupted.

A scenario that cannot run on this machine is NOT RUN, never failed or
regressed: the API key of a model it calls live is not set (a fork's pull
request gets no secrets), or a variable or command its requires: names is
missing. It is listed with why in the summary, the JSON report
(not_run_reason) and the JUnit (<skipped>), and against a baseline its
verdict is not_run.`

func newEvalCmd(f *Factory, runF func(context.Context, *evalOptions) error) *cobra.Command {
	opts := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval SUITE.yaml",
		Short: "Run an eval suite: scenarios, repeats, assertions; JUnit and JSON for CI",
		Long: `Run the scenarios of an eval suite (agent specs, or recorded sessions
replayed offline), each 'repeat' times, and check their assertions: status,
tools called / not called / at most N times, loops, duplicate side effects,
budget, files and commands in the final workspace, SQL over the run's
events, crash safety, anchoring across compactions, and a reviewer model.
The suite format is in the package doc of evals (go doc ./internal/evals) and the
README; fixtures/suites/ has examples.

Every run is recorded in the home like any 'agentctl run', so show, query,
replay and bundle work on it. The summary goes to stdout; progress goes to
stderr (a bar on a terminal, one line per run otherwise). --junit writes
JUnit XML (one testcase per scenario x repeat), --json-out the report that
'agentctl eval merge' joins (--json prints it on stdout instead). --shard I/N runs scenarios i with i mod N =
I-1, so N CI jobs split the suite. --repeat N runs every scenario N times
(thresholds stay shares); a report gives pass@k and pass^k for each
scenario of two or more runs.

--baseline REPORT.json (a previous --json-out, or a merged one) or
--baseline history:BRANCH (the newest complete report of that branch in
the history) compares this run with it, scenario by scenario: pass rates,
mean cost, tokens, turns, wall time and tool calls, and a verdict:
regressed, improved, unchanged, new, missing. Repeat-1 scenarios compare
outcomes; repeated ones are judged by a one-sided Fisher exact test at
--alpha, so noise does not fail the build (4/5 against 5/5 is not a
regression, 0/5 against 5/5 is). A mean cost, tokens or wall time above
the baseline's by more than --tolerance regresses too. A scenario the
baseline has and this run should have had is missing, and fails the gate
unless --allow-missing. 'agentctl eval compare A.json B.json' does the
same with two reports. --summary FILE writes the Markdown summary (the
table, replay lines of regressed runs, the cost delta); in GitHub Actions
it is appended to $GITHUB_STEP_SUMMARY unless --summary says otherwise.

` + evalExitHelp,
		Example: `  agentctl eval fixtures/suites/smoke.yaml
  agentctl eval suite.yaml --junit report.xml --json-out report.json --parallel 4
  agentctl eval suite.yaml --shard 2/3 --json-out shard-2.json
  agentctl eval suite.yaml --json | jq .ok
  agentctl eval suite.yaml --filter '^fix-'
  agentctl eval validate suite.yaml
  agentctl eval merge shard-*.json --junit report.xml
  agentctl eval suite.yaml --baseline main-report.json --summary summary.md
  agentctl eval suite.yaml --baseline history:main --repeat 5 --alpha 0.05 --tolerance cost=10%,tokens=10%,wall=50%
  agentctl eval compare main.json pr.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 && opts.JSON {
				return oldJSONSpelling(args[1])
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Suite = args[0]
			if opts.Parallel < 1 {
				return usageError{fmt.Errorf("eval: --parallel must be at least 1")}
			}
			if opts.Repeat < 0 || (cmd.Flags().Changed("repeat") && opts.Repeat == 0) {
				return usageError{fmt.Errorf("eval: --repeat must be at least 1")}
			}
			opts.Gate.resolveSummary(cmd, os.Getenv)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return evalRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.JUnit, "junit", "", "write JUnit XML to `FILE` (- for stdout)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the JSON report on stdout (instead of the summary)")
	cmd.Flags().StringVar(&opts.JSONOut, "json-out", "", "write the JSON report to `FILE`, for 'agentctl eval merge'")
	cmd.Flags().IntVar(&opts.Parallel, "parallel", 1, "run `N` scenario runs at once")
	cmd.Flags().StringVar(&opts.Shard, "shard", "", "run only shard `I/N` of the suite")
	cmd.Flags().StringVar(&opts.Filter, "filter", "", "run only scenarios whose name matches `RE`")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress on stderr")
	cmd.Flags().IntVar(&opts.Repeat, "repeat", 0, "run every scenario `N` times, overriding the suite's repeats")
	cmd.Flags().StringVar(&opts.Baseline, "baseline", "", "compare with `REPORT.json` (a --json-out) or history:BRANCH, and gate on regressions")
	addGateFlags(cmd, &opts.Gate)
	addEvalHistoryFlags(cmd, &opts.History)
	cmd.AddCommand(newEvalValidateCmd(f, nil), newEvalMergeCmd(f, nil), newEvalCompareCmd(f, nil), newEvalAddCmd(f, nil))
	return cmd
}

func evalRun(ctx context.Context, f *Factory, opts *evalOptions) error {
	jsonPath, err := jsonTarget(opts.JSON, opts.JSONOut)
	if err != nil {
		return err
	}
	if err := opts.Gate.stdoutOnce(jsonPath, opts.JUnit); err != nil {
		return err
	}
	cfg := evals.Config{Store: f.Store(), Parallel: opts.Parallel, Warn: f.Err, Repeat: opts.Repeat}
	copts, err := opts.Gate.compareOptions()
	if err != nil {
		return err
	}
	// The baseline is read before anything runs: a wrong path or branch
	// should cost seconds, not the suite's run.
	s, err := evals.Load(opts.Suite)
	if err != nil {
		return err
	}
	var base *evals.Report
	if opts.Baseline != "" {
		if base, err = loadBaseline(ctx, f, opts.Baseline, s.Name); err != nil {
			return err
		}
	}
	if opts.Shard != "" {
		sh, err := evals.ParseShard(opts.Shard)
		if err != nil {
			return usageError{err}
		}
		cfg.Shard = sh
	}
	if opts.Filter != "" {
		re, err := regexp.Compile(opts.Filter)
		if err != nil {
			return usageError{fmt.Errorf("--filter %q: %w", opts.Filter, err)}
		}
		cfg.Filter = re
	}
	cfg.Observer = func() runner.Observer { return withTelemetry(f, nil) }
	cfg.AfterRun = func(id string, obs runner.Observer) {
		flushTelemetry(f, obs)
		sealSession(f, id)
	}
	if exe, err := selfExe(); err == nil {
		cfg.Exe = exe
	}
	sel := evals.Select(s, cfg.Shard, cfg.Filter)
	total := 0
	for _, i := range sel {
		total += cfg.Runs(&s.Scenarios[i])
	}
	if len(sel) == 0 {
		fmt.Fprintf(f.Err, "eval: no scenario of %s is in shard %s matching --filter %q\n", s.Name, cfg.Shard, opts.Filter)
	}
	done := evalProgress(f, opts, total, &cfg)
	rep, err := evals.Run(ctx, s, cfg)
	done()
	if err != nil {
		return err
	}
	opts.History.stamp(rep)
	if base != nil {
		if rep.Comparison, err = evals.Compare(base, rep, copts); err != nil {
			return fmt.Errorf("eval --baseline %s: %w", opts.Baseline, err)
		}
	}
	if err := writeEvalOutputs(f, rep, rep.Comparison, opts.JUnit, jsonPath, rep); err != nil {
		return err
	}
	if ctx.Err() == nil {
		sealEvalReport(f, rep, &opts.History)
	}
	if err := writeMarkdownSummary(f, opts.Gate, rep, rep.Comparison); err != nil {
		return err
	}
	if jsonPath != "-" && opts.JUnit != "-" && opts.Gate.Summary != "-" {
		writeEvalSummary(termsafe.Writer(f.Out), rep)
		if rep.Comparison != nil {
			writeComparison(termsafe.Writer(f.Out), rep.Comparison) // the baseline may come from anywhere
		}
	}
	if ctx.Err() != nil {
		return withCode(ExitInterrupted, fmt.Errorf("eval interrupted; the runs that stopped are resumable"))
	}
	return opts.Gate.exit(rep, rep.Comparison)
}

// evalProgress sets cfg.Progress: a bar on a terminal, one line per run in
// CI logs, nothing with --quiet. It returns a function that ends the bar.
func evalProgress(f *Factory, opts *evalOptions, total int, cfg *evals.Config) func() {
	if opts.Quiet || total == 0 {
		return func() {}
	}
	if file, ok := f.Err.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
		bar := progressbar.NewOptions(total, progressbar.OptionSetWriter(f.Err), progressbar.OptionSetDescription("eval"),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionSetPredictTime(true))
		cfg.Progress = func(p evals.Progress) {
			bar.Describe(fmt.Sprintf("eval %s", termsafe.Line(excerpt(p.Scenario, 30))))
			_ = bar.Set(p.Done)
		}
		return func() { _ = bar.Finish() }
	}
	cfg.Progress = func(p evals.Progress) {
		r := p.Run
		line := fmt.Sprintf("eval: [%d/%d] %s #%d %s", p.Done, p.Total, p.Scenario, r.Repeat, evalWord(r.OK))
		if r.SessionID != "" {
			line += fmt.Sprintf(" (session %s, %s, %.1fs)", r.SessionID, r.Status, float64(r.Millis)/1000)
		}
		if !r.OK {
			if fs := r.Failures(); len(fs) > 0 {
				line += ": " + fs[0].Assertion
			}
		}
		fmt.Fprintln(f.Err, termsafe.Line(line))
	}
	return func() {}
}

func evalWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

// writeEvalOutputs writes the JUnit of rep (with its comparison, if any)
// and the JSON document doc (the report, or a comparison) where asked.
func writeEvalOutputs(f *Factory, rep *evals.Report, cmp *evals.Comparison, junit, jsonPath string, doc any) error {
	write := func(path string, fn func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		if path == "-" {
			return fn(f.Out)
		}
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		out, err := vfs.CreateOutput(vfs.OS, path, 0o666, false)
		if err != nil {
			return err
		}
		defer out.Abort()
		if err := fn(out); err != nil {
			return err
		}
		return out.Commit()
	}
	if err := write(junit, func(w io.Writer) error { return evals.WriteJUnit(w, rep, cmp) }); err != nil {
		return fmt.Errorf("write --junit %s: %w", junit, err)
	}
	err := write(jsonPath, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	})
	if err != nil {
		return fmt.Errorf("write --json %s: %w", jsonPath, err)
	}
	return nil
}

// writeEvalSummary prints one line per scenario and, for each failed run
// of a failed scenario, the failed assertions and how to replay it.
func writeEvalSummary(w io.Writer, rep *evals.Report) {
	shard := ""
	if len(rep.Shards) > 0 {
		var p []string
		for _, s := range rep.Shards {
			p = append(p, s.String())
		}
		shard = " shard " + strings.Join(p, ",")
	}
	fmt.Fprintf(w, "eval %s%s: %d scenarios, %d runs\n", termsafe.Line(rep.Suite), shard, len(rep.Scenarios), rep.Runs)
	width := 0
	for _, sc := range rep.Scenarios {
		width = max(width, len(termsafe.Line(sc.Name)))
	}
	for _, sc := range rep.Scenarios {
		if sc.NotRunReason != "" {
			fmt.Fprintf(w, "NOT RUN %s: %s\n", termsafe.Line(sc.Name), termsafe.Line(sc.NotRunReason))
			continue
		}
		fmt.Fprintf(w, "%-6s %-*s %d/%d runs passed (need %d)\n", evalWord(sc.OK), width, termsafe.Line(sc.Name), sc.Passed, sc.Repeat, sc.Need)
		for _, r := range sc.Runs {
			if r.OK {
				continue
			}
			tol := ""
			if sc.OK {
				tol = " (tolerated by the threshold)"
			}
			fmt.Fprintf(w, "  #%d session %s, status %s%s\n", r.Repeat, termsafe.Line(orDash(r.SessionID)), termsafe.Line(orDash(r.Status)), tol)
			for _, x := range r.Failures() {
				fmt.Fprintf(w, "    FAILED %s: %s\n", termsafe.Line(x.Assertion), termsafe.Line(x.Message))
			}
			if r.SessionID != "" && !sc.OK {
				for _, h := range strings.Split(evals.Hints(rep.Home, r.SessionID), "\n") {
					fmt.Fprintf(w, "    %s\n", h)
				}
			}
		}
	}
	notRun := ""
	if rep.NotRun > 0 {
		notRun = fmt.Sprintf(", %d not run", rep.NotRun)
	}
	fmt.Fprintf(w, "eval %s: %d passed, %d failed%s (%d of %d runs ok) in %.1fs\n", termsafe.Line(rep.Suite), rep.Passed, rep.Failed, notRun, rep.RunsOK, rep.Runs,
		float64(rep.Millis)/1000)
}

type evalValidateOptions struct {
	Suites []string
}

func newEvalValidateCmd(f *Factory, runF func(context.Context, *evalValidateOptions) error) *cobra.Command {
	opts := &evalValidateOptions{}
	return &cobra.Command{
		Use:   "validate SUITE.yaml...",
		Short: "Parse suites and report every problem; run nothing",
		Long: `Load each suite the way 'agentctl eval' does (strict YAML, every
assertion checked, every agent spec and scripted model loaded) and report
every problem with file:line. Nothing runs and nothing is recorded.

Exit status: 0 every suite is valid, 1 otherwise.`,
		Example: "  agentctl eval validate fixtures/suites/*.yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Suites = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return evalValidateRun(f, opts)
		},
	}
}

func evalValidateRun(f *Factory, opts *evalValidateOptions) error {
	bad := 0
	for _, p := range opts.Suites {
		s, err := evals.Load(p)
		if err != nil {
			bad++
			fmt.Fprintf(f.Err, "%v\n", err)
			continue
		}
		runs, asserts := 0, 0
		for _, sc := range s.Scenarios {
			runs += sc.Repeat
			asserts += len(sc.Assert)
		}
		fmt.Fprintf(f.Out, "%s: ok: suite %s, %d scenarios, %d runs, %d assertions\n", p, s.Name, len(s.Scenarios), runs, asserts)
	}
	if bad > 0 {
		return withCode(ExitError, fmt.Errorf("eval validate: %d of %d suites have problems", bad, len(opts.Suites)))
	}
	return nil
}

type evalMergeOptions struct {
	Reports []string
	JUnit   string
	JSON    bool
	JSONOut string
	Partial bool
	// Baseline is --baseline, as for eval: the merged report is gated
	// as the whole suite's run would be.
	Baseline string
	Gate     gateOptions
	History  evalHistoryOptions
}

// oldJSONSpelling is the error for `--json FILE`, which used to name the
// report file: --json now means what it means everywhere (the report on
// stdout), and the file is --json-out.
func oldJSONSpelling(file string) error {
	return usageError{fmt.Errorf("--json no longer takes a file: it prints the report on stdout; write it to %s with --json-out %s", file, file)}
}

// jsonTarget is where the JSON report goes: "-" for --json, the file of
// --json-out, or "" for none.
func jsonTarget(asJSON bool, out string) (string, error) {
	if asJSON && out != "" {
		return "", usageError{fmt.Errorf("--json prints the report on stdout and --json-out writes it to a file; give one")}
	}
	if asJSON {
		return "-", nil
	}
	return out, nil
}

func newEvalMergeCmd(f *Factory, runF func(context.Context, *evalMergeOptions) error) *cobra.Command {
	opts := &evalMergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge REPORT.json...",
		Short: "Join the --json reports of a suite's shards into one",
		Long: `Join the --json reports that 'agentctl eval --shard I/N' wrote in
separate CI jobs. The reports must come from the same suite file (same
sha256), the same N and the same --filter, and be disjoint; every shard
must be there unless --partial. Prints the summary; --junit and
--json-out write the joined report (--json prints it on stdout).

--baseline, the gate flags and --summary are eval's: the joined report is
compared with the baseline, and the verdicts, the summary and the exit
status are those 'agentctl eval --baseline' gives the whole suite, so a
sharded suite gates a pull request like a single job.

` + evalExitHelp,
		Example: `  agentctl eval merge shard-1.json shard-2.json shard-3.json --junit report.xml --json-out report.json
  agentctl eval merge shard-*.json --baseline history:main --summary summary.md`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Reports = args
			opts.Gate.resolveSummary(cmd, os.Getenv)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return evalMergeRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.JUnit, "junit", "", "write JUnit XML to `FILE` (- for stdout)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the joined JSON report on stdout (instead of the summary)")
	cmd.Flags().StringVar(&opts.JSONOut, "json-out", "", "write the joined JSON report to `FILE`")
	cmd.Flags().BoolVar(&opts.Partial, "partial", false, "merge even if some shards are missing")
	cmd.Flags().StringVar(&opts.Baseline, "baseline", "", "compare the joined report with `REPORT.json` (a --json-out) or history:BRANCH, and gate on regressions")
	addGateFlags(cmd, &opts.Gate)
	addEvalHistoryFlags(cmd, &opts.History)
	return cmd
}

func evalMergeRun(ctx context.Context, f *Factory, opts *evalMergeOptions) error {
	jsonPath, err := jsonTarget(opts.JSON, opts.JSONOut)
	if err != nil {
		return err
	}
	if err := opts.Gate.stdoutOnce(jsonPath, opts.JUnit); err != nil {
		return err
	}
	copts, err := opts.Gate.compareOptions()
	if err != nil {
		return err
	}
	var reps []*evals.Report
	for i, p := range opts.Reports {
		r, err := evals.ReadReport(p)
		if err != nil {
			if _, serr := os.Stat(p); opts.JSON && i == len(opts.Reports)-1 && errors.Is(serr, os.ErrNotExist) {
				return oldJSONSpelling(p) // `--json report.json` as it used to be written
			}
			return err
		}
		reps = append(reps, r)
	}
	rep, err := evals.Merge(reps, opts.Partial)
	if err != nil {
		return fmt.Errorf("eval merge: %w", err)
	}
	opts.History.stamp(rep)
	if opts.Baseline != "" {
		base, err := loadBaseline(ctx, f, opts.Baseline, rep.Suite)
		if err != nil {
			return err
		}
		if rep.Comparison, err = evals.Compare(base, rep, copts); err != nil {
			return fmt.Errorf("eval merge --baseline %s: %w", opts.Baseline, err)
		}
	}
	if err := writeEvalOutputs(f, rep, rep.Comparison, opts.JUnit, jsonPath, rep); err != nil {
		return err
	}
	sealEvalReport(f, rep, &opts.History)
	if err := writeMarkdownSummary(f, opts.Gate, rep, rep.Comparison); err != nil {
		return err
	}
	if jsonPath != "-" && opts.JUnit != "-" && opts.Gate.Summary != "-" {
		// The shards' reports come from CI artifacts: their text
		// reaches the terminal without its escapes.
		writeEvalSummary(termsafe.Writer(f.Out), rep)
		if rep.Comparison != nil {
			writeComparison(termsafe.Writer(f.Out), rep.Comparison)
		}
	}
	return opts.Gate.exit(rep, rep.Comparison)
}
