package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/evals"
	"github.com/agentctl/agentctl/internal/termsafe"
	"github.com/agentctl/agentctl/internal/vfs"
)

// gateOptions are the flags `eval --baseline` and `eval compare` share.
type gateOptions struct {
	Alpha        float64
	Tolerance    string
	AllowMissing bool
	// Summary is where the Markdown summary goes: a file, "-" for
	// stdout, "" for nowhere. SummaryAppend: append to it (GitHub's
	// $GITHUB_STEP_SUMMARY, which every step of a job adds to).
	Summary       string
	SummaryAppend bool
	// RequireAll: a scenario not run here fails the command (exit 10),
	// for the jobs that must have every secret (main, not a fork's PR).
	RequireAll bool
}

// githubSummaryEnv is the file GitHub Actions shows on the run's page.
const githubSummaryEnv = "GITHUB_STEP_SUMMARY"

func addGateFlags(cmd *cobra.Command, g *gateOptions) {
	fl := cmd.Flags()
	fl.Float64Var(&g.Alpha, "alpha", evals.DefaultAlpha, "significance level of the Fisher test that judges repeated scenarios")
	fl.StringVar(&g.Tolerance, "tolerance", evals.DefaultTolerance().String(),
		"how far each mean may rise before it regresses: a comma-separated `LIST` of METRIC=N% or METRIC=off (cost, tokens, turns, wall, tool_calls)")
	fl.BoolVar(&g.AllowMissing, "allow-missing", false, "a scenario of the baseline that did not run is listed, and does not fail the gate")
	fl.BoolVar(&g.RequireAll, "require-all", false, "exit 10 when any scenario was not run here (a missing API key or required command), not only when none ran")
	fl.StringVar(&g.Summary, "summary", "", "write the Markdown summary to `FILE` (- for stdout; default: appended to $GITHUB_STEP_SUMMARY when set; an empty FILE for none)")
}

// resolveSummary applies the default: with no --summary, GitHub Actions'
// step summary file, appended to.
func (g *gateOptions) resolveSummary(cmd *cobra.Command, getenv func(string) string) {
	if cmd.Flags().Changed("summary") {
		return
	}
	if p := getenv(githubSummaryEnv); p != "" {
		g.Summary, g.SummaryAppend = p, true
	}
}

// stdoutOnce refuses two documents on stdout.
func (g *gateOptions) stdoutOnce(jsonPath, junit string) error {
	if g.Summary == "-" && (jsonPath == "-" || junit == "-") {
		return usageError{fmt.Errorf("--summary - and --json (or --junit -) would both write stdout; send one to a file")}
	}
	return nil
}

func (g *gateOptions) compareOptions() (evals.CompareOptions, error) {
	if !(g.Alpha > 0 && g.Alpha < 1) {
		return evals.CompareOptions{}, usageError{fmt.Errorf("--alpha %g: give a significance level between 0 and 1 (e.g. 0.05)", g.Alpha)}
	}
	tol, err := evals.ParseTolerance(g.Tolerance)
	if err != nil {
		return evals.CompareOptions{}, usageError{fmt.Errorf("--%w", err)}
	}
	return evals.CompareOptions{Alpha: g.Alpha, Tolerance: tol, AllowMissing: g.AllowMissing}, nil
}

// historyPrefix marks a --baseline taken from the history.
const historyPrefix = "history:"

// loadBaseline reads --baseline: a report file, or history:BRANCH (the
// newest complete report of the suite named suite on that branch).
func loadBaseline(ctx context.Context, f *Factory, arg, suite string) (*evals.Report, error) {
	if branch, ok := strings.CutPrefix(arg, historyPrefix); ok {
		if branch == "" {
			return nil, usageError{fmt.Errorf("--baseline history: names no branch (e.g. --baseline history:main)")}
		}
		return baselineFromHistory(ctx, f, suite, branch, "")
	}
	r, err := evals.ReadReport(arg)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w (give a report an earlier 'agentctl eval --json-out' or 'eval merge' wrote, or history:BRANCH)", err)
	}
	return r, nil
}

