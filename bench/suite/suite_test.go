package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestParseBench reads the result line of a benchmark, sub-benchmarks and
// the -N GOMAXPROCS suffix included, and no other benchmark's line.
func TestParseBench(t *testing.T) {
	out := `goos: linux
BenchmarkAppendSingle-2         	     200	   2345678 ns/op	       426.3 events/s
BenchmarkAppendSingleX-2        	     200	   1000000 ns/op	       999.0 events/s
BenchmarkProject/events=10000-2 	       3	  3360000 ns/op	       336.0 ns/event
BenchmarkProject/events=100000  	       3	 33200000 ns/op	       332.0 ns/event
PASS`
	tests := []struct {
		name string
		want sample
		ok   bool
	}{
		{"BenchmarkAppendSingle", sample{"ns/op": 2345678, "s": 0.002345678, "events/s": 426.3}, true},
		{"BenchmarkProject/events=10000", sample{"ns/op": 3360000, "s": 0.00336, "ns/event": 336}, true},
		{"BenchmarkProject/events=100000", sample{"ns/op": 33200000, "s": 0.0332, "ns/event": 332}, true},
		{"BenchmarkProject", nil, false},
		{"BenchmarkMissing", nil, false},
	}
	for _, tt := range tests {
		got, ok := parseBench(out, tt.name)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseBench(%s) = %v, %v, want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// fixed is a measure that returns given values in turn, or an error.
type fixed struct {
	vals  []float64
	err   error
	calls int
}

func (f *fixed) run(*env) (sample, error) {
	if f.err != nil {
		return nil, f.err
	}
	v := f.vals[f.calls%len(f.vals)]
	f.calls++
	return sample{"s": v}, nil
}

func TestRunRow(t *testing.T) {
	tests := []struct {
		name       string
		a, b       *fixed
		goal       *goal
		warm       bool
		wantStatus string
		wantRatio  float64 // 0: none
		wantCalls  int     // of a
	}{
		{"ratio met", &fixed{vals: []float64{1, 9, 2}}, &fixed{vals: []float64{4, 4, 4}}, ratioAtMost(0.5, ""), false, "met", 0.5, 3},
		{"ratio missed", &fixed{vals: []float64{3}}, &fixed{vals: []float64{4}}, ratioAtMost(0.5, ""), false, "missed", 0.75, 3},
		{"at least", &fixed{vals: []float64{30}}, &fixed{vals: []float64{2}}, ratioAtLeast(10, ""), false, "met", 15, 3},
		{"value", &fixed{vals: []float64{0.6}}, nil, valueAtLeast(1, ""), false, "missed", 0, 3},
		{"no goal", &fixed{vals: []float64{1}}, nil, nil, false, "reported", 0, 3},
		{"warm-up not counted", &fixed{vals: []float64{100, 100, 1, 1}}, nil, valueAtMost(2, ""), true, "met", 0, 4},
		{"not built", &fixed{err: fmt.Errorf("%w: no BenchmarkX", errNotBuilt)}, nil, nil, false, "not built", 0, 0},
		{"skipped", &fixed{err: fmt.Errorf("%w: no chromium", errSkipped)}, nil, nil, false, "skipped", 0, 0},
		{"failed", &fixed{vals: []float64{1}}, &fixed{err: errors.New("exit 1")}, nil, false, "failed", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := row{name: tt.name, a: tt.a, metric: "s", goal: tt.goal, runs: [2]int{3, 3}, warm: tt.warm}
			if tt.b != nil {
				r.b = tt.b
			}
			res := runRow(&env{quick: true}, r, map[measure][]sample{})
			if res.Status != tt.wantStatus {
				t.Errorf("status = %q (%s), want %q", res.Status, res.Note, tt.wantStatus)
			}
			if (res.Ratio == nil) != (tt.wantRatio == 0) || (res.Ratio != nil && *res.Ratio != tt.wantRatio) {
				t.Errorf("ratio = %v, want %v", res.Ratio, tt.wantRatio)
			}
			if tt.a.calls != tt.wantCalls {
				t.Errorf("a ran %d times, want %d", tt.a.calls, tt.wantCalls)
			}
		})
	}
}

// TestSharedMeasure: a measure shared by two rows runs once; the second
// row reuses its samples (the jq runs of the query rows).
func TestSharedMeasure(t *testing.T) {
	shared := &fixed{vals: []float64{10}}
	samples := map[measure][]sample{}
	e := &env{quick: true}
	runRow(e, row{a: &fixed{vals: []float64{1}}, b: shared, metric: "s", runs: [2]int{3, 3}}, samples)
	res := runRow(e, row{a: &fixed{vals: []float64{2}}, b: shared, metric: "s", runs: [2]int{3, 3}}, samples)
	if shared.calls != 3 {
		t.Errorf("shared measure ran %d times, want 3", shared.calls)
	}
	if res.Ratio == nil || *res.Ratio != 0.2 {
		t.Errorf("ratio = %v, want 0.2", res.Ratio)
	}
}

// TestRowsDeclared: every row names a metric and its measures, and names
// are unique (--only and the JSON key on them).
func TestRowsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range rows() {
		if r.name == "" || r.metric == "" || r.a == nil || seen[r.name] {
			t.Errorf("row %+v: needs a unique name, a metric and an agentctl side", r)
		}
		seen[r.name] = true
	}
}

