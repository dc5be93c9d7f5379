package evals_test

import (
	"errors"
	"math"
	"math/bits"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/evals"
)

// sc builds a scenario result: passed of runs OK, each run with the given
// tokens, cost and wall time, and a session id.
type scOpt struct {
	name          string
	index         int
	runs, passed  int
	tokens        int64
	cost          float64
	ms            int64
	turns, calls  int
	noSession     bool
	threshold     float64
	sessionPrefix string
}

func mkScenario(o scOpt) evals.ScenarioResult {
	if o.threshold == 0 {
		o.threshold = 1
	}
	prefix := o.sessionPrefix
	if prefix == "" {
		prefix = "s"
	}
	sr := evals.ScenarioResult{Name: o.name, Index: o.index, Repeat: o.runs, Threshold: o.threshold,
		Need: int(math.Ceil(o.threshold*float64(o.runs) - 1e-9))}
	for i := 0; i < o.runs; i++ {
		r := evals.RunResult{Repeat: i + 1, Tokens: o.tokens, CostUSD: o.cost, Millis: o.ms, Turns: o.turns, ToolCalls: int64(o.calls), OK: i < o.passed}
		if !o.noSession {
			r.SessionID = prefix + "-" + o.name + "-" + string(rune('a'+i))
		}
		sr.Runs = append(sr.Runs, r)
		if r.OK {
			sr.Passed++
		}
	}
	sr.OK = sr.Passed >= sr.Need
	return sr
}

func mkReport(scs ...evals.ScenarioResult) *evals.Report {
	r := &evals.Report{Version: evals.ReportVersion, Suite: "gate", SuitePath: "/suites/gate.yaml", SuiteScenarios: len(scs), Scenarios: scs}
	r.OK = true
	for _, s := range scs {
		r.OK = r.OK && s.OK
	}
	return r
}

func verdictOf(t *testing.T, c *evals.Comparison, name string) evals.ScenarioDiff {
	t.Helper()
	for _, d := range c.Scenarios {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no scenario %q in the comparison", name)
	return evals.ScenarioDiff{}
}

// TestCompareVerdicts: one scenario per row, judged against its baseline.
func TestCompareVerdicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		what      string
		base, cur scOpt
		want      evals.GateVerdict
		reason    string // a substring of the reasons
	}{
		{"4/5 vs 5/5 is noise", scOpt{runs: 5, passed: 5, tokens: 100}, scOpt{runs: 5, passed: 4, tokens: 100}, evals.Unchanged, "within noise, Fisher p = 0.5"},
		{"0/5 vs 5/5 regressed", scOpt{runs: 5, passed: 5, tokens: 100}, scOpt{runs: 5, passed: 0, tokens: 100}, evals.Regressed, "Fisher p = 0.00397 <= alpha 0.05"},
		{"1/5 vs 5/5 regressed", scOpt{runs: 5, passed: 5, tokens: 100}, scOpt{runs: 5, passed: 1, tokens: 100}, evals.Regressed, "p = 0.0238"},
		{"2/5 vs 5/5 is not significant", scOpt{runs: 5, passed: 5, tokens: 100}, scOpt{runs: 5, passed: 2, tokens: 100}, evals.Unchanged, "within noise"},
		{"5/5 vs 0/5 improved", scOpt{runs: 5, passed: 0, tokens: 100}, scOpt{runs: 5, passed: 5, tokens: 100}, evals.Improved, "better, Fisher"},
		{"10/10 vs 2/10 over other repeats", scOpt{runs: 3, passed: 3, tokens: 100}, scOpt{runs: 10, passed: 2, tokens: 100}, evals.Regressed, "3/3 -> 2/10"},
		{"repeat 1 pass to fail", scOpt{runs: 1, passed: 1, tokens: 100}, scOpt{runs: 1, passed: 0, tokens: 100}, evals.Regressed, "passed then, fails now"},
		{"repeat 1 fail to pass", scOpt{runs: 1, passed: 0, tokens: 100}, scOpt{runs: 1, passed: 1, tokens: 100}, evals.Improved, "failed then, passes now"},
		{"repeat 1 failing both", scOpt{runs: 1, passed: 0, tokens: 100}, scOpt{runs: 1, passed: 0, tokens: 100}, evals.Unchanged, ""},
		{"3x tokens", scOpt{runs: 1, passed: 1, tokens: 140}, scOpt{runs: 1, passed: 1, tokens: 420}, evals.Regressed, "tokens 140 -> 420 (+200%, beyond tolerance 10%)"},
		{"tokens +10% is within", scOpt{runs: 1, passed: 1, tokens: 1000}, scOpt{runs: 1, passed: 1, tokens: 1100}, evals.Unchanged, ""},
		{"tokens halved", scOpt{runs: 1, passed: 1, tokens: 1000}, scOpt{runs: 1, passed: 1, tokens: 500}, evals.Improved, "tokens 1000 -> 500 (-50%, better than tolerance 10%)"},
		{"cost +20%", scOpt{runs: 2, passed: 2, cost: 0.010}, scOpt{runs: 2, passed: 2, cost: 0.012}, evals.Regressed, "cost $0.0100 -> $0.0120 (+20%"},
		{"cost from 0", scOpt{runs: 1, passed: 1}, scOpt{runs: 1, passed: 1, cost: 0.001}, evals.Regressed, "cost $0.0000 -> $0.0010 (from 0"},
		{"wall jitter of fast runs", scOpt{runs: 1, passed: 1, ms: 10}, scOpt{runs: 1, passed: 1, ms: 900}, evals.Unchanged, ""},
		{"wall doubled", scOpt{runs: 1, passed: 1, ms: 2000}, scOpt{runs: 1, passed: 1, ms: 4000}, evals.Regressed, "wall 2.0s -> 4.0s (+100%"},
		{"turns not judged by default", scOpt{runs: 1, passed: 1, turns: 3}, scOpt{runs: 1, passed: 1, turns: 30}, evals.Unchanged, ""},
		{"better rate but 3x tokens", scOpt{runs: 1, passed: 0, tokens: 100}, scOpt{runs: 1, passed: 1, tokens: 300}, evals.Regressed, "tokens"},
		{"means skip runs with no session", scOpt{runs: 2, passed: 2, tokens: 100}, scOpt{runs: 2, passed: 2, tokens: 100, noSession: true}, evals.Unchanged, ""},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			tt.base.name, tt.cur.name = "x", "x"
			c, err := evals.Compare(mkReport(mkScenario(tt.base)), mkReport(mkScenario(tt.cur)), evals.CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d := verdictOf(t, c, "x")
			reasons := strings.Join(d.Reasons, "; ")
			if d.Verdict != tt.want || !strings.Contains(reasons, tt.reason) {
				t.Errorf("verdict %s (%s), want %s with %q", d.Verdict, reasons, tt.want, tt.reason)
			}
			if wantOK := tt.want != evals.Regressed; c.OK != wantOK {
				t.Errorf("comparison ok = %v, want %v", c.OK, wantOK)
			}
		})
	}
}

