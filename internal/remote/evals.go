package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/internal/history"
)

// pushEvals uploads the home's eval report files (history/evals/...) that
// the remote lacks, found with one listing. A report file is named after
// its digest and never rewritten, so a key that exists holds it already;
// no push record is kept for them.
func (r *Remote) pushEvals(ctx context.Context, res *PushResult) error {
	h := history.New(r.Home)
	files, err := h.EvalFiles()
	if err != nil || len(files) == 0 {
		return err
	}
	objs, err := r.Store.List(ctx, historyPrefix+history.EvalDir+"/")
	if err != nil {
		return fmt.Errorf("remote: push eval reports: %w", err)
	}
	there := map[string]bool{}
	for _, o := range objs {
		there[o.Key] = true
	}
	for _, p := range files {
		rel, err := filepath.Rel(h.Dir, p)
		if err != nil {
			return err
		}
		key := historyPrefix + filepath.ToSlash(rel)
		if there[key] {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("remote: push eval report: %w", err)
		}
		_, err = r.Store.Put(ctx, key, b, Cond{IfAbsent: true})
		switch {
		case errors.Is(err, ErrExists):
			res.Existing++
		case err != nil:
			return fmt.Errorf("remote: push eval report: %w", err)
		default:
			res.Reports++
			res.Bytes += int64(len(b))
		}
	}
	return nil
}

// checkEvalObject reads a downloaded eval report object whole and checks
// that it is what its key says: rows of one report, the run row first,
// whose digest starts with the key's 16 hex digits. It returns the rows.
func checkEvalObject(p, key string) (int64, error) {
	rows, err := history.ReadEvalRows(p)
	if err != nil {
		var ce *history.CorruptFileError
		if errors.As(err, &ce) {
			return 0, ce.Err
		}
		return 0, err
	}
	want := strings.TrimSuffix(strings.TrimPrefix(path.Base(key), "eval-"), ".parquet")
	if len(rows) == 0 || rows[0].Record != history.EvalRecordRun || !strings.HasPrefix(rows[0].ReportDigest, want) {
		return 0, fmt.Errorf("not the eval report its name says (%s)", want)
	}
	for _, row := range rows {
		if row.ReportDigest != rows[0].ReportDigest {
			return 0, fmt.Errorf("rows of more than one report")
		}
	}
	return int64(len(rows)), nil
}
