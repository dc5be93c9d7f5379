package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/query"
)

func init() {
	register(route{pattern: "GET /evals", nav: "Evals", navPath: "/evals", order: 40, handle: evalsPage})
	register(route{pattern: "GET /evals/{suite}", handle: suitePage, values: evalSuites})
}

// The evals pages read the eval_runs and eval_results views (the reports
// `agentctl eval` and `eval merge` seal into the history, the home's and a
// remote's), as `agentctl query` does.
const (
	// A suite list and a suite's reports are the MCP server's eval_reports
	// too: the SQL is the query package's, once.
	evalSuitesSQL   = query.EvalSuitesSQL
	evalReportsSQL  = query.EvalReportsSQL
	evalBranchesSQL = `SELECT coalesce(branch, '') AS branch, count(*) AS reports, max(started) AS last_started,
  arg_max(runs_ok * 1.0 / nullif(runs, 0), started) AS last_pass_rate,
  avg(runs_ok * 1.0 / nullif(runs, 0)) AS mean_pass_rate, arg_max(ok, started) AS last_ok
FROM eval_runs WHERE suite = $SUITE GROUP BY 1 ORDER BY last_started DESC`
	evalScenariosSQL = `SELECT scenario, count(*) AS results, count(*) FILTER (WHERE passed) AS passed,
  avg(tokens) AS tokens, avg(cost_usd) AS cost_usd, arg_max(passed, started) AS last_passed,
  min(scenario_index) AS idx
FROM eval_results WHERE suite = $SUITE GROUP BY scenario ORDER BY idx, scenario`
	evalHistorySQL = `SELECT report_digest, started, branch, "commit", "repeat", passed, status, error,
  failed_assertions, session_id, cost_usd, tokens, tool_calls, ms
FROM eval_results WHERE suite = $SUITE AND scenario = $SCENARIO
ORDER BY started DESC, report_digest, "repeat" LIMIT 500`
)

// sqlLit is s as a SQL string literal.
func sqlLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

type suiteRow struct {
	Suite, Href, LastBranch, Branches string
	Reports                           int64
	LastStarted                       time.Time
	LastOK                            bool
	LastRunsOK, LastRuns              int64
}

