package evals

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
)

// The Markdown summary (--summary, $GITHUB_STEP_SUMMARY): what a reviewer
// of a pull request reads. GitHub-flavoured Markdown (pipe tables, fenced
// code), checked by the tests with a real CommonMark+GFM renderer.
//
//	## ❌ eval smoke: regressed against the baseline
//	line naming the baseline, alpha and tolerance
//	counts line, then the cost line (totals and their change)
//	| Scenario | Verdict | Pass rate | p | Cost | Tokens | Turns | Wall | Tool calls |   one row per scenario
//	### Regressed / ### Missing / ### Not run: each scenario's reasons, and for a
//	regression why its runs failed (whyBlock: each failed assertion,
//	expected and got, and a replay's divergence: turn and both sides)
//	and the `agentctl replay run <id>` lines of its runs
//	### Failing, not a regression: the same for scenarios that fail on
//	both sides (or are new and fail)
//	### Trials: pass@k and pass^k of the scenarios with repeats
//
// Without a baseline the table has each scenario's result, runs passed
// and means, and the failed scenarios' reasons (whyBlock) and replay lines. Text from the suite
// (scenario names) is escaped, so a name cannot break the table.

// maxReplayLines caps the replay lines listed per scenario.
const maxReplayLines = 10

// WriteSummary writes the Markdown summary of rep, compared with a
// baseline when cmp is not nil.
func WriteSummary(w io.Writer, rep *Report, cmp *Comparison) error {
	var b strings.Builder
	if cmp != nil {
		summaryCompared(&b, rep, cmp)
	} else {
		summaryPlain(&b, rep)
	}
	summaryTrials(&b, rep)
	_, err := io.WriteString(w, b.String())
	return err
}

