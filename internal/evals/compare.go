package evals

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Comparing a report with a baseline: the gate of `agentctl eval
// --baseline` and `agentctl eval compare`. Everything here is a pure
// function of two reports and the options.
//
// Scenarios are matched by name. A scenario of both reports gets one of
// regressed, improved or unchanged; one only the current report has is
// new; one only the baseline has is missing when the current report was
// meant to run it (its shard holds the scenario's index and its --filter
// matches the name; see expectedBy), and is left out otherwise, so one
// shard's report is gated on that shard's part of the baseline. A missing scenario fails the
// gate unless AllowMissing: a harness that silently drops scenarios must
// not pass for comparing only what is left.
//
// Pass rates. When both sides made one run (repeat 1, the deterministic
// scenarios of scripted models and replays) the outcomes are compared
// directly: pass then and fail now is a regression. Otherwise the two pass
// counts are judged by a one-sided Fisher exact test: under the null
// hypothesis that both sides pass with the same probability, and given the
// table's margins, the current side's passes follow a hypergeometric
// distribution; PWorse = P(X <= passes now) and the scenario regressed
// when PWorse <= Alpha (improved when PBetter = P(X >= passes now) <=
// Alpha). Fisher's test is exact for any counts, so it needs no
// large-sample approximation at the 3 to 20 repeats suites use, and it is
// conservative: the false-alarm rate stays at or under Alpha (the README
// states the rate measured by TestFalseAlarmRate). At 5 runs a side,
// 4/5 against 5/5 gives PWorse = 0.5 (noise), 0/5 against 5/5 gives 1/252
// = 0.004 (a regression); 1/5 is the best a regression can keep.
//
// Cost, tokens, turns, wall time and tool calls are compared by their
// means over each side's runs that recorded a session. A mean above the
// baseline's by more than its Tolerance (a share of the baseline's mean)
// is a regression, below by more an improvement; a metric with no
// tolerance is shown, not judged. Against a baseline mean of 0 any
// increase is beyond every tolerance. Wall time changes under MinWallDelta
// are never judged (a scripted run takes milliseconds, and their jitter
// is not the agent's).
//
// A scenario with any regression is regressed; otherwise with any
// improvement improved; otherwise unchanged. A scenario not run now is
// not_run, whatever the baseline had; one the baseline did not run is new.

// GateVerdict is a scenario's verdict against the baseline.
type GateVerdict string

// The verdicts, in the order the summary lists them.
const (
	Regressed GateVerdict = "regressed"
	Missing   GateVerdict = "missing"
	Improved  GateVerdict = "improved"
	New       GateVerdict = "new"
	Unchanged GateVerdict = "unchanged"
	// NotRun: the scenario could not run now (ScenarioResult.NotRunReason);
	// nothing is known of it, so it neither regresses nor fails the gate.
	NotRun GateVerdict = "not_run"
)

// Metric names a per-run figure the comparison averages.
type Metric string

// The metrics, in the order tables show them.
const (
	MetricCost      Metric = "cost"
	MetricTokens    Metric = "tokens"
	MetricTurns     Metric = "turns"
	MetricWall      Metric = "wall"
	MetricToolCalls Metric = "tool_calls"
)

// Metrics are every metric, in table order.
var Metrics = []Metric{MetricCost, MetricTokens, MetricTurns, MetricWall, MetricToolCalls}

// MinWallDelta is the least change of mean wall time that is judged.
const MinWallDelta = time.Second

// DefaultAlpha is the significance level of --alpha.
const DefaultAlpha = 0.05

// Tolerance is, per metric, how far (a share of the baseline's mean) the
// current mean may rise before it is a regression; a metric that is not a
// key is not judged.
type Tolerance map[Metric]float64

// DefaultTolerance is --tolerance's default: cost=10%,tokens=10%,wall=50%.
func DefaultTolerance() Tolerance {
	return Tolerance{MetricCost: 0.10, MetricTokens: 0.10, MetricWall: 0.50}
}