func evalsPage(c *Ctx) error {
	var suites []suiteRow
	err := c.S.WithDB(c.R.Context(), func(db *query.DB) error {
		res, err := db.Query(c.R.Context(), evalSuitesSQL)
		if err != nil {
			return fmt.Errorf("ui: evals: %w", err)
		}
		for _, r := range res.Rows {
			s := suiteRow{Suite: cellText(r[0]), LastBranch: cellText(r[4]), Branches: cellText(r[7])}
			s.Href = c.Link("/evals/"+url.PathEscape(s.Suite), nil)
			s.Reports, s.LastRunsOK, s.LastRuns = cellInt(r[1]), cellInt(r[5]), cellInt(r[6])
			s.LastStarted, _ = r[2].(time.Time)
			s.LastOK, _ = r[3].(bool)
			suites = append(suites, s)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.Render("evals.html", "Evals", map[string]any{"Suites": suites})
}

// evalSuites are the suites with a report in the history: the suite pages
// an export writes.
func evalSuites(ctx context.Context, s *Server) ([]string, error) {
	var out []string
	err := s.WithDB(ctx, func(db *query.DB) error {
		res, err := db.Query(ctx, evalSuitesSQL)
		if err != nil {
			return fmt.Errorf("ui: evals: %w", err)
		}
		for _, r := range res.Rows {
			out = append(out, cellText(r[0]))
		}
		return nil
	})
	return out, err
}

// cellInt is a count DuckDB returned, 0 for NULL.
func cellInt(v any) int64 {
	f, _ := cellNum(v)
	return int64(f)
}

// comparison is the part of a report's "comparison" (evals.Comparison,
// the gate's outcome of a run with --baseline) the pages show.
type comparison struct {
	Baseline struct {
		Branch  string    `json:"branch"`
		Commit  string    `json:"commit"`
		Started time.Time `json:"started"`
	} `json:"baseline"`
	Scenarios []struct {
		Name    string   `json:"name"`
		Verdict string   `json:"verdict"`
		Reasons []string `json:"reasons"`
	} `json:"scenarios"`
	Regressed, Improved, Unchanged, New, Missing int
	NotRun                                       int `json:"not_run"`
	OK                                           bool
}

// Pass rates are percentages.
type reportRow struct {
	Digest, Branch, Commit    string
	Started                   time.Time
	Millis                    int64
	Complete, OK              bool
	Scenarios, Passed, Failed int64
	Runs, RunsOK              int64
	PassRate                  float64
	CostUSD                   float64
	Tokens                    int64
	TokensPerScenario         int64
	Cmp                       *comparison
}

type branchRow struct {
	Branch                 string
	Reports                int64
	LastStarted            time.Time
	LastPassRate, MeanRate float64
	LastOK                 bool
}

type scenarioRow struct {
	Name, Href      string
	Results, Passed int64
	PassRate        float64
	Tokens          int64
	CostUSD         float64
	LastPassed      bool
}

type historyRow struct {
	Digest, Branch, Commit, Status, Error string
	// Failed are the failed assertions' messages.
	Failed                 []string
	SessionID, SessionHref string
	Started                time.Time
	Repeat                 int64
	Passed                 bool
	CostUSD                float64
	Tokens, ToolCalls      int64
	Took                   time.Duration
	// Verdict is the scenario's against the baseline of its report,
	// when the report was run with one.
	Verdict, Reasons string
}

type suiteData struct {
	Suite, Href  string
	EvalsHref    string
	Reports      []reportRow
	Branches     []branchRow
	Scenarios    []scenarioRow
	PassChart    *chart
	CostChart    *chart
	TokensChart  *chart
	Scenario     string
	History      []historyRow
	HistoryChart *chart
	// CompareHref compares the newest runs of the scenario (up to the
	// compare page's eight), when there are two.
	CompareHref string
}

func suitePage(c *Ctx) error {
	d := &suiteData{Suite: c.R.PathValue("suite"), Scenario: c.R.URL.Query().Get("scenario")}
	d.Href = c.Link("/evals/"+url.PathEscape(d.Suite), nil)
	d.EvalsHref = c.Link("/evals", nil)
	ctx := c.R.Context()
	rep := strings.NewReplacer("$SUITE", sqlLit(d.Suite), "$SCENARIO", sqlLit(d.Scenario))
	err := c.S.WithDB(ctx, func(db *query.DB) error {
		return d.load(ctx, c, db, rep)
	})
	if err != nil {
		return err
	}
	if len(d.Reports) == 0 {
		return notFound("no eval report of suite %q in the history: run agentctl eval on it (reports are sealed unless --no-history)", d.Suite)
	}
	if d.Scenario != "" && len(d.History) == 0 {
		return notFound("suite %q has no result of scenario %q", d.Suite, d.Scenario)
	}
	// Oldest first along the time axis.
	var pass, cost, tok []chartPoint
	for i := len(d.Reports) - 1; i >= 0; i-- {
		r := d.Reports[i]
		label := r.Started.Local().Format("01-02 15:04")
		pass = append(pass, chartPoint{label, r.PassRate})
		cost = append(cost, chartPoint{label, r.CostUSD})
		tok = append(tok, chartPoint{label, float64(r.TokensPerScenario)})
	}
	pct := func(f float64) string { return fmt.Sprintf("%.0f%%", f) }
	d.PassChart = columnChart("chart-pass-rate", "Pass rate of the runs, per report", pass, pct)
	d.CostChart = columnChart("chart-cost", "Cost per report", cost, formatCost)
	d.TokensChart = columnChart("chart-tokens", "Tokens per scenario, per report", tok, func(f float64) string { return formatTokens(int64(f)) })
	if len(d.History) > 0 {
		var pts []chartPoint
		for i := len(d.History) - 1; i >= 0; i-- {
			h := d.History[i]
			v := 0.0
			if h.Passed {
				v = 1
			}
			pts = append(pts, chartPoint{fmt.Sprintf("%s #%d", h.Started.Local().Format("01-02 15:04"), h.Repeat), v})
		}
		d.HistoryChart = columnChart("chart-scenario", "Passed (1) or failed (0), per run", pts, plainNumber)
		var ids []string
		for _, h := range d.History {
			if h.SessionID != "" && len(ids) < compareMax {
				ids = append(ids, h.SessionID)
			}
		}
		if len(ids) >= compareMin {
			d.CompareHref = c.Link("/compare", url.Values{"s": ids})
		}
	}
	title := "Evals: " + d.Suite
	if d.Scenario != "" {
		title += " / " + d.Scenario
	}
	return c.Render("suite.html", title, d)
}

func (d *suiteData) load(ctx context.Context, c *Ctx, db *query.DB, rep *strings.Replacer) error {
	res, err := db.Query(ctx, rep.Replace(evalReportsSQL))
	if err != nil {
		return fmt.Errorf("ui: evals: reports: %w", err)
	}
	verdicts := map[string]*comparison{}
	for _, r := range res.Rows {
		x := reportRow{Digest: cellText(r[0]), Branch: cellText(r[1]), Commit: cellText(r[2]), Millis: cellInt(r[4]),
			Scenarios: cellInt(r[7]), Passed: cellInt(r[8]), Failed: cellInt(r[9]), Runs: cellInt(r[10]), RunsOK: cellInt(r[11]), Tokens: cellInt(r[13])}
		x.Started, _ = r[3].(time.Time)
		x.Complete, _ = r[5].(bool)
		x.OK, _ = r[6].(bool)
		x.CostUSD, _ = cellNum(r[12])
		if x.Runs > 0 {
			x.PassRate = 100 * float64(x.RunsOK) / float64(x.Runs)
		}
		if x.Scenarios > 0 {
			x.TokensPerScenario = x.Tokens / x.Scenarios
		}
		if s := cellText(r[14]); s != "" && s != "null" {
			var cmp comparison
			if err := json.Unmarshal([]byte(s), &cmp); err == nil {
				x.Cmp = &cmp
				verdicts[x.Digest] = &cmp
			}
		}
		d.Reports = append(d.Reports, x)
	}
	if res, err = db.Query(ctx, rep.Replace(evalBranchesSQL)); err != nil {
		return fmt.Errorf("ui: evals: branches: %w", err)
	}
	for _, r := range res.Rows {
		b := branchRow{Branch: cellText(r[0]), Reports: cellInt(r[1])}
		b.LastStarted, _ = r[2].(time.Time)
		b.LastPassRate, _ = cellNum(r[3])
		b.MeanRate, _ = cellNum(r[4])
		b.LastPassRate, b.MeanRate = 100*b.LastPassRate, 100*b.MeanRate
		b.LastOK, _ = r[5].(bool)
		d.Branches = append(d.Branches, b)
	}
	if res, err = db.Query(ctx, rep.Replace(evalScenariosSQL)); err != nil {
		return fmt.Errorf("ui: evals: scenarios: %w", err)
	}
	for _, r := range res.Rows {
		s := scenarioRow{Name: cellText(r[0]), Results: cellInt(r[1]), Passed: cellInt(r[2])}
		s.Href = c.Link("/evals/"+url.PathEscape(d.Suite), url.Values{"scenario": {s.Name}})
		tok, _ := cellNum(r[3])
		s.Tokens = int64(math.Round(tok))
		s.CostUSD, _ = cellNum(r[4])
		s.LastPassed, _ = r[5].(bool)
		if s.Results > 0 {
			s.PassRate = 100 * float64(s.Passed) / float64(s.Results)
		}
		d.Scenarios = append(d.Scenarios, s)
	}
	if d.Scenario == "" {
		return nil
	}
	if res, err = db.Query(ctx, rep.Replace(evalHistorySQL)); err != nil {
		return fmt.Errorf("ui: evals: scenario history: %w", err)
	}
	for _, r := range res.Rows {
		h := historyRow{Digest: cellText(r[0]), Branch: cellText(r[2]), Commit: cellText(r[3]), Repeat: cellInt(r[4]), Status: cellText(r[6]),
			Error: cellText(r[7]), Failed: failedAssertions(r[8]), SessionID: cellText(r[9]), Tokens: cellInt(r[11]), ToolCalls: cellInt(r[12]),
			Took: time.Duration(cellInt(r[13])) * time.Millisecond}
		h.Started, _ = r[1].(time.Time)
		h.Passed, _ = r[5].(bool)
		h.CostUSD, _ = cellNum(r[10])
		if h.SessionID != "" {
			h.SessionHref = c.Link("/sessions/"+h.SessionID, nil)
		}
		if cmp := verdicts[h.Digest]; cmp != nil {
			for _, s := range cmp.Scenarios {
				if s.Name == d.Scenario {
					h.Verdict, h.Reasons = s.Verdict, strings.Join(s.Reasons, "; ")
				}
			}
		}
		d.History = append(d.History, h)
	}
	return nil
}

// failedAssertions reads eval_results.failed_assertions (a JSON list of
// messages, as the report has them); text that is not one is shown whole.
func failedAssertions(v any) []string {
	s := cellText(v)
	if s == "" || s == "null" {
		return nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return []string{s}
	}
	return out
}