// exit is the exit status of a run, a merge or a comparison: 9 when the
// gate fails, else 6 when some scenario missed its threshold, else 10
// when nothing ran (or, with --require-all, something did not), else 0.
// A scenario not run is never a failure or a regression of the program,
// and a report of which nothing ran is not a pass.
func (g *gateOptions) exit(rep *evals.Report, cmp *evals.Comparison) error {
	switch {
	case cmp != nil && !cmp.OK:
		return withCode(ExitRegressed, nil)
	case rep.Failed > 0:
		return withCode(ExitChecksFailed, nil)
	case rep.NothingRan():
		return withCode(ExitNotRun, fmt.Errorf("eval: nothing ran: none of the %d scenarios selected could run here (the report says why; a fork's pull request gets no secrets)", rep.NotRun))
	case g.RequireAll && rep.NotRun > 0:
		return withCode(ExitNotRun, fmt.Errorf("eval: %d scenarios were not run here, and --require-all asks for every one", rep.NotRun))
	}
	return nil
}

// writeMarkdownSummary writes the summary where g says.
func writeMarkdownSummary(f *Factory, g gateOptions, rep *evals.Report, cmp *evals.Comparison) error {
	switch {
	case g.Summary == "":
		return nil
	case g.Summary == "-":
		return evals.WriteSummary(f.Out, rep, cmp)
	case g.SummaryAppend:
		out, err := os.OpenFile(g.Summary, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
		if err != nil {
			return fmt.Errorf("write the summary to $%s: %w", githubSummaryEnv, err)
		}
		if err := evals.WriteSummary(out, rep, cmp); err != nil {
			out.Close()
			return fmt.Errorf("write the summary to $%s %s: %w", githubSummaryEnv, g.Summary, err)
		}
		return out.Close()
	}
	if dir := filepath.Dir(g.Summary); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write --summary %s: %w", g.Summary, err)
		}
	}
	out, err := vfs.CreateOutput(vfs.OS, g.Summary, 0o666, false)
	if err != nil {
		return fmt.Errorf("write --summary %s: %w", g.Summary, err)
	}
	defer out.Abort()
	if err := evals.WriteSummary(out, rep, cmp); err != nil {
		return fmt.Errorf("write --summary %s: %w", g.Summary, err)
	}
	return out.Commit()
}

// writeComparison prints the comparison: one line per scenario with its
// verdict, pass rates and means, the reasons and replay lines under each
// scenario that is not unchanged, then the counts and the cost delta.
func writeComparison(w io.Writer, c *evals.Comparison) {
	b := c.Baseline
	fmt.Fprintf(w, "\nagainst the baseline %s", termsafe.Line(b.SuitePath))
	var p []string
	if b.Branch != "" {
		p = append(p, "branch "+termsafe.Line(b.Branch))
	}
	if b.Commit != "" {
		p = append(p, "commit "+termsafe.Line(excerpt(b.Commit, 12)))
	}
	if !b.Started.IsZero() {
		p = append(p, "started "+b.Started.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if len(p) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(p, ", "))
	}
	fmt.Fprintf(w, ", alpha %g, tolerance %s:\n", c.Alpha, c.Tolerance)
	for _, n := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", termsafe.Line(n))
	}
	width := 0
	for _, d := range c.Scenarios {
		width = max(width, len(d.Name))
	}
	for _, d := range c.Scenarios {
		verdict := strings.ToUpper(strings.ReplaceAll(string(d.Verdict), "_", " "))
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("%-9s %-*s %-13s %s", verdict, width, termsafe.Line(d.Name), passRates(d), means(d)), " "))
		if d.Verdict == evals.Unchanged {
			continue
		}
		for _, r := range d.Reasons {
			fmt.Fprintf(w, "    %s\n", termsafe.Line(r))
		}
		if d.Verdict == evals.Regressed {
			for _, id := range d.ReplaySessions() {
				fmt.Fprintf(w, "    replay: agentctl%s replay run %s\n", evals.HomeFlag(c.Current.Home), id)
			}
		}
	}
	word := "ok"
	if !c.OK {
		word = "REGRESSED"
	}
	fmt.Fprintf(w, "gate %s: %s; cost $%.4f -> $%.4f (%+.4f USD)\n", word, evals.CountsLine(c), c.BaselineCostUSD, c.CurrentCostUSD, c.CostDeltaUSD)
}