// ParseTolerance reads --tolerance: comma-separated METRIC=N% or
// METRIC=off, laid over DefaultTolerance (so "wall=off" keeps the cost and
// token defaults). Metrics: cost, tokens, turns, wall, tool_calls. N is a
// non-negative decimal; the % is required, so 10 (ten times? a tenth?) is
// refused rather than guessed.
func ParseTolerance(s string) (Tolerance, error) {
	t := DefaultTolerance()
	if strings.TrimSpace(s) == "" {
		return t, nil
	}
	seen := map[Metric]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		m := Metric(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if !ok || m == "" || v == "" {
			return nil, fmt.Errorf("tolerance %q: %q is not METRIC=N%% or METRIC=off (e.g. cost=10%%,tokens=10%%,wall=50%%)", s, part)
		}
		if !slices.Contains(Metrics, m) {
			return nil, fmt.Errorf("tolerance %q: unknown metric %q (one of %s)", s, m, metricList())
		}
		if seen[m] {
			return nil, fmt.Errorf("tolerance %q: %s is given twice", s, m)
		}
		seen[m] = true
		if v == "off" {
			delete(t, m)
			continue
		}
		num, pct := strings.CutSuffix(v, "%")
		f, err := strconv.ParseFloat(num, 64)
		switch {
		case !pct:
			return nil, fmt.Errorf("tolerance %q: %s=%s needs a %% (a share of the baseline's mean, e.g. %s=%s%%) or off", s, m, v, m, v)
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0:
			return nil, fmt.Errorf("tolerance %q: %s=%s is not a non-negative percentage", s, m, v)
		}
		t[m] = f / 100
	}
	return t, nil
}

func metricList() string {
	var p []string
	for _, m := range Metrics {
		p = append(p, string(m))
	}
	return strings.Join(p, ", ")
}

// String gives the tolerance as --tolerance reads it.
func (t Tolerance) String() string {
	var p []string
	for _, m := range Metrics {
		if v, ok := t[m]; ok {
			p = append(p, fmt.Sprintf("%s=%s%%", m, strconv.FormatFloat(v*100, 'f', -1, 64)))
		}
	}
	if len(p) == 0 {
		return "none"
	}
	return strings.Join(p, ",")
}

// CompareOptions are the gate's settings.
type CompareOptions struct {
	// Alpha is the significance level of the Fisher test (0: DefaultAlpha).
	Alpha float64
	// Tolerance per metric (nil: DefaultTolerance).
	Tolerance Tolerance
	// AllowMissing lets a missing scenario pass the gate (it is still
	// listed as missing).
	AllowMissing bool
}

// CompareVersion is the version of the JSON comparison's schema; fields
// are only ever added.
const CompareVersion = 1

// Comparison is the gate's outcome: the JSON of `agentctl eval compare`
// and the "comparison" of an eval report run with --baseline.
type Comparison struct {
	Version      int       `json:"version"`
	Baseline     ReportRef `json:"baseline"`
	Current      ReportRef `json:"current"`
	Alpha        float64   `json:"alpha"`
	Tolerance    Tolerance `json:"tolerance"`
	AllowMissing bool      `json:"allow_missing"`
	// Scenarios are the current report's in its order, then the missing
	// ones in the baseline's order.
	Scenarios []ScenarioDiff `json:"scenarios"`
	Regressed int            `json:"regressed"`
	Improved  int            `json:"improved"`
	Unchanged int            `json:"unchanged"`
	New       int            `json:"new"`
	Missing   int            `json:"missing"`
	NotRun    int            `json:"not_run"`
	// CostUSD is each report's total cost (every run), and its change.
	BaselineCostUSD float64 `json:"baseline_cost_usd"`
	CurrentCostUSD  float64 `json:"current_cost_usd"`
	CostDeltaUSD    float64 `json:"cost_delta_usd"`
	// Notes say what the reader should know about the two reports (other
	// suite names, a partial baseline).
	Notes []string `json:"notes,omitempty"`
	// OK: nothing regressed, and nothing is missing unless AllowMissing.
	OK bool `json:"ok"`
}

