package evals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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

// Writer is the CI job that wrote a report, as its environment names it.
type Writer struct {
	// System is github-actions or gitlab-ci.
	System     string `json:"system"`
	Repository string `json:"repository,omitempty"`
	// Workflow is GitHub's workflow ref (owner/repo/.github/workflows/
	// file.yml@ref) or GitLab's pipeline id.
	Workflow string `json:"workflow,omitempty"`
	Job      string `json:"job,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	// Ref is the git ref the job ran on, Event what started it (push,
	// pull_request, schedule, ...).
	Ref   string `json:"ref,omitempty"`
	Event string `json:"event,omitempty"`
}

// DetectWriter names the CI job running this process (GitHub Actions,
// GitLab CI), nil outside CI.
func DetectWriter(getenv func(string) string) *Writer {
	switch {
	case getenv("GITHUB_ACTIONS") == "true":
		return &Writer{System: "github-actions", Repository: getenv("GITHUB_REPOSITORY"), Workflow: getenv("GITHUB_WORKFLOW_REF"),
			Job: getenv("GITHUB_JOB"), RunID: joinNonEmpty(getenv("GITHUB_RUN_ID"), getenv("GITHUB_RUN_ATTEMPT")),
			Ref: getenv("GITHUB_REF"), Event: getenv("GITHUB_EVENT_NAME")}
	case getenv("GITLAB_CI") == "true":
		return &Writer{System: "gitlab-ci", Repository: getenv("CI_PROJECT_PATH"), Workflow: getenv("CI_PIPELINE_ID"),
			Job: getenv("CI_JOB_NAME"), RunID: getenv("CI_JOB_ID"), Ref: getenv("CI_COMMIT_REF_NAME"), Event: getenv("CI_PIPELINE_SOURCE")}
	}
	return nil
}

func joinNonEmpty(a, b string) string {
	if b == "" {
		return a
	}
	return a + "." + b
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
//
// With a signer, the run row carries the signature of the report's bytes
// (see TrustedKeysEnv for who trusts it).
func HistoryRows(r *Report, signer *Signer) ([]history.EvalRow, error) {
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
	if signer != nil {
		run.Signature = signer.Sign(b)
	}
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
// history.History.SealEval), signed by signer when it is not nil:
// idempotent, the same report twice is one.
func SealReport(h *history.History, r *Report, signer *Signer) (history.EvalSealResult, error) {
	rows, err := HistoryRows(r, signer)
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
//
// Trusted, when set, are the keys a baseline must be signed by (see
// TrustedKeysEnv): a report without a signature of one of them is skipped
// with a warning to Warn naming it.
type HistorySource struct {
	DB      Querier
	Suite   string
	Trusted *TrustedKeys
	Warn    io.Writer
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
	if src.Trusted != nil {
		return signedBaseline(ctx, src, branch, where)
	}
	res, err := src.DB.Query(ctx, "SELECT report_digest, report FROM eval_runs WHERE "+where+" ORDER BY started DESC, report_digest LIMIT 1")
	if err != nil {
		return nil, fmt.Errorf("evals: history baseline: %w", err)
	}
	if len(res.Rows) == 0 {
		return nil, noBaseline(src, branch, "")
	}
	digest, _ := res.Rows[0][0].(string)
	text, _ := res.Rows[0][1].(string)
	return decodeBaseline(digest, text, branch)
}

// noBaseline is ErrNoBaseline for branch, saying what was looked for.
func noBaseline(src HistorySource, branch, signed string) error {
	suite := ""
	if src.Suite != "" {
		suite = " of suite " + src.Suite
	}
	return fmt.Errorf("%w: no complete %sreport%s on branch %q (a report is sealed by agentctl eval of the whole suite, "+
		"or eval merge of all its shards, run with --branch or in CI on that branch; push it with agentctl history push and read it with --remote)",
		ErrNoBaseline, signed, suite, branch)
}

// decodeBaseline checks a report's bytes against the digest that names it
// and decodes them.
func decodeBaseline(digest, text, branch string) (*Report, error) {
	sum := sha256.Sum256([]byte(text))
	if got := hex.EncodeToString(sum[:]); got != digest {
		return nil, fmt.Errorf("evals: history baseline: the report %s of branch %q is damaged (its bytes hash to %.16s)", digestName(digest), branch, got)
	}
	var r Report
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return nil, fmt.Errorf("evals: history baseline: report %s: %w", digestName(digest), err)
	}
	if r.Version == 0 || r.Version > ReportVersion {
		return nil, fmt.Errorf("evals: history baseline: report %s has version %d, this agentctl reads up to %d", digestName(digest), r.Version, ReportVersion)
	}
	return &r, nil
}

// maxUntrusted bounds the reports with a signature that fails to verify
// whose bytes a baseline lookup reads before giving up: each costs a read
// of a whole report, and a flood of them is an attack, not a history.
const maxUntrusted = 32

// signedBaseline is the newest complete report of branch that a trusted
// key signed. The branch, suite and completeness in the row are what its
// writer claimed; those in the signed bytes are checked again.
func signedBaseline(ctx context.Context, src HistorySource, branch, where string) (*Report, error) {
	warn := src.Warn
	if warn == nil {
		warn = io.Discard
	}
	res, err := src.DB.Query(ctx, "SELECT report_digest, coalesce(signature, ''), started FROM eval_runs WHERE "+where+" ORDER BY started DESC, report_digest LIMIT 10000")
	if err != nil {
		return nil, fmt.Errorf("evals: history baseline: %w", err)
	}
	untrusted := 0
	for _, row := range res.Rows {
		digest, _ := row[0].(string)
		sig, _ := row[1].(string)
		name := fmt.Sprintf("report %s (started %s)", digestName(digest), startedText(row[2]))
		if sig == "" {
			fmt.Fprintf(warn, "agentctl: warning: baseline history:%s: skipping %s: it is not signed, and %s names the keys a baseline must be signed by\n", branchName(branch), name, TrustedKeysEnv)
			continue
		}
		if untrusted++; untrusted > maxUntrusted {
			return nil, fmt.Errorf("evals: history baseline: more than %d reports of branch %q carry signatures that do not verify: someone who can write to the history is forging reports; remove them and check who holds write access", maxUntrusted, branch)
		}
		rr, err := src.DB.Query(ctx, "SELECT report FROM eval_runs WHERE report_digest = "+sqlString(digest)+" AND signature = "+sqlString(sig)+" LIMIT 1")
		if err != nil {
			return nil, fmt.Errorf("evals: history baseline: %w", err)
		}
		if len(rr.Rows) == 0 {
			continue
		}
		text, _ := rr.Rows[0][0].(string)
		if err := src.Trusted.Verify([]byte(text), sig); err != nil {
			fmt.Fprintf(warn, "agentctl: warning: baseline history:%s: skipping %s: its signature does not verify with the keys of %s (forged, tampered with, or signed by another key)\n", branchName(branch), name, TrustedKeysEnv)
			continue
		}
		r, err := decodeBaseline(digest, text, branch)
		if err != nil {
			return nil, err
		}
		if r.Branch != branch || (src.Suite != "" && r.Suite != src.Suite) || !r.Complete() {
			fmt.Fprintf(warn, "agentctl: warning: baseline history:%s: skipping %s: its row claims what its signed report does not (branch, suite or completeness)\n", branchName(branch), name)
			continue
		}
		return r, nil
	}
	return nil, noBaseline(src, branch, "signed ")
}

// digestName is a digest as a warning may print it: 16 hex digits, or
// quoted when the history holds something else there.
func digestName(d string) string {
	if len(d) >= 16 && strings.Trim(d[:16], "0123456789abcdef") == "" {
		return d[:16]
	}
	return strconv.QuoteToASCII(d)
}

func startedText(v any) string {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(time.RFC3339)
	}
	return "unknown"
}

// branchName is the branch as a warning prints it: quoted when it could
// break the line or start a workflow command.
func branchName(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ':' }) {
		return strconv.QuoteToASCII(s)
	}
	return s
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