// TestJSONLAfterCompaction: the jq reference still runs once the history
// is compacted (the JSONL does not change), while a query before
// compaction refuses to run after it.
func TestJSONLAfterCompaction(t *testing.T) {
	e := &env{hist: &histData{jsonl: "/h/events.jsonl", compacted: true}}
	if got, err := e.historyJSONL(); got != "/h/events.jsonl" || err != nil {
		t.Errorf("historyJSONL() = %q, %v, want /h/events.jsonl, nil", got, err)
	}
	if _, err := e.history(false); err == nil {
		t.Error("history(false) after compaction: no error")
	}
}

// TestRowsNameBenchmarks: every Go benchmark a row runs exists in one of
// its packages (a renamed benchmark would otherwise show as "not built"
// in the table, a row silently lost).
func TestRowsNameBenchmarks(t *testing.T) {
	for _, r := range rows() {
		for _, m := range []measure{r.a, r.b} {
			g, ok := m.(*gobench)
			if !ok {
				continue
			}
			top, _, _ := strings.Cut(g.name, "/")
			found := false
			for _, pkg := range g.pkgs {
				files, _ := filepath.Glob(filepath.Join("..", "..", pkg, "*_test.go"))
				for _, f := range files {
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(string(b), "\nfunc "+top+"(b *testing.B)") {
						found = true
					}
				}
			}
			if !found {
				t.Errorf("row %q: no func %s(b *testing.B) in %s", r.name, top, strings.Join(g.pkgs, " or "))
			}
		}
	}
}

// TestMCPServerRows: the MCP server has its rows (issue 42): time per
// call and peak RSS of list_sessions at 10k and 100k sessions and of
// show_session's first and late page at 1M events.
func TestMCPServerRows(t *testing.T) {
	want := map[string]bool{
		"BenchmarkListSessions/sessions=10000/first-page s":             false,
		"BenchmarkListSessions/sessions=100000/first-page s":            false,
		"BenchmarkListSessions/sessions=100000/first-page peak-RSS-MiB": false,
		"BenchmarkShowSession/page=first s":                             false,
		"BenchmarkShowSession/page=last s":                              false,
		"BenchmarkShowSession/page=last-cold s":                         false,
		"BenchmarkShowSession/page=last peak-RSS-MiB":                   false,
	}
	for _, r := range rows() {
		for _, m := range []measure{r.a, r.b} {
			if g, ok := m.(*gobench); ok && g.pkgs[0] == "./bench/mcp" {
				want[g.name+" "+r.metric] = true
			}
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("no row measures %s", k)
		}
	}
}