func summaryCompared(b *strings.Builder, rep *Report, cmp *Comparison) {
	mark, what := "✅", "no regression against the baseline"
	switch {
	case !cmp.OK:
		mark, what = "❌", "regressed against the baseline"
		if cmp.Regressed == 0 {
			what = "scenarios missing against the baseline"
		}
	case rep.NothingRan():
		mark, what = "⚠️", fmt.Sprintf("nothing ran, %d not run", rep.NotRun)
	case rep.NotRun > 0:
		mark, what = "⚠️", fmt.Sprintf("no regression in the scenarios that ran, %d not run", rep.NotRun)
	}
	fmt.Fprintf(b, "## %s eval %s: %s\n\n", mark, mdText(rep.Suite), what)
	fmt.Fprintf(b, "Baseline: %s · alpha %s · tolerance %s\n\n", baselineLine(cmp.Baseline), strconv.FormatFloat(cmp.Alpha, 'g', -1, 64), mdText(cmp.Tolerance.String()))
	fmt.Fprintf(b, "**%s**. Cost: %s → %s (%s).\n\n", CountsLine(cmp), usd(cmp.BaselineCostUSD), usd(cmp.CurrentCostUSD), costDelta(cmp))
	for _, n := range cmp.Notes {
		fmt.Fprintf(b, "> Note: %s\n\n", mdText(n))
	}
	b.WriteString("| Scenario | Verdict | Pass rate | p (worse) | Cost | Tokens | Turns | Wall | Tool calls |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, d := range cmp.Scenarios {
		p := "–"
		if d.PWorse != nil {
			p = strconv.FormatFloat(*d.PWorse, 'g', 3, 64)
		}
		cells := []string{mdText(d.Name), verdictCell(d.Verdict), passCell(d.Baseline, d.Current), p}
		for _, m := range Metrics {
			cells = append(cells, metricCell(m, d))
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
	b.WriteString("\n")
	for _, v := range []GateVerdict{Regressed, Missing, NotRun, Improved} {
		first := true
		for _, d := range cmp.Scenarios {
			if d.Verdict != v {
				continue
			}
			if first {
				fmt.Fprintf(b, "### %s\n\n", verdictHeading(v))
				first = false
			}
			fmt.Fprintf(b, "- **%s**: %s\n", mdText(d.Name), mdText(strings.Join(d.Reasons, "; ")))
			if v == Regressed {
				if sc, ok := scenarioNamed(rep, d.Name); ok {
					whyBlock(b, sc, "  ")
				}
				replayBlock(b, rep.Home, d.ReplaySessions(), "  ")
			}
		}
		if !first {
			b.WriteString("\n")
		}
	}
	// A scenario that fails on both sides is no regression, and its
	// reader still needs to know why it fails.
	first := true
	for _, d := range cmp.Scenarios {
		sc, ok := scenarioNamed(rep, d.Name)
		if d.Verdict == Regressed || !ok || sc.OK || sc.NotRunReason != "" {
			continue
		}
		if first {
			b.WriteString("### Failing, not a regression\n\n")
			first = false
		}
		fmt.Fprintf(b, "- **%s** (%s): %d/%d runs passed, %d needed\n", mdText(sc.Name), mdText(verdictHeading(d.Verdict)), sc.Passed, len(sc.Runs), sc.Need)
		whyBlock(b, sc, "  ")
		replayBlock(b, rep.Home, StatsOf(sc).FailedSessions, "  ")
	}
	if !first {
		b.WriteString("\n")
	}
}

func summaryPlain(b *strings.Builder, rep *Report) {
	mark, notRun := "✅", ""
	if rep.NotRun > 0 {
		mark, notRun = "⚠️", fmt.Sprintf(", %d not run", rep.NotRun)
	}
	if rep.Failed > 0 {
		mark = "❌"
	}
	fmt.Fprintf(b, "## %s eval %s: %d passed, %d failed%s\n\n", mark, mdText(rep.Suite), rep.Passed, rep.Failed, notRun)
	fmt.Fprintf(b, "%d of %d runs ok in %.1fs. Cost: %s.\n\n", rep.RunsOK, rep.Runs, float64(rep.Millis)/1000, usd(totalCost(rep)))
	b.WriteString("| Scenario | Result | Runs passed | Cost | Tokens | Turns | Wall | Tool calls |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, sc := range rep.Scenarios {
		st := StatsOf(sc)
		if sc.NotRunReason != "" {
			cells := []string{mdText(sc.Name), "**NOT RUN**", "–"}
			for range Metrics {
				cells = append(cells, "–")
			}
			fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
			continue
		}
		res := "ok"
		if !sc.OK {
			res = "**FAILED**"
		}
		cells := []string{mdText(sc.Name), res, fmt.Sprintf("%d/%d (need %d)", sc.Passed, len(sc.Runs), sc.Need)}
		for _, m := range Metrics {
			cells = append(cells, FormatMetric(m, st.mean(m)))
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
	b.WriteString("\n")
	first := true
	for _, sc := range rep.Scenarios {
		if sc.OK || sc.NotRunReason != "" {
			continue
		}
		if first {
			b.WriteString("### Failed\n\n")
			first = false
		}
		st := StatsOf(sc)
		fmt.Fprintf(b, "- **%s**: %d/%d runs passed, %d needed\n", mdText(sc.Name), sc.Passed, len(sc.Runs), sc.Need)
		whyBlock(b, sc, "  ")
		replayBlock(b, rep.Home, st.FailedSessions, "  ")
	}
	if !first {
		b.WriteString("\n")
	}
	first = true
	for _, sc := range rep.Scenarios {
		if sc.NotRunReason == "" {
			continue
		}
		if first {
			b.WriteString("### Not run\n\n")
			first = false
		}
		fmt.Fprintf(b, "- **%s**: %s\n", mdText(sc.Name), mdText(sc.NotRunReason))
	}
	if !first {
		b.WriteString("\n")
	}
}

// scenarioNamed is the scenario of rep named name.
func scenarioNamed(rep *Report, name string) (ScenarioResult, bool) {
	for _, sc := range rep.Scenarios {
		if sc.Name == name {
			return sc, true
		}
	}
	return ScenarioResult{}, false
}

func summaryTrials(b *strings.Builder, rep *Report) {
	first := true
	for _, sc := range rep.Scenarios {
		if len(sc.Trials) == 0 {
			continue
		}
		if first {
			b.WriteString("### Trials\n\n")
			b.WriteString("pass@k: chance at least one of k attempts passes (Chen et al. 2021); pass^k: chance all k pass (tau-bench). Unbiased estimators over the runs.\n\n")
			b.WriteString("| Scenario | Runs | Passed | pass@k (k = 1..n) | pass^k (k = 1..n) |\n|---|---|---|---|---|\n")
			first = false
		}
		var at, hat []string
		for _, t := range sc.Trials {
			at = append(at, fmt.Sprintf("%.2f", t.PassAtK))
			hat = append(hat, fmt.Sprintf("%.2f", t.PassHatK))
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s | %s |\n", mdText(sc.Name), len(sc.Runs), sc.Passed, strings.Join(at, ", "), strings.Join(hat, ", "))
	}
	if !first {
		b.WriteString("\n")
	}
}

func replayBlock(b *strings.Builder, home string, ids []string, indent string) {
	if len(ids) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s```sh\n", indent)
	for i, id := range ids {
		if i == maxReplayLines {
			fmt.Fprintf(b, "%s# ... and %d more runs\n", indent, len(ids)-i)
			break
		}
		fmt.Fprintf(b, "%sagentctl%s replay run %s\n", indent, HomeFlag(mdLine(home)), mdLine(id))
	}
	fmt.Fprintf(b, "%s```\n\n", indent)
}

func baselineLine(r ReportRef) string {
	var p []string
	if r.Branch != "" {
		p = append(p, "branch "+mdText(r.Branch))
	}
	if r.Commit != "" {
		p = append(p, "commit "+mdText(clip.Bytes(r.Commit, 12)))
	}
	if !r.Started.IsZero() {
		p = append(p, r.Started.UTC().Format(time.RFC3339))
	}
	s := mdText(r.SuitePath)
	if len(p) > 0 {
		s += " (" + strings.Join(p, ", ") + ")"
	}
	return s
}

func verdictCell(v GateVerdict) string {
	switch v {
	case Regressed, Missing:
		return "**" + string(v) + "**"
	case NotRun:
		return "**not run**"
	}
	return string(v)
}

// verdictHeading is the heading of a verdict's section ("Not run").
func verdictHeading(v GateVerdict) string {
	s := strings.ReplaceAll(string(v), "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

func passCell(base, cur *Stats) string {
	side := func(s *Stats) string {
		if s == nil {
			return "–"
		}
		return fmt.Sprintf("%d/%d", s.Passed, s.Runs)
	}
	return side(base) + " → " + side(cur)
}

func metricCell(m Metric, d ScenarioDiff) string {
	switch {
	case d.Baseline == nil && d.Current == nil:
		return "–"
	case d.Baseline == nil:
		return FormatMetric(m, d.Current.mean(m))
	case d.Current == nil:
		return FormatMetric(m, d.Baseline.mean(m)) + " → –"
	}
	for _, mc := range d.Changes {
		if mc.Metric != m {
			continue
		}
		s := FormatMetric(m, mc.Baseline) + " → " + FormatMetric(m, mc.Current)
		noise := m == MetricWall && math.Abs(mc.Delta) < float64(MinWallDelta.Milliseconds())
		if mc.Change != nil && mc.Delta != 0 && !noise {
			s += fmt.Sprintf(" (%+.0f%%)", *mc.Change*100)
		}
		if mc.Regressed {
			s = "**" + s + "**"
		}
		return s
	}
	return "–"
}

func usd(v float64) string { return fmt.Sprintf("$%.4f", v) }

func costDelta(c *Comparison) string {
	s := fmt.Sprintf("%+.4f USD", c.CostDeltaUSD)
	if c.BaselineCostUSD > 0 {
		s += fmt.Sprintf(", %+.0f%%", c.CostDeltaUSD/c.BaselineCostUSD*100)
	}
	return s
}

// mdText escapes text for a Markdown paragraph or table cell: the
// characters that start markup, the table's pipe, and line breaks.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range mdLine(s) {
		if strings.ContainsRune("\\`*_[]<>|#!~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdLine is s on one line, control characters made spaces.
func mdLine(s string) string {
	return oneLine(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s))
}