// TestCompareMissingAndNew: a scenario only the baseline has fails the
// gate (unless allowed); one only the current report has is new and does
// not; shards and filters excuse what they were not meant to run.
func TestCompareMissingAndNew(t *testing.T) {
	t.Parallel()
	base := mkReport(mkScenario(scOpt{name: "a", index: 0, runs: 1, passed: 1}), mkScenario(scOpt{name: "b", index: 1, runs: 1, passed: 1}),
		mkScenario(scOpt{name: "c", index: 2, runs: 1, passed: 1}))
	tests := []struct {
		what      string
		cur       *evals.Report
		opts      evals.CompareOptions
		missing   []string
		newOnes   []string
		ok        bool
		unchanged int
	}{
		{"all there", mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1}), mkScenario(scOpt{name: "b", index: 1, runs: 1, passed: 1}), mkScenario(scOpt{name: "c", index: 2, runs: 1, passed: 1})),
			evals.CompareOptions{}, nil, nil, true, 3},
		{"dropped two of three", mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1})), evals.CompareOptions{}, []string{"b", "c"}, nil, false, 1},
		{"allowed", mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1})), evals.CompareOptions{AllowMissing: true}, []string{"b", "c"}, nil, true, 1},
		{"new one", mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1}), mkScenario(scOpt{name: "b", index: 1, runs: 1, passed: 1}),
			mkScenario(scOpt{name: "c", index: 2, runs: 1, passed: 1}), mkScenario(scOpt{name: "d", index: 3, runs: 1, passed: 0})), evals.CompareOptions{}, nil, []string{"d"}, true, 3},
		{"shard 1/2 holds indexes 0 and 2", withShards(mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1})), evals.Shard{Index: 1, Count: 2}),
			evals.CompareOptions{}, []string{"c"}, nil, false, 1},
		{"shard 2/2 holds index 1", withShards(mkReport(mkScenario(scOpt{name: "b", index: 1, runs: 1, passed: 1})), evals.Shard{Index: 2, Count: 2}),
			evals.CompareOptions{}, nil, nil, true, 1},
		{"a scenario that moved to another shard is that shard's", withNames(withShards(mkReport(mkScenario(scOpt{name: "b", runs: 1, passed: 1})), evals.Shard{Index: 1, Count: 2}), "b", "a", "c"),
			evals.CompareOptions{}, []string{"c"}, nil, false, 1},
		{"one deleted from the suite is missing in its old shard", withNames(withShards(mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1})), evals.Shard{Index: 1, Count: 2}), "a", "b"),
			evals.CompareOptions{}, []string{"c"}, nil, false, 1},
		{"filter excuses what it does not match", withFilter(mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1})), "^(a|c)$"),
			evals.CompareOptions{}, []string{"c"}, nil, false, 1},
		{"a filter that does not compile excuses nothing", withFilter(mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1})), "("),
			evals.CompareOptions{}, []string{"b", "c"}, nil, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			c, err := evals.Compare(base, tt.cur, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var missing, newOnes []string
			for _, d := range c.Scenarios {
				switch d.Verdict {
				case evals.Missing:
					missing = append(missing, d.Name)
				case evals.New:
					newOnes = append(newOnes, d.Name)
				}
			}
			if strings.Join(missing, ",") != strings.Join(tt.missing, ",") || strings.Join(newOnes, ",") != strings.Join(tt.newOnes, ",") ||
				c.OK != tt.ok || c.Unchanged != tt.unchanged || c.Missing != len(tt.missing) || c.New != len(tt.newOnes) {
				t.Errorf("missing %v, new %v, ok %v, %d unchanged; want missing %v, new %v, ok %v, %d unchanged",
					missing, newOnes, c.OK, c.Unchanged, tt.missing, tt.newOnes, tt.ok, tt.unchanged)
			}
		})
	}
}

