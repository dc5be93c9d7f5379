package evals

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"
)

// ReportVersion is the version of the JSON report's schema. Fields are
// only ever added.
const ReportVersion = 1

// Report is the outcome of a suite (or of one shard of it): the --json
// file of `agentctl eval`, the input of `agentctl eval merge`.
type Report struct {
	Version     int    `json:"version"`
	Suite       string `json:"suite"`
	SuitePath   string `json:"suite_path"`
	SuiteSHA256 string `json:"suite_sha256"`
	// SuiteScenarios is the number of scenarios in the whole suite file.
	SuiteScenarios int `json:"suite_scenarios"`
	// SuiteNames are the names of all the suite file's scenarios, in
	// file order, whichever ran: a comparison tells a scenario another
	// shard or the filter left out from one that did not run.
	SuiteNames []string `json:"suite_names,omitempty"`
	// Shards lists the shards the report covers (empty: the whole suite).
	Shards []Shard `json:"shards,omitempty"`
	Filter string  `json:"filter,omitempty"`
	// Repeat is the --repeat that overrode every scenario's repeat (0:
	// the suite's own).
	Repeat int `json:"repeat,omitempty"`
	// Branch and Commit say what the suite ran against (CI's variables,
	// git, or flags), so a later run can take this report as its baseline
	// by branch; empty when unknown.
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Writer says which CI job wrote the report (DetectWriter). It is what
	// the job's environment said, so it informs and proves nothing alone:
	// trust comes from a signature (TrustedKeysEnv).
	Writer  *Writer   `json:"writer,omitempty"`
	Home    string    `json:"home"`
	Started time.Time `json:"started"`
	Millis  int64     `json:"ms"`
	// Scenarios are in suite order.
	Scenarios []ScenarioResult `json:"scenarios"`
	Passed    int              `json:"passed"`
	Failed    int              `json:"failed"`
	Runs      int              `json:"runs"`
	RunsOK    int              `json:"runs_ok"`
	// NotRun counts the scenarios that could not run here (see notRun);
	// they are neither passed nor failed.
	NotRun int `json:"not_run"`
	// OK is true when every scenario ran and met its threshold.
	OK bool `json:"ok"`
	// Comparison is the gate's outcome when the run had a baseline
	// (--baseline); a later comparison reads only the scenarios.
	Comparison *Comparison `json:"comparison,omitempty"`
}

// ScenarioResult is one scenario's repeats and whether enough passed.
type ScenarioResult struct {
	Name string `json:"name"`
	// Index is the scenario's position in the suite file (0-based), Line
	// its line.
	Index     int         `json:"index"`
	Line      int         `json:"line"`
	Repeat    int         `json:"repeat"`
	Threshold float64     `json:"threshold"`
	Need      int         `json:"need"`
	Passed    int         `json:"passed"`
	OK        bool        `json:"ok"`
	Runs      []RunResult `json:"runs"`
	// Trials are pass@k and pass^k for k = 1..runs, for a scenario of two
	// or more runs (see Trials); derived from Runs.
	Trials []Trial `json:"trials,omitempty"`
	// NotRunReason, when set, says why the scenario was not run on this
	// machine (a model's API key or a required command is missing); it
	// has no runs and is neither passed nor failed.
	NotRunReason string `json:"not_run_reason,omitempty"`
}