// ReportRef names a compared report.
type ReportRef struct {
	Suite       string    `json:"suite"`
	SuitePath   string    `json:"suite_path"`
	SuiteSHA256 string    `json:"suite_sha256"`
	Shards      []Shard   `json:"shards,omitempty"`
	Filter      string    `json:"filter,omitempty"`
	Branch      string    `json:"branch,omitempty"`
	Commit      string    `json:"commit,omitempty"`
	Home        string    `json:"home"`
	Started     time.Time `json:"started"`
	OK          bool      `json:"ok"`
}

// ScenarioDiff is one scenario's verdict and the numbers behind it.
type ScenarioDiff struct {
	Name    string      `json:"name"`
	Verdict GateVerdict `json:"verdict"`
	// Reasons say why, one finding each ("pass rate 5/5 -> 0/5, Fisher
	// p = 0.004 <= alpha 0.05", "tokens 840 -> 2520 (+200%, tolerance 10%)").
	Reasons  []string `json:"reasons,omitempty"`
	Baseline *Stats   `json:"baseline,omitempty"`
	Current  *Stats   `json:"current,omitempty"`
	// Test is how the pass rates were judged: "outcome" (one run each)
	// or "fisher"; PWorse and PBetter are Fisher's one-sided p-values.
	Test    string   `json:"test,omitempty"`
	PWorse  *float64 `json:"p_worse,omitempty"`
	PBetter *float64 `json:"p_better,omitempty"`
	// Changes are the metrics, in Metrics order, when both sides ran.
	Changes []MetricChange `json:"changes,omitempty"`
}

// Stats are one side's figures for a scenario.
type Stats struct {
	Runs     int     `json:"runs"`
	Passed   int     `json:"passed"`
	PassRate float64 `json:"pass_rate"`
	// OK: the scenario met its threshold on this side.
	OK bool `json:"ok"`
	// Recorded runs made a session; the means are over them.
	Recorded  int     `json:"recorded"`
	CostUSD   float64 `json:"cost_usd"`
	Tokens    float64 `json:"tokens"`
	Turns     float64 `json:"turns"`
	Millis    float64 `json:"ms"`
	ToolCalls float64 `json:"tool_calls"`
	// Sessions are the runs' sessions in repeat order, FailedSessions
	// those of the runs that failed (what a reader replays).
	Sessions       []string `json:"sessions,omitempty"`
	FailedSessions []string `json:"failed_sessions,omitempty"`
}

func (s *Stats) mean(m Metric) float64 {
	switch m {
	case MetricCost:
		return s.CostUSD
	case MetricTokens:
		return s.Tokens
	case MetricTurns:
		return s.Turns
	case MetricWall:
		return s.Millis
	case MetricToolCalls:
		return s.ToolCalls
	}
	return 0
}

// MetricChange is one metric's means and what the gate made of them.
type MetricChange struct {
	Metric   Metric  `json:"metric"`
	Baseline float64 `json:"baseline"`
	Current  float64 `json:"current"`
	Delta    float64 `json:"delta"`
	// Change is Delta as a share of the baseline; absent when the
	// baseline is 0.
	Change *float64 `json:"change,omitempty"`
	// Tolerance is the metric's; absent when it is not judged.
	Tolerance *float64 `json:"tolerance,omitempty"`
	Regressed bool     `json:"regressed,omitempty"`
	Improved  bool     `json:"improved,omitempty"`
}

// ErrDuplicateScenario: a report names a scenario twice, so scenarios
// cannot be matched by name.
var ErrDuplicateScenario = errors.New("evals: a report has two scenarios of one name")

// StatsOf computes a scenario's figures from its runs.
func StatsOf(sc ScenarioResult) *Stats {
	st := &Stats{Runs: len(sc.Runs), OK: sc.OK}
	made := 0
	for _, r := range sc.Runs {
		if r.OK {
			st.Passed++
		} else if r.SessionID != "" {
			st.FailedSessions = append(st.FailedSessions, r.SessionID)
		}
		if r.SessionID == "" {
			continue
		}
		st.Sessions = append(st.Sessions, r.SessionID)
		made++
		st.CostUSD += r.CostUSD
		st.Tokens += float64(r.Tokens)
		st.Turns += float64(r.Turns)
		st.Millis += float64(r.Millis)
		st.ToolCalls += float64(r.ToolCalls)
	}
	if st.Runs > 0 {
		st.PassRate = float64(st.Passed) / float64(st.Runs)
	}
	st.Recorded = made
	if made > 0 {
		n := float64(made)
		st.CostUSD, st.Tokens, st.Turns, st.Millis, st.ToolCalls = st.CostUSD/n, st.Tokens/n, st.Turns/n, st.Millis/n, st.ToolCalls/n
	}
	return st
}

