package evals_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/evals"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// falseAlarmSeed seeds the simulation; the golden file holds its numbers.
const falseAlarmSeed = 31

// TestFalseAlarmRate measures how often the gate calls a regression when
// nothing changed: for each (n, p), 1,000 pairs of reports whose n runs
// a side each pass with the same probability p, compared at alpha 0.05
// (tolerances off: pass rates only). The table is
// testdata/false_alarms.txt, which the README quotes; -update rewrites it.
// Fisher's test is conservative, so every repeated row must be at or
// under alpha; repeat 1 (outcomes compared directly) is for deterministic
// scenarios, and its row shows what it costs on a model that is not:
// p(1-p).
func TestFalseAlarmRate(t *testing.T) {
	t.Parallel()
	const pairs, alpha = 1000, 0.05
	t.Logf("seed %d", falseAlarmSeed)
	rng := rand.New(rand.NewPCG(falseAlarmSeed, 0))
	var b strings.Builder
	fmt.Fprintf(&b, "# agentctl eval gate: false alarms in %d pairs of runs drawn from one pass probability p,\n", pairs)
	fmt.Fprintf(&b, "# alpha %g, n runs a side; go test ./internal/evals -run TestFalseAlarmRate (seed %d)\n", alpha, falseAlarmSeed)
	b.WriteString("n   p     regressed  rate\n")
	draw := func(name string, n int, p float64) evals.ScenarioResult {
		passed := 0
		for range n {
			if rng.Float64() < p {
				passed++
			}
		}
		return mkScenario(scOpt{name: name, runs: n, passed: passed, tokens: 100})
	}
	opts := evals.CompareOptions{Alpha: alpha, Tolerance: evals.Tolerance{}}
	for _, n := range []int{1, 3, 5, 10, 20} {
		for _, p := range []float64{0.5, 0.8, 0.95} {
			alarms := 0
			for range pairs {
				c, err := evals.Compare(mkReport(draw("s", n, p)), mkReport(draw("s", n, p)), opts)
				if err != nil {
					t.Fatal(err)
				}
				if c.Regressed > 0 {
					alarms++
				}
			}
			rate := float64(alarms) / pairs
			fmt.Fprintf(&b, "%-3d %-5.2f %-10d %.3f\n", n, p, alarms, rate)
			if n > 1 && rate > alpha {
				t.Errorf("n %d, p %.2f: %d false alarms in %d pairs (%.3f), more than alpha %g", n, p, alarms, pairs, rate, alpha)
			}
		}
	}
	golden := filepath.Join("testdata", "false_alarms.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./internal/evals -run TestFalseAlarmRate -update writes it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("false-alarm table differs from %s (run with -update, and update the README's numbers):\ngot:\n%s\nwant:\n%s", golden, b.String(), want)
	}
}