// RunResult is one repeat of a scenario: its session and its checks.
type RunResult struct {
	Repeat    int    `json:"repeat"`
	SessionID string `json:"session_id,omitempty"`
	Status    string `json:"status,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
	Tokens    int64  `json:"tokens"`
	// Turns are the session's assistant turns (session.State.Turns).
	Turns     int     `json:"turns"`
	ToolCalls int64   `json:"tool_calls"`
	CostUSD   float64 `json:"cost_usd"`
	Millis    int64   `json:"ms"`
	OK        bool    `json:"ok"`
	// Results are the assertions in suite order, then the implicit
	// checks (replay_matches); a run that could not be made has one
	// result of kind "run".
	Results []Result `json:"results"`
}

// Failures returns the results that failed.
func (r RunResult) Failures() []Result {
	var out []Result
	for _, x := range r.Results {
		if !x.OK {
			out = append(out, x)
		}
	}
	return out
}

func (rep *Report) tally() {
	rep.Passed, rep.Failed, rep.Runs, rep.RunsOK, rep.NotRun = 0, 0, 0, 0, 0
	for i := range rep.Scenarios {
		sc := &rep.Scenarios[i]
		sc.Passed = 0
		if sc.NotRunReason != "" {
			sc.OK, sc.Trials = false, nil
			rep.NotRun++
			continue
		}
		for _, r := range sc.Runs {
			rep.Runs++
			if r.OK {
				sc.Passed++
				rep.RunsOK++
			}
		}
		sc.OK = sc.Passed >= sc.Need
		sc.Trials = Trials(len(sc.Runs), sc.Passed)
		if sc.OK {
			rep.Passed++
		} else {
			rep.Failed++
		}
	}
	rep.OK = rep.Failed == 0 && rep.NotRun == 0
}

// NothingRan reports whether scenarios were selected and none of them
// could run: no evidence either way, which must not look like a pass.
func (rep *Report) NothingRan() bool {
	return rep.NotRun > 0 && rep.NotRun == len(rep.Scenarios)
}

// MaxReportBytes bounds a report file ReadReport reads: reports come
// from CI artifacts and buckets, and a suite of a thousand scenarios run
// ten times is a few MiB.
const MaxReportBytes = 256 << 20

// ReadReport reads a --json report file.
func ReadReport(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	if len(b) > MaxReportBytes {
		return nil, fmt.Errorf("read report %s: larger than %d MiB, which no report of agentctl is; is it a report?", path, MaxReportBytes>>20)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	if r.Version == 0 || r.Version > ReportVersion {
		return nil, fmt.Errorf("read report %s: version %d is not one this agentctl reads (%d)", path, r.Version, ReportVersion)
	}
	return &r, nil
}

// Errors of Merge.
var (
	// ErrMergeMismatch: the reports come from different suites (their
	// file digests differ) or different shard counts, filters or
	// --repeat.
	ErrMergeMismatch = errors.New("evals: the reports are not shards of one suite run")
	// ErrMergeOverlap: a scenario is in two reports.
	ErrMergeOverlap = errors.New("evals: shards overlap")
	// ErrMergeIncomplete: some shard is missing.
	ErrMergeIncomplete = errors.New("evals: shards missing")
)

// Merge joins shard reports into one, in suite order. The reports must
// come from the same suite file (same digest), shard count, filter and
// --repeat, be disjoint and, unless partial, cover every shard.
func Merge(reports []*Report, partial bool) (*Report, error) {
	if len(reports) == 0 {
		return nil, errors.New("evals: merge: no reports")
	}
	first := reports[0]
	out := &Report{Version: ReportVersion, Suite: first.Suite, SuitePath: first.SuitePath, SuiteSHA256: first.SuiteSHA256,
		SuiteScenarios: first.SuiteScenarios, SuiteNames: first.SuiteNames, Filter: first.Filter, Repeat: first.Repeat, Home: first.Home, Started: first.Started, Scenarios: []ScenarioResult{}}
	count := 0
	seenShard := map[int]bool{}
	seen := map[int]bool{}
	end := first.Started
	for _, r := range reports {
		if r.SuiteSHA256 != first.SuiteSHA256 || r.Filter != first.Filter || r.Repeat != first.Repeat {
			return nil, fmt.Errorf("%w: %s (sha256 %.12s, filter %q, --repeat %d) and %s (sha256 %.12s, filter %q, --repeat %d)", ErrMergeMismatch,
				first.SuitePath, first.SuiteSHA256, first.Filter, first.Repeat, r.SuitePath, r.SuiteSHA256, r.Filter, r.Repeat)
		}
		if len(r.Shards) == 0 {
			if len(reports) > 1 {
				return nil, fmt.Errorf("%w: a report of the whole suite cannot be merged with others", ErrMergeOverlap)
			}
			count = 0
		}
		for _, sh := range r.Shards {
			switch {
			case count == 0:
				count = sh.Count
			case sh.Count != count:
				return nil, fmt.Errorf("%w: shard counts %d and %d", ErrMergeMismatch, count, sh.Count)
			}
			if seenShard[sh.Index] {
				return nil, fmt.Errorf("%w: shard %s is in two reports", ErrMergeOverlap, sh)
			}
			seenShard[sh.Index] = true
			out.Shards = append(out.Shards, sh)
		}
		for _, sc := range r.Scenarios {
			if seen[sc.Index] {
				return nil, fmt.Errorf("%w: scenario %q is in two reports", ErrMergeOverlap, sc.Name)
			}
			seen[sc.Index] = true
			out.Scenarios = append(out.Scenarios, sc)
		}
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if e := r.Started.Add(time.Duration(r.Millis) * time.Millisecond); e.After(end) {
			end = e
		}
	}
	if count > 0 && !partial {
		var missing []string
		for i := 1; i <= count; i++ {
			if !seenShard[i] {
				missing = append(missing, Shard{i, count}.String())
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%w: %v (pass every shard's report, or --partial)", ErrMergeIncomplete, missing)
		}
	}
	if count > 0 && len(seenShard) == count {
		out.Shards = nil // the whole suite
	} else {
		sort.Slice(out.Shards, func(i, j int) bool { return out.Shards[i].Index < out.Shards[j].Index })
	}
	slices.SortFunc(out.Scenarios, func(a, b ScenarioResult) int { return a.Index - b.Index })
	out.Millis = end.Sub(out.Started).Milliseconds()
	out.tally()
	return out, nil
}