func withShards(r *evals.Report, sh ...evals.Shard) *evals.Report { r.Shards = sh; return r }
func withNames(r *evals.Report, names ...string) *evals.Report    { r.SuiteNames = names; return r }
func withFilter(r *evals.Report, f string) *evals.Report          { r.Filter = f; return r }

func TestCompareRefuses(t *testing.T) {
	t.Parallel()
	ok := mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1}))
	dup := mkReport(mkScenario(scOpt{name: "a", runs: 1, passed: 1}), mkScenario(scOpt{name: "a", index: 1, runs: 1, passed: 1}))
	if _, err := evals.Compare(dup, ok, evals.CompareOptions{}); !errors.Is(err, evals.ErrDuplicateScenario) {
		t.Errorf("baseline with a duplicate name: err %v, want ErrDuplicateScenario", err)
	}
	if _, err := evals.Compare(ok, dup, evals.CompareOptions{}); !errors.Is(err, evals.ErrDuplicateScenario) {
		t.Errorf("current with a duplicate name: err %v, want ErrDuplicateScenario", err)
	}
	for _, a := range []float64{-0.1, 1, 2, math.NaN()} {
		if _, err := evals.Compare(ok, ok, evals.CompareOptions{Alpha: a}); err == nil || !strings.Contains(err.Error(), "between 0 and 1") {
			t.Errorf("alpha %g: err %v, want one naming the range", a, err)
		}
	}
}

// TestFisherOneSided: known values, and the identities every table keeps.
func TestFisherOneSided(t *testing.T) {
	t.Parallel()
	known := []struct {
		pb, nb, pc, nc int
		worse          float64
	}{
		{5, 5, 0, 5, 1.0 / 252},
		{5, 5, 4, 5, 0.5},
		{5, 5, 1, 5, 6.0 / 252},
		{5, 5, 5, 5, 1},
		{1, 1, 0, 1, 0.5},
		{10, 10, 0, 10, 1.0 / 184756},
		// R: fisher.test(matrix(c(3,1,1,3),2), alternative="greater")$p.value = 0.2428571
		{3, 4, 1, 4, 17.0 / 70},
	}
	for _, k := range known {
		w, _ := evals.FisherOneSided(k.pb, k.nb, k.pc, k.nc)
		if math.Abs(w-k.worse) > 1e-9 {
			t.Errorf("FisherOneSided(%d/%d, %d/%d) worse = %.9f, want %.9f", k.pb, k.nb, k.pc, k.nc, w, k.worse)
		}
	}
	for nb := 1; nb <= 8; nb++ {
		for nc := 1; nc <= 8; nc++ {
			for pb := 0; pb <= nb; pb++ {
				for pc := 0; pc <= nc; pc++ {
					w, b := evals.FisherOneSided(pb, nb, pc, nc)
					w2, b2 := evals.FisherOneSided(pc, nc, pb, nb)
					if math.Abs(w-b2) > 1e-12 || math.Abs(b-w2) > 1e-12 {
						t.Errorf("(%d/%d, %d/%d): worse %g better %g, swapped sides give better %g worse %g", pb, nb, pc, nc, w, b, b2, w2)
					}
					if w <= 0 || w > 1 || b <= 0 || b > 1 || w+b < 1-1e-12 {
						t.Errorf("(%d/%d, %d/%d): worse %g + better %g must be p-values summing to at least 1", pb, nb, pc, nc, w, b)
					}
				}
			}
		}
	}
}