func passRates(d evals.ScenarioDiff) string {
	side := func(s *evals.Stats) string {
		if s == nil {
			return "-"
		}
		return fmt.Sprintf("%d/%d", s.Passed, s.Runs)
	}
	return side(d.Baseline) + " -> " + side(d.Current)
}

func means(d evals.ScenarioDiff) string {
	var p []string
	for _, mc := range d.Changes {
		if mc.Metric == evals.MetricTurns || mc.Metric == evals.MetricToolCalls {
			continue
		}
		p = append(p, fmt.Sprintf("%s %s -> %s", mc.Metric, evals.FormatMetric(mc.Metric, mc.Baseline), evals.FormatMetric(mc.Metric, mc.Current)))
	}
	return strings.Join(p, ", ")
}

type evalCompareOptions struct {
	Baseline, Current string
	JUnit             string
	JSON              bool
	JSONOut           string
	Gate              gateOptions
}

func newEvalCompareCmd(f *Factory, runF func(context.Context, *evalCompareOptions) error) *cobra.Command {
	opts := &evalCompareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BASELINE.json CURRENT.json",
		Short: "Compare two eval reports: the --baseline gate without running anything",
		Long: `Compare two --json-out reports (two models, two prompts, two branches;
whole, merged or one shard's) scenario by scenario, exactly as 'agentctl
eval --baseline' does: pass rates, mean cost, tokens, turns, wall time
and tool calls, and a verdict per scenario (regressed, improved,
unchanged, new, missing). Repeat-1 scenarios compare outcomes; repeated
ones are judged by a one-sided Fisher exact test at --alpha; means beyond
--tolerance regress. A scenario of BASELINE that CURRENT should have run
(in its shard, matching its filter) is missing and fails unless
--allow-missing. --json prints the comparison, --junit writes CURRENT's
JUnit with the verdicts, --summary the Markdown summary.

` + evalExitHelp,
		Example: `  agentctl eval compare main.json pr.json
  agentctl eval compare sonnet.json haiku.json --tolerance cost=off,tokens=off --summary cmp.md
  agentctl eval compare main.json pr.json --json | jq '.scenarios[] | select(.verdict == "regressed") | .name'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Baseline, opts.Current = args[0], args[1]
			opts.Gate.resolveSummary(cmd, os.Getenv)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return evalCompareRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.JUnit, "junit", "", "write CURRENT's JUnit XML with the verdicts to `FILE` (- for stdout)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the comparison as JSON on stdout (instead of the table)")
	cmd.Flags().StringVar(&opts.JSONOut, "json-out", "", "write the comparison as JSON to `FILE`")
	addGateFlags(cmd, &opts.Gate)
	return cmd
}

func evalCompareRun(ctx context.Context, f *Factory, opts *evalCompareOptions) error {
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
	cur, err := evals.ReadReport(opts.Current)
	if err != nil {
		return err
	}
	base, err := loadBaseline(ctx, f, opts.Baseline, cur.Suite)
	if err != nil {
		return err
	}
	cmp, err := evals.Compare(base, cur, copts)
	if err != nil {
		return fmt.Errorf("eval compare: %w", err)
	}
	if err := writeEvalOutputs(f, cur, cmp, opts.JUnit, jsonPath, cmp); err != nil {
		return err
	}
	if err := writeMarkdownSummary(f, opts.Gate, cur, cmp); err != nil {
		return err
	}
	if jsonPath != "-" && opts.JUnit != "-" && opts.Gate.Summary != "-" {
		// The reports may come from anywhere (a CI artifact): their text
		// reaches the terminal without its escapes.
		out := termsafe.Writer(f.Out)
		fmt.Fprintf(out, "eval compare %s: %d scenarios, %d runs (%d passed, %d failed)", cur.Suite, len(cur.Scenarios), cur.Runs, cur.Passed, cur.Failed)
		writeComparison(out, cmp)
	}
	return opts.Gate.exit(cur, cmp)
}