// Compare judges the current report against the baseline.
func Compare(baseline, current *Report, opts CompareOptions) (*Comparison, error) {
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
	}
	if !(opts.Alpha > 0 && opts.Alpha < 1) {
		return nil, fmt.Errorf("compare: alpha %g is not between 0 and 1 (e.g. 0.05)", opts.Alpha)
	}
	if opts.Tolerance == nil {
		opts.Tolerance = DefaultTolerance()
	}
	baseBy, err := byName(baseline)
	if err != nil {
		return nil, fmt.Errorf("compare: baseline: %w", err)
	}
	if _, err := byName(current); err != nil {
		return nil, fmt.Errorf("compare: current report: %w", err)
	}
	c := &Comparison{Version: CompareVersion, Baseline: refOf(baseline), Current: refOf(current), Alpha: opts.Alpha,
		Tolerance: opts.Tolerance, AllowMissing: opts.AllowMissing, Scenarios: []ScenarioDiff{}}
	c.BaselineCostUSD, c.CurrentCostUSD = totalCost(baseline), totalCost(current)
	c.CostDeltaUSD = c.CurrentCostUSD - c.BaselineCostUSD
	if baseline.Suite != current.Suite {
		c.Notes = append(c.Notes, fmt.Sprintf("the baseline is of suite %q, the current report of suite %q", baseline.Suite, current.Suite))
	}
	if len(baseline.Shards) > 0 || baseline.Filter != "" {
		c.Notes = append(c.Notes, fmt.Sprintf("the baseline covers shards %s, filter %q only: scenarios outside it are new", shardsString(baseline.Shards), baseline.Filter))
	}
	for _, sc := range current.Scenarios {
		cur := StatsOf(sc)
		b, ok := baseBy[sc.Name]
		if sc.NotRunReason != "" {
			d := ScenarioDiff{Name: sc.Name, Verdict: NotRun, Reasons: []string{"not run now: " + sc.NotRunReason}}
			if ok {
				d.Baseline = StatsOf(b)
				if b.NotRunReason == "" {
					d.Reasons = append(d.Reasons, fmt.Sprintf("%d/%d runs passed in the baseline", d.Baseline.Passed, d.Baseline.Runs))
				}
			}
			c.Scenarios = append(c.Scenarios, d)
			continue
		}
		if ok && b.NotRunReason != "" {
			c.Scenarios = append(c.Scenarios, ScenarioDiff{Name: sc.Name, Verdict: New, Current: cur,
				Reasons: []string{fmt.Sprintf("not run in the baseline (%s); %d/%d runs passed now", b.NotRunReason, cur.Passed, cur.Runs)}})
			continue
		}
		if !ok {
			c.Scenarios = append(c.Scenarios, ScenarioDiff{Name: sc.Name, Verdict: New, Current: cur,
				Reasons: []string{fmt.Sprintf("not in the baseline; %d/%d runs passed now", cur.Passed, cur.Runs)}})
			continue
		}
		c.Scenarios = append(c.Scenarios, judge(sc.Name, StatsOf(b), cur, opts))
	}
	expected := expectedBy(current)
	have, _ := byName(current)
	for _, sc := range baseline.Scenarios {
		if _, ok := have[sc.Name]; ok || !expected(sc) {
			continue
		}
		base := StatsOf(sc)
		why := fmt.Sprintf("in the baseline (%d/%d runs passed) but not run now", base.Passed, base.Runs)
		if opts.AllowMissing {
			why += "; allowed by --allow-missing"
		}
		c.Scenarios = append(c.Scenarios, ScenarioDiff{Name: sc.Name, Verdict: Missing, Baseline: base, Reasons: []string{why}})
	}
	for _, d := range c.Scenarios {
		switch d.Verdict {
		case Regressed:
			c.Regressed++
		case Improved:
			c.Improved++
		case Unchanged:
			c.Unchanged++
		case New:
			c.New++
		case Missing:
			c.Missing++
		case NotRun:
			c.NotRun++
		}
	}
	c.OK = c.Regressed == 0 && (c.Missing == 0 || opts.AllowMissing)
	return c, nil
}