func TestParseTolerance(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   string
		want string
	}{
		{"", "cost=10%,tokens=10%,wall=50%"},
		{"cost=10%,tokens=10%,wall=50%", "cost=10%,tokens=10%,wall=50%"},
		{"cost=5%", "cost=5%,tokens=10%,wall=50%"},
		{" wall = off , turns=20% ", "cost=10%,tokens=10%,turns=20%"},
		{"cost=off,tokens=off,wall=off", "none"},
		{"tool_calls=0%", "cost=10%,tokens=10%,wall=50%,tool_calls=0%"},
		{"tokens=12.5%", "cost=10%,tokens=12.5%,wall=50%"},
	}
	for _, g := range good {
		tol, err := evals.ParseTolerance(g.in)
		if err != nil || tol.String() != g.want {
			t.Errorf("ParseTolerance(%q) = %v, %v; want %s", g.in, tol, err, g.want)
		}
	}
	bad := []struct{ in, err string }{
		{"cost=10", `needs a % (a share of the baseline's mean, e.g. cost=10%) or off`},
		{"cost=-1%", "not a non-negative percentage"},
		{"cost=abc%", "not a non-negative percentage"},
		{"cost=NaN%", "not a non-negative percentage"},
		{"cost=Inf%", "not a non-negative percentage"},
		{"price=10%", `unknown metric "price" (one of cost, tokens, turns, wall, tool_calls)`},
		{"cost=1%,cost=2%", "cost is given twice"},
		{"cost", "is not METRIC=N% or METRIC=off"},
		{"cost=", "is not METRIC=N% or METRIC=off"},
		{"cost=1%,", "is not METRIC=N% or METRIC=off"},
	}
	for _, b := range bad {
		if _, err := evals.ParseTolerance(b.in); err == nil || !strings.Contains(err.Error(), b.err) {
			t.Errorf("ParseTolerance(%q) err = %v, want it to contain %q", b.in, err, b.err)
		}
	}
}

// TestTrials: the estimators equal the share of k-subsets of the runs
// with at least one pass (pass@k) and with only passes (pass^k), counted
// by brute force over every subset.
func TestTrials(t *testing.T) {
	t.Parallel()
	for n := 2; n <= 10; n++ {
		for c := 0; c <= n; c++ {
			tr := evals.Trials(n, c)
			if len(tr) != n {
				t.Fatalf("Trials(%d, %d) has %d rows, want %d", n, c, len(tr), n)
			}
			for _, x := range tr {
				any, all, subsets := 0, 0, 0
				for mask := uint(0); mask < 1<<n; mask++ {
					if bits.OnesCount(mask) != x.K {
						continue
					}
					subsets++
					passes := bits.OnesCount(mask & (1<<c - 1)) // runs 0..c-1 passed
					if passes > 0 {
						any++
					}
					if passes == x.K {
						all++
					}
				}
				wantAt, wantHat := float64(any)/float64(subsets), float64(all)/float64(subsets)
				if math.Abs(x.PassAtK-wantAt) > 1e-12 || math.Abs(x.PassHatK-wantHat) > 1e-12 {
					t.Errorf("n %d c %d k %d: pass@k %g pass^k %g, want %g %g", n, c, x.K, x.PassAtK, x.PassHatK, wantAt, wantHat)
				}
			}
		}
	}
	if tr := evals.Trials(1, 1); tr != nil {
		t.Errorf("Trials(1, 1) = %v, want none for a single run", tr)
	}
	tr := evals.Trials(5, 4)
	if tr[0].PassAtK != 0.8 || tr[1].PassHatK != 0.6 || tr[1].PassAtK != 1 || tr[4].PassHatK != 0 {
		t.Errorf("Trials(5, 4) = %+v, want pass@1 0.8, pass@2 1, pass^2 0.6, pass^5 0", tr)
	}
}
