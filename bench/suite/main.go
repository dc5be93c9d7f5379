// Command suite is bench/run: it measures every performance goal of
// agentctl against its reference in one invocation and prints a table of
// medians and ratios (see bench/README.md for what each row means).
//
//	bench/run [--quick] [--json] [--only REGEXP] [--keep] [--table FILE]
//
// Data are generated (deterministic, bench/internal/benchgen) into a temp
// folder. Each row runs its two sides alternately, A B A B, so drift of a
// shared machine falls on both; a side is a whole process where that is
// the honest unit (a command as a user runs it, against jq, tar | zstd, a
// bare DuckDB process), or a Go benchmark run from its package's test
// binary (`-test.bench '^Name$' -test.count 1`), which is how other
// packages' benchmark pairs plug in: one line in rows.go. A row whose
// package or benchmark does not exist yet says "not built".
//
// Exit status: 0 when every row ran (goals met or not: the table is a
// report), 1 when the suite itself could not run (a build failed).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	quick := flag.Bool("quick", false, "the CI subset, smaller data, fewer runs (under 2 minutes on 2 cores)")
	asJSON := flag.Bool("json", false, "print the results as one JSON object instead of the table")
	only := flag.String("only", "", "run only the rows whose name matches this regular expression")
	keep := flag.Bool("keep", false, "keep the temp folder with the data and binaries (its path is printed)")
	table := flag.String("table", "", "print the table of a report saved with --json from this `file`, and run nothing")
	flag.Parse()
	if *table != "" {
		if err := printSaved(*table); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := mainErr(*quick, *asJSON, *only, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// result is one row of the table and of --json.
type result struct {
	Name      string    `json:"name"`
	Metric    string    `json:"metric"`
	Agentctl  *float64  `json:"agentctl,omitempty"`  // median
	Reference *float64  `json:"reference,omitempty"` // median
	Ratio     *float64  `json:"ratio,omitempty"`     // agentctl / reference
	Goal      string    `json:"goal,omitempty"`
	Status    string    `json:"status"` // met, missed, reported, not built, skipped, failed
	Note      string    `json:"note,omitempty"`
	ARuns     []float64 `json:"agentctl_runs,omitempty"`
	BRuns     []float64 `json:"reference_runs,omitempty"`
}

type report struct {
	Mode    string   `json:"mode"`
	Date    string   `json:"date"`
	Machine string   `json:"machine"`
	Seconds float64  `json:"seconds"`
	Rows    []result `json:"rows"`
}

func mainErr(quick, asJSON bool, only string, keep bool) error {
	t0 := time.Now()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "agentctl-bench-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "bench: data and binaries in", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	var re *regexp.Regexp
	if only != "" {
		if re, err = regexp.Compile(only); err != nil {
			return fmt.Errorf("--only: %w", err)
		}
	}
	if os.Getenv("AGENTCTL_JAEGER_BIN") == "" {
		// Where .ci/run builds it.
		p := filepath.Join(os.TempDir(), "agentctl-ci", "jaeger")
		if d := os.Getenv("RUNNER_TEMP"); d != "" {
			p = filepath.Join(d, "agentctl-ci", "jaeger")
		}
		if _, err := os.Stat(p); err == nil {
			os.Setenv("AGENTCTL_JAEGER_BIN", p)
		}
	}
	e := &env{root: root, tmp: tmp, quick: quick, log: os.Stderr}
	rep := report{Mode: "full", Date: t0.UTC().Format(time.RFC3339), Machine: machine()}
	if quick {
		rep.Mode = "quick"
	}
	if err := e.buildBinaries(); err != nil {
		return err
	}
	samples := map[measure][]sample{}
	for _, r := range rows() {
		if (quick && !r.quick) || (re != nil && !re.MatchString(r.name)) {
			continue
		}
		res := runRow(e, r, samples)
		e.logf("%-62s %s", r.name, res.Status)
		rep.Rows = append(rep.Rows, res)
	}
	rep.Seconds = time.Since(t0).Seconds()
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printTable(os.Stdout, rep)
}

// runRow measures both sides of r alternately (reusing the samples of a
// measure an earlier row took) and compares the medians with the goal.
func runRow(e *env, r row, samples map[measure][]sample) result {
	res := result{Name: r.name, Metric: r.metric, Status: "reported"}
	if r.goal != nil {
		res.Goal = r.goal.text
	}
	n := r.runs[1]
	if e.quick {
		n = r.runs[0]
	}
	if n == 0 {
		n = e.size(3, 5)
	}
	sides := []measure{r.a}
	if r.b != nil {
		sides = append(sides, r.b)
	}
	var fresh []measure
	for _, m := range sides {
		if _, ok := samples[m]; !ok {
			fresh = append(fresh, m)
		}
	}
	if r.warm {
		for _, m := range fresh {
			if _, err := m.run(e); err != nil {
				return failed(res, err)
			}
		}
	}
	for i := 0; i < n && len(fresh) > 0; i++ {
		for _, m := range fresh {
			s, err := m.run(e)
			if err != nil {
				return failed(res, err)
			}
			samples[m] = append(samples[m], s)
		}
	}
	a, err := medianOf(samples[r.a], r.metric)
	if err != nil {
		return failed(res, err)
	}
	res.Agentctl, res.ARuns = &a, values(samples[r.a], r.metric)
	if r.b != nil {
		b, err := medianOf(samples[r.b], r.metric)
		if err != nil {
			return failed(res, err)
		}
		ratio := a / b
		res.Reference, res.BRuns, res.Ratio = &b, values(samples[r.b], r.metric), &ratio
	}
	if g := r.goal; g != nil {
		v := a
		switch {
		case g.diff:
			v = a - *res.Reference
		case !g.value:
			v = *res.Ratio
		}
		if (g.max && v <= g.limit) || (!g.max && v >= g.limit) {
			res.Status = "met"
		} else {
			res.Status = "missed"
		}
	}
	return res
}

func failed(res result, err error) result {
	switch {
	case errors.Is(err, errNotBuilt):
		res.Status = "not built"
	case errors.Is(err, errSkipped):
		res.Status = "skipped"
	default:
		res.Status = "failed"
	}
	res.Note = err.Error()
	return res
}

func values(ss []sample, metric string) []float64 {
	var v []float64
	for _, s := range ss {
		if x, ok := s[metric]; ok {
			v = append(v, x)
		}
	}
	return v
}

func medianOf(ss []sample, metric string) (float64, error) {
	v := values(ss, metric)
	if len(v) == 0 {
		return 0, fmt.Errorf("no %q in the results", metric)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], nil
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, nil
}

func printSaved(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: not a report of bench/run --json: %w", path, err)
	}
	return printTable(os.Stdout, rep)
}

func printTable(w io.Writer, rep report) error {
	fmt.Fprintf(w, "agentctl bench/run (%s), %s, %s, %.0f s\n\n", rep.Mode, rep.Date, rep.Machine, rep.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measurement\tagentctl\treference\tratio\tgoal\tstatus")
	var notes []string
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, show(r.Agentctl, r.Metric), show(r.Reference, r.Metric), ratio(r.Ratio), r.Goal, r.Status)
		if r.Note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", r.Name, r.Note))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}
	return nil
}

// show formats a median in the unit the row names: seconds as ms under
// 10 s, bytes and RSS as MB.
func show(v *float64, metric string) string {
	if v == nil {
		return "-"
	}
	switch x := *v; metric {
	case "s", "cpu":
		if x < 10 {
			return fmt.Sprintf("%.1f ms", x*1000)
		}
		return fmt.Sprintf("%.1f s", x)
	case "bytes":
		return fmt.Sprintf("%.2f MB", x/1e6)
	case "rss":
		return fmt.Sprintf("%.0f MB", x)
	case "events/s":
		return fmt.Sprintf("%.0f/s", x)
	default:
		if x >= 100 {
			return fmt.Sprintf("%.0f", x)
		}
		return fmt.Sprintf("%.3g", x)
	}
}

func ratio(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v < 0.1 {
		return fmt.Sprintf("%.4fx (1/%.0f)", *v, 1 / *v)
	}
	return fmt.Sprintf("%.2fx", *v)
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root (run from the repository): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// machine describes where the numbers come from: CPUs, their model, the
// load average at the start, the kernel.
func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	return fmt.Sprintf("%d CPUs (%s), load %s, Linux %s, %s", runtime.NumCPU(), model, load, strings.TrimSpace(string(kernel)), runtime.Version())
}