func byName(r *Report) (map[string]ScenarioResult, error) {
	m := make(map[string]ScenarioResult, len(r.Scenarios))
	for _, sc := range r.Scenarios {
		if _, dup := m[sc.Name]; dup {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateScenario, sc.Name)
		}
		m[sc.Name] = sc
	}
	return m, nil
}

// expectedBy says whether the current report was meant to run a baseline
// scenario: its shards hold the scenario's index and its filter matches
// the name. The index is the scenario's place in the current suite file
// (Report.SuiteNames) when it is still there, so a scenario that moved
// to another shard is that shard's; else its place in the baseline's, so
// a scenario deleted from the suite is missing in one shard. A filter
// that does not compile expects everything, so nothing is excused by it.
func expectedBy(cur *Report) func(ScenarioResult) bool {
	var re *regexp.Regexp
	if cur.Filter != "" {
		re, _ = regexp.Compile(cur.Filter)
	}
	at := map[string]int{}
	for i, n := range cur.SuiteNames {
		if _, dup := at[n]; !dup {
			at[n] = i
		}
	}
	return func(sc ScenarioResult) bool {
		if re != nil && !re.MatchString(sc.Name) {
			return false
		}
		if len(cur.Shards) == 0 {
			return true
		}
		idx, ok := at[sc.Name]
		if !ok {
			idx = sc.Index
		}
		for _, sh := range cur.Shards {
			if sh.Has(idx) {
				return true
			}
		}
		return false
	}
}

func refOf(r *Report) ReportRef {
	return ReportRef{Suite: r.Suite, SuitePath: r.SuitePath, SuiteSHA256: r.SuiteSHA256, Shards: r.Shards, Filter: r.Filter,
		Branch: r.Branch, Commit: r.Commit, Home: r.Home, Started: r.Started, OK: r.OK}
}

func totalCost(r *Report) float64 {
	t := 0.0
	for _, sc := range r.Scenarios {
		for _, run := range sc.Runs {
			t += run.CostUSD
		}
	}
	return t
}

// judge gives a scenario on both sides its verdict.
func judge(name string, base, cur *Stats, opts CompareOptions) ScenarioDiff {
	d := ScenarioDiff{Name: name, Baseline: base, Current: cur, Verdict: Unchanged}
	worse, better := false, false
	rates := fmt.Sprintf("pass rate %d/%d -> %d/%d", base.Passed, base.Runs, cur.Passed, cur.Runs)
	switch {
	case base.Runs == 0 || cur.Runs == 0:
		d.Reasons = append(d.Reasons, rates+": a side has no runs to compare")
	case base.Runs == 1 && cur.Runs == 1:
		d.Test = "outcome"
		worse, better = base.Passed == 1 && cur.Passed == 0, base.Passed == 0 && cur.Passed == 1
		switch {
		case worse:
			d.Reasons = append(d.Reasons, rates+": passed then, fails now")
		case better:
			d.Reasons = append(d.Reasons, rates+": failed then, passes now")
		}
	default:
		d.Test = "fisher"
		pw, pb := FisherOneSided(base.Passed, base.Runs, cur.Passed, cur.Runs)
		d.PWorse, d.PBetter = &pw, &pb
		worse, better = pw <= opts.Alpha, pb <= opts.Alpha
		switch {
		case worse:
			d.Reasons = append(d.Reasons, fmt.Sprintf("%s: Fisher p = %.3g <= alpha %g", rates, pw, opts.Alpha))
		case better:
			d.Reasons = append(d.Reasons, fmt.Sprintf("%s: better, Fisher p = %.3g <= alpha %g", rates, pb, opts.Alpha))
		case base.Passed*cur.Runs != cur.Passed*base.Runs:
			d.Reasons = append(d.Reasons, fmt.Sprintf("%s: within noise, Fisher p = %.3g > alpha %g", rates, min(pw, pb), opts.Alpha))
		}
	}
	if base.Recorded == 0 || cur.Recorded == 0 {
		d.Reasons = append(d.Reasons, "no means to compare: a side recorded no session")
	} else {
		for _, m := range Metrics {
			mc := change(m, base.mean(m), cur.mean(m), opts.Tolerance)
			if mc.Regressed {
				worse = true
				d.Reasons = append(d.Reasons, mc.describe("beyond"))
			} else if mc.Improved {
				better = true
				d.Reasons = append(d.Reasons, mc.describe("better than"))
			}
			d.Changes = append(d.Changes, mc)
		}
	}
	switch {
	case worse:
		d.Verdict = Regressed
	case better:
		d.Verdict = Improved
	}
	return d
}

