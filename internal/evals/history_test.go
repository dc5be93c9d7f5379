package evals_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/evals"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
)

// report makes a report of suite with one scenario "a" of n repeats, the
// first pass of which passed, started at day d of 2026.
func report(suite string, d, n, pass int) *evals.Report {
	sc := evals.ScenarioResult{Name: "a", Repeat: n, Threshold: 1, Need: n}
	for i := range n {
		sc.Runs = append(sc.Runs, evals.RunResult{Repeat: i + 1, SessionID: fmt.Sprintf("s%02d%02d", d, i), Status: "done",
			OK: i < pass, Tokens: 100, CostUSD: 0.5, Results: []evals.Result{{Kind: "status", Assertion: "status: done", OK: i < pass}}})
	}
	sc.Passed, sc.OK = pass, pass >= n
	rep := &evals.Report{Version: evals.ReportVersion, Suite: suite, SuiteScenarios: 1,
		Started: time.Date(2026, 1, d, 12, 0, 0, 0, time.UTC), Scenarios: []evals.ScenarioResult{sc}, Runs: n, RunsOK: pass}
	if sc.OK {
		rep.Passed, rep.OK = 1, true
	} else {
		rep.Failed = 1
	}
	return rep
}

func TestBaselineFromHistory(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	h := history.New(home)
	main := evals.Provenance{Branch: "main", Commit: strings.Repeat("a", 40)}
	filtered := report("smoke", 5, 1, 1)
	filtered.Filter = "^a$"
	seal := []struct {
		rep  *evals.Report
		prov evals.Provenance
	}{
		{report("smoke", 1, 2, 2), main},
		{report("smoke", 2, 2, 1), main}, // the newest complete one of main
		{report("smoke", 3, 2, 0), evals.Provenance{Branch: "feature"}},
		{report("other", 4, 2, 2), main},
		{filtered, main}, // newer, but not the whole suite
	}
	for _, s := range seal {
		s.rep.Branch, s.rep.Commit = s.prov.Branch, s.prov.Commit
		res, err := evals.SealReport(h, s.rep, nil)
		if err != nil || res.Skipped != "" {
			t.Fatalf("SealReport = %+v, %v", res, err)
		}
	}
	// Sealing again writes nothing: the file is named after the digest.
	if res, err := evals.SealReport(h, seal[0].rep, nil); err != nil || res.Skipped != "already sealed" {
		t.Fatalf("SealReport again = %+v, %v, want already sealed", res, err)
	}
	// A compaction of the sessions' history leaves the eval files alone.
	if _, err := h.Compact(history.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	db, err := query.Open(ctx, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tests := []struct {
		suite, branch string
		wantDay       int
		wantErr       error
	}{
		{"smoke", "main", 2, nil},
		{"", "feature", 3, nil},
		{"other", "main", 4, nil},
		{"smoke", "release", 0, evals.ErrNoBaseline},
		{"other", "feature", 0, evals.ErrNoBaseline},
	}
	for _, tc := range tests {
		got, err := evals.BaselineFromHistory(ctx, evals.HistorySource{DB: db, Suite: tc.suite}, tc.branch)
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("BaselineFromHistory(%s, %s) = %v, want %v", tc.suite, tc.branch, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Started.Day() != tc.wantDay {
			t.Errorf("BaselineFromHistory(%s, %s) = %v, %v; want the report of day %d", tc.suite, tc.branch, got, err, tc.wantDay)
		}
	}
	// The pass rate of scenario a on main over the last 30 runs, in one query.
	res, err := db.Query(ctx, `SELECT count(*) AS runs, avg(passed::INT) AS pass_rate FROM (
		SELECT passed FROM eval_results WHERE suite = 'smoke' AND branch = 'main' AND scenario = 'a'
		ORDER BY started DESC, "repeat" LIMIT 30)`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows[0]...); got != "5 0.8" {
		t.Errorf("pass rate = %s, want 5 runs at 0.8 (2/2, 1/2, 1/1)", got)
	}
	res, err = db.Query(ctx, `SELECT count(*), count(*) FILTER (WHERE complete), sum(runs) FROM eval_runs`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows[0]...); got != "5 4 9" {
		t.Errorf("eval_runs = %s, want 5 reports, 4 complete, 9 runs", got)
	}
}

// A report whose stored JSON no longer hashes to its digest is an error,
// never a quiet baseline.
func TestBaselineDamaged(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	rep := report("smoke", 1, 1, 1)
	rep.Branch = "main"
	rows, err := evals.HistoryRows(rep, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows[0].Report = strings.Replace(rows[0].Report, `"ok":true`, `"ok":false`, 1)
	if _, err := history.New(home).SealEval(rows); err != nil {
		t.Fatal(err)
	}
	db, err := query.Open(ctx, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := evals.BaselineFromHistory(ctx, evals.HistorySource{DB: db}, "main"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("BaselineFromHistory = %v, want damaged", err)
	}
}

func TestDetectProvenance(t *testing.T) {
	repo := t.TempDir()
	sha := strings.Repeat("b", 40)
	for _, f := range []struct{ path, data string }{
		{".git/HEAD", "ref: refs/heads/topic/x\n"},
		{".git/refs/heads/topic/x", sha + "\n"},
		{"sub/dir/.keep", ""},
	} {
		p := filepath.Join(repo, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name string
		env  func(string) string
		dir  string
		want evals.Provenance
	}{
		{"github push", env("GITHUB_REF_NAME", "main", "GITHUB_SHA", "c1"), repo, evals.Provenance{"main", "c1"}},
		{"github pull request", env("GITHUB_HEAD_REF", "fix", "GITHUB_REF_NAME", "7/merge", "GITHUB_SHA", "c2"), repo, evals.Provenance{"fix", "c2"}},
		{"gitlab", env("CI_COMMIT_REF_NAME", "dev", "CI_COMMIT_SHA", "c3"), repo, evals.Provenance{"dev", "c3"}},
		{"git, from a subfolder", env(), filepath.Join(repo, "sub", "dir"), evals.Provenance{"topic/x", sha}},
		{"ci branch, git commit", env("CI_COMMIT_REF_NAME", "dev"), repo, evals.Provenance{"dev", sha}},
		{"nothing", env(), t.TempDir(), evals.Provenance{}},
	}
	for _, tc := range tests {
		if got := evals.DetectProvenance(tc.env, tc.dir); got != tc.want {
			t.Errorf("%s: DetectProvenance = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
