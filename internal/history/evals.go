package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/vfs"
)

// EvalDir is the folder of the history that holds eval reports' rows (see
// EvalRow), next to the sessions' date partitions.
const EvalDir = "evals"

// EvalRow is one row of an eval report in the history: Record "run" (one
// per report: the eval_runs view) or "result" (one per scenario repeat:
// the eval_results view). Every row carries its report's digest, suite,
// branch, commit and start, so either view answers alone. Columns a kind
// of record does not use hold their zero value (NULL for optional text).
//
// A report is one file, written atomically: a reader sees all of its rows
// or none. The file is named after the report's digest (the SHA-256 of
// the report JSON in the run row's report column), so sealing a report
// twice writes nothing the second time, and the same report pushed from
// two homes is one object.
type EvalRow struct {
	Record       string    `parquet:"record,dict"`
	ReportDigest string    `parquet:"report_digest,dict"`
	Suite        string    `parquet:"suite,dict"`
	SuitePath    string    `parquet:"suite_path,optional,dict"`
	SuiteSHA256  string    `parquet:"suite_sha256,optional,dict"`
	Branch       string    `parquet:"branch,optional,dict"`
	Commit       string    `parquet:"commit,optional,dict"`
	Started      time.Time `parquet:"started,timestamp(microsecond:utc)"`
	// Millis is the report's wall time (run) or the repeat's (result).
	Millis int64 `parquet:"ms"`

	// Run records.
	Complete        bool   `parquet:"complete"` // the whole suite, no filter, nothing interrupted
	OK              bool   `parquet:"ok"`       // every scenario met its threshold
	Scenarios       int64  `parquet:"scenarios"`
	ScenariosPassed int64  `parquet:"scenarios_passed"`
	ScenariosFailed int64  `parquet:"scenarios_failed"`
	Runs            int64  `parquet:"runs"`
	RunsOK          int64  `parquet:"runs_ok"`
	Shards          string `parquet:"shards,optional"`
	Filter          string `parquet:"filter,optional"`
	Report          string `parquet:"report,optional"` // the report, JSON
	// Signature is the signature of Report's bytes by the sealing job's
	// key (evals.Signer: ed25519:<key id>:<base64>), empty when unsigned.
	// It is not part of the digest: the same report is one file.
	Signature string `parquet:"signature,optional"`

	// Result records.
	Scenario         string  `parquet:"scenario,optional,dict"`
	ScenarioIndex    int64   `parquet:"scenario_index"`
	Repeat           int64   `parquet:"repeat"`
	Passed           bool    `parquet:"passed"`
	ScenarioOK       bool    `parquet:"scenario_ok"`
	Status           string  `parquet:"status,optional,dict"`
	Error            string  `parquet:"error,optional"`
	Failed           int64   `parquet:"failed"`                     // assertions that failed
	FailedAssertions string  `parquet:"failed_assertions,optional"` // JSON array of their names
	SessionID        string  `parquet:"session_id,optional"`
	CostUSD          float64 `parquet:"cost_usd"`
	Tokens           int64   `parquet:"tokens"`
	ToolCalls        int64   `parquet:"tool_calls"`
}

// Record kinds of EvalRow.
const (
	EvalRecordRun    = "run"
	EvalRecordResult = "result"
)

// evalName matches the files of EvalDir: eval-<first 16 hex digits of the
// report digest>.parquet under a date partition. Nothing else there is
// read.
var evalName = regexp.MustCompile(`^date=\d{4}-\d{2}-\d{2}/eval-[0-9a-f]{16}\.parquet$`)

// EvalPath returns where the report with digest (hex SHA-256) that
// started at started is kept, relative to the history folder:
// evals/date=YYYY-MM-DD/eval-<digest/16>.parquet.
func EvalPath(started time.Time, digest string) string {
	return path.Join(EvalDir, Partition(started), "eval-"+digest[:min(16, len(digest))]+".parquet")
}

// IsEvalPath reports whether rel (slashes, relative to a history folder
// or a remote's prefix + "history/") names an eval report file.
func IsEvalPath(rel string) bool {
	rest, ok := strings.CutPrefix(rel, EvalDir+"/")
	return ok && evalName.MatchString(rest)
}

// EvalSealResult says what sealing one report did.
type EvalSealResult struct {
	Digest  string `json:"report_digest"`
	File    string `json:"file"` // relative to the history folder
	Rows    int    `json:"rows"`
	Skipped string `json:"skipped,omitempty"`
}

// SealEval writes an eval report's rows (the run row first, then its
// results; see EvalRow) to their file under EvalDir, atomically (temp
// file, fsync, rename, fsync of the folder), under the writer lock. A
// report whose file exists already is skipped: its name is its digest.
func (h *History) SealEval(rows []EvalRow) (EvalSealResult, error) {
	if len(rows) == 0 || rows[0].Record != EvalRecordRun || len(rows[0].ReportDigest) < 16 {
		return EvalSealResult{}, errors.New("history: seal eval: the rows must start with the report's run row, with its digest")
	}
	run := rows[0]
	for _, r := range rows[1:] {
		if r.ReportDigest != run.ReportDigest {
			return EvalSealResult{}, fmt.Errorf("history: seal eval: rows of two reports (%.16s, %.16s)", run.ReportDigest, r.ReportDigest)
		}
	}
	rel := EvalPath(run.Started, run.ReportDigest)
	res := EvalSealResult{Digest: run.ReportDigest, File: rel, Rows: len(rows)}
	unlock, err := LockDir(h.Dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	p := filepath.Join(h.Dir, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err == nil {
		res.Skipped, res.Rows = "already sealed", 0
		return res, nil
	}
	if _, _, err := writeFile(h.fs(), p, rows, h.NoSync); err != nil {
		return res, err
	}
	return res, nil
}

// EvalFiles returns the eval report files of the history, absolute, sorted.
func (h *History) EvalFiles() ([]string, error) {
	root := filepath.Join(h.Dir, EvalDir)
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(h.Dir, p)
		if err == nil && IsEvalPath(filepath.ToSlash(rel)) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: list eval reports: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// ReadEvalRows reads every row of an eval report file. A damaged file
// fails with an error matching ErrCorruptFile that names it.
func ReadEvalRows(path string) ([]EvalRow, error) {
	b, err := vfs.ReadRegular(path)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	rows, err := readAll[EvalRow](b)
	if err != nil {
		return nil, &CorruptFileError{Path: path, Err: err}
	}
	return rows, nil
}
