package evals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/internal/gitsafe"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/session"
)

// Provenance is what a report was run on: the branch and commit of the
// code under test. It is recorded with the report's rows in the history,
// where `--baseline history:BRANCH` looks it up.
type Provenance struct {
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// DetectProvenance finds the branch and commit the way CI systems give
// them: GitHub Actions' GITHUB_HEAD_REF (a pull request's branch) or
// GITHUB_REF_NAME, and GITHUB_SHA; GitLab's CI_COMMIT_REF_NAME and
// CI_COMMIT_SHA; else the git repository holding dir, read by package
// gitsafe (HEAD's branch and commit; git is not run). What none of them
// gives is left empty.
func DetectProvenance(getenv func(string) string, dir string) Provenance {
	var p Provenance
	for _, k := range []string{"GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			p.Branch = v
			break
		}
	}
	for _, k := range []string{"GITHUB_SHA", "CI_COMMIT_SHA"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			p.Commit = v
			break
		}
	}
	if p.Branch != "" && p.Commit != "" {
		return p
	}
	root := repoRoot(dir)
	if root == "" {
		return p
	}
	if p.Branch == "" {
		if b, err := gitsafe.Branch(root); err == nil {
			p.Branch = b
		}
	}
	if p.Commit == "" {
		if c, err := gitsafe.Head(root); err == nil {
			p.Commit = c
		}
	}
	return p
}

// repoRoot is the nearest folder at or above dir that holds a .git.
func repoRoot(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for range 64 {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
	return ""
}

// Complete reports whether the report is of the whole suite as one run:
// no shard missing, no --filter, every scenario of the file there, and
// no run interrupted. Only complete reports are baselines.
func (r *Report) Complete() bool {
	if len(r.Shards) > 0 || r.Filter != "" || len(r.Scenarios) != r.SuiteScenarios {
		return false
	}
	for _, sc := range r.Scenarios {
		if len(sc.Runs) != sc.Repeat {
			return false
		}
		for _, run := range sc.Runs {
			if run.Status == string(session.StatusInterrupted) || strings.HasPrefix(run.Error, "not run:") {
				return false
			}
		}
	}
	return true
}

// ReportDigest returns the report's JSON as the history stores it and its
// digest (hex SHA-256 of those bytes), which names it there.
func ReportDigest(r *Report) ([]byte, string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, "", fmt.Errorf("evals: encode report: %w", err)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
}

// HistoryRows turns a report into its rows of the history (see
// history.EvalRow): the run row, then one row per scenario repeat in
// suite order. The rows' branch and commit are the report's.
func HistoryRows(r *Report) ([]history.EvalRow, error) {
	b, digest, err := ReportDigest(r)
	if err != nil {
		return nil, err
	}
	var shards []string
	for _, s := range r.Shards {
		shards = append(shards, s.String())
	}
	base := history.EvalRow{ReportDigest: digest, Suite: r.Suite, SuitePath: r.SuitePath, SuiteSHA256: r.SuiteSHA256,
		Branch: r.Branch, Commit: r.Commit, Started: r.Started.UTC()}
	run := base
	run.Record, run.Millis, run.Complete, run.OK = history.EvalRecordRun, r.Millis, r.Complete(), r.OK
	run.Scenarios, run.ScenariosPassed, run.ScenariosFailed = int64(len(r.Scenarios)), int64(r.Passed), int64(r.Failed)
	run.Runs, run.RunsOK, run.Shards, run.Filter, run.Report = int64(r.Runs), int64(r.RunsOK), strings.Join(shards, ","), r.Filter, string(b)
	rows := []history.EvalRow{run}
	for _, sc := range r.Scenarios {
		for _, x := range sc.Runs {
			row := base
			row.Record, row.Scenario, row.ScenarioIndex, row.Repeat = history.EvalRecordResult, sc.Name, int64(sc.Index), int64(x.Repeat)
			row.Passed, row.ScenarioOK, row.Status, row.Error = x.OK, sc.OK, x.Status, x.Error
			row.SessionID, row.CostUSD, row.Tokens, row.ToolCalls, row.Millis = x.SessionID, x.CostUSD, x.Tokens, x.ToolCalls, x.Millis
			failed := []string{}
			for _, f := range x.Failures() {
				failed = append(failed, f.Assertion)
			}
			fb, _ := json.Marshal(failed)
			row.Failed, row.FailedAssertions = int64(len(failed)), string(fb)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// SealReport writes the report's rows into the history h (see
// history.History.SealEval): idempotent, the same report twice is one.
func SealReport(h *history.History, r *Report) (history.EvalSealResult, error) {
	rows, err := HistoryRows(r)
	if err != nil {
		return history.EvalSealResult{}, err
	}
	return h.SealEval(rows)
}

// Querier runs SQL over the views of package query: a *query.DB, of a
// home alone or with a remote's history (query.OpenRemote).
type Querier interface {
	Query(ctx context.Context, q string) (*query.Result, error)
}

var _ Querier = (*query.DB)(nil)

// HistorySource is where BaselineFromHistory looks: the eval_runs view of
// DB, narrowed to the reports of the suite named Suite (all suites when
// empty).
type HistorySource struct {
	DB    Querier
	Suite string
}

// ErrNoBaseline means the history holds no complete report of the branch.
var ErrNoBaseline = errors.New("evals: no baseline in the history")

// BaselineFromHistory returns the newest complete report (Report.Complete)
// of branch in src: the one with the latest started, ties going to the
// smallest digest. The report is the JSON stored in its run row, checked
// against the digest that names it, rather than one rebuilt from the
// result rows: every field of the report (those added later too) comes
// back as it was, and a damaged row is an error, never a quiet baseline.
func BaselineFromHistory(ctx context.Context, src HistorySource, branch string) (*Report, error) {
	if branch == "" {
		return nil, fmt.Errorf("evals: history baseline: no branch given (history:BRANCH)")
	}
	where := "complete AND branch = " + sqlString(branch)
	if src.Suite != "" {
		where += " AND suite = " + sqlString(src.Suite)
	}
	res, err := src.DB.Query(ctx, "SELECT report_digest, report FROM eval_runs WHERE "+where+" ORDER BY started DESC, report_digest LIMIT 1")
	if err != nil {
		return nil, fmt.Errorf("evals: history baseline: %w", err)
	}
	if len(res.Rows) == 0 {
		suite := ""
		if src.Suite != "" {
			suite = " of suite " + src.Suite
		}
		return nil, fmt.Errorf("%w: no complete report%s on branch %q (a report is sealed by agentctl eval of the whole suite, "+
			"or eval merge of all its shards, run with --branch or in CI on that branch; push it with agentctl history push and read it with --remote)",
			ErrNoBaseline, suite, branch)
	}
	digest, _ := res.Rows[0][0].(string)
	text, _ := res.Rows[0][1].(string)
	sum := sha256.Sum256([]byte(text))
	if got := hex.EncodeToString(sum[:]); got != digest {
		return nil, fmt.Errorf("evals: history baseline: the report %.16s of branch %q is damaged (its bytes hash to %.16s)", digest, branch, got)
	}
	var r Report
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return nil, fmt.Errorf("evals: history baseline: report %.16s: %w", digest, err)
	}
	if r.Version == 0 || r.Version > ReportVersion {
		return nil, fmt.Errorf("evals: history baseline: report %.16s has version %d, this agentctl reads up to %d", digest, r.Version, ReportVersion)
	}
	return &r, nil
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