func change(m Metric, b, c float64, tol Tolerance) MetricChange {
	mc := MetricChange{Metric: m, Baseline: b, Current: c, Delta: c - b}
	if b != 0 {
		r := (c - b) / b
		mc.Change = &r
	}
	t, judged := tol[m]
	if !judged {
		return mc
	}
	mc.Tolerance = &t
	if m == MetricWall && math.Abs(mc.Delta) < float64(MinWallDelta.Milliseconds()) {
		return mc
	}
	mc.Regressed = c > b*(1+t) && c > b
	mc.Improved = c < b*(1-t) && c < b
	return mc
}

func (mc MetricChange) describe(word string) string {
	ch := "from 0"
	if mc.Change != nil {
		ch = fmt.Sprintf("%+.0f%%", *mc.Change*100)
	}
	return fmt.Sprintf("%s %s -> %s (%s, %s tolerance %s%%)", mc.Metric, FormatMetric(mc.Metric, mc.Baseline), FormatMetric(mc.Metric, mc.Current),
		ch, word, strconv.FormatFloat(*mc.Tolerance*100, 'f', -1, 64))
}

// FormatMetric writes a metric's mean as the tables show it.
func FormatMetric(m Metric, v float64) string {
	switch m {
	case MetricCost:
		return fmt.Sprintf("$%.4f", v)
	case MetricWall:
		return fmt.Sprintf("%.1fs", v/1000)
	}
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// FisherOneSided is the one-sided Fisher exact test of the 2x2 table
// (baseline: pb passes of nb runs; current: pc of nc). With K = pb + pc
// passes among N = nb + nc runs, the current side's passes X are
// hypergeometric, P(X = x) = C(K, x) C(N-K, nc-x) / C(N, nc); worse is
// P(X <= pc), better P(X >= pc).
func FisherOneSided(pb, nb, pc, nc int) (worse, better float64) {
	n, k := nb+nc, pb+pc
	lo, hi := max(0, nc-(n-k)), min(k, nc)
	for x := lo; x <= hi; x++ {
		p := math.Exp(lchoose(k, x) + lchoose(n-k, nc-x) - lchoose(n, nc))
		if x <= pc {
			worse += p
		}
		if x >= pc {
			better += p
		}
	}
	return min(worse, 1), min(better, 1)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// CountsLine is the comparison's counts as one line ("1 regressed, 1
// missing, 0 improved, 3 unchanged, 0 new", then ", 2 not run" when some
// scenarios were not run).
func CountsLine(c *Comparison) string {
	s := fmt.Sprintf("%d regressed, %d missing, %d improved, %d unchanged, %d new", c.Regressed, c.Missing, c.Improved, c.Unchanged, c.New)
	if c.NotRun > 0 {
		s += fmt.Sprintf(", %d not run", c.NotRun)
	}
	return s
}

// ReplaySessions are the sessions a reader of a regression replays: the
// current side's failed runs, or, when the runs passed and a metric
// regressed, every run.
func (d ScenarioDiff) ReplaySessions() []string {
	if d.Current == nil {
		return nil
	}
	if len(d.Current.FailedSessions) > 0 {
		return d.Current.FailedSessions
	}
	return d.Current.Sessions
}
