package query

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/internal/history"
)

// A history file's summary is sessionFacts over its rows, one row per
// session, written once next to the history (history.SummaryDir) by the
// first query that needs the sessions view and read by every later one:
// listing 100,000 sealed sessions then reads 100,000 rows, not the two
// million events they hold (the runs page of `agentctl ui`, MCP's
// list_sessions, `agentctl sessions`). The summary is derived, never the
// truth: a file a reader cannot write (a read-only home, a full disk, a
// confined database) or one whose bytes fail the checksum its name
// carries is folded from the events instead, with the same answer.
//
// A history file never changes once listed, so neither does its summary:
// it is named after the file (history.SummaryName), the file's checksum
// and the digest of the SQL that made it, so a summary of another version
// of the file or of sessionFacts is never read. Readers take no lock;
// two that write the same summary at once write the same bytes, and each
// renames its own temporary file into place.

// filePart is a history file the events view reads and the sessions it
// leaves out (dropped from it, or read from their logs instead). rel and
// crc name it for its summary, kept in sumDir ("": the history's
// summaries folder); a file without crc has none.
type filePart struct {
	abs, rel, crc, sumDir string
	excl                  []string
}

// readParts are the SELECTs over files (at path(f)) less each one's
// excluded sessions: one read_parquet of every file that excludes none.
func readParts(files []filePart, path func(filePart) string) []string {
	var plain, parts []string
	for _, f := range files {
		if len(f.excl) == 0 {
			plain = append(plain, quote(path(f)))
			continue
		}
		qs := make([]string, len(f.excl))
		for i, id := range f.excl {
			qs[i] = quote(id)
		}
		parts = append(parts, fmt.Sprintf("SELECT * FROM read_parquet(%s, hive_partitioning = false) WHERE session_id NOT IN (%s)", quote(path(f)), strings.Join(qs, ", ")))
	}
	if len(plain) > 0 {
		parts = append([]string{fmt.Sprintf("SELECT * FROM read_parquet([%s], hive_partitioning = false, union_by_name = true)", strings.Join(plain, ", "))}, parts...)
	}
	return parts
}

// factsDigest names the definition of a summary's rows: sessionFacts and
// what it reads (the tool_calls query, the columns added to old files).
var factsDigest = func() string {
	h := sha256.Sum256([]byte(sessionFacts + "\x00" + toolCallsSelect + "\x00" + addedColumns))
	return hex.EncodeToString(h[:4])
}()

// factsView makes agentctl.session_facts: the summaries of the history
// files that have one (written now where missing), and sessionFacts over
// every other part of the events view.
func (d *DB) factsView(ctx context.Context) string {
	var have, fold []filePart
	names := map[string][]string{}
	for _, f := range d.files {
		dir := d.summaryDir(f)
		if _, ok := names[dir]; !ok {
			names[dir] = summaryNames(dir)
		}
		if p := d.summary(ctx, f, dir, names[dir]); p != "" {
			g := f
			g.abs = p
			have = append(have, g)
		} else {
			fold = append(fold, f)
		}
	}
	rest := append(readParts(fold, func(f filePart) string { return f.abs }), d.rest...)
	if len(rest) == 0 {
		// Every row has a summary: the fold is of no rows, with the
		// events view's columns.
		rest = append(rest, "SELECT * FROM main.events WHERE false")
	}
	rest = append(rest, addedColumns)
	parts := append(readParts(have, func(f filePart) string { return f.abs }), factsOf("("+strings.Join(rest, "\nUNION ALL BY NAME ")+")"))
	return "CREATE SCHEMA IF NOT EXISTS agentctl;\nCREATE OR REPLACE VIEW agentctl.session_facts AS " + strings.Join(parts, "\nUNION ALL BY NAME ")
}

// summaryDir is where f's summary is kept.
func (d *DB) summaryDir(f filePart) string {
	if f.sumDir != "" {
		return f.sumDir
	}
	return filepath.Join(d.hist.Dir, history.SummaryDir)
}

// summaryNames lists a summaries folder once per making of the views.
func summaryNames(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// summary returns the path of f's summary, verified, making it if there
// is none; "" when f has no checksum to name it by or it cannot be made.
func (d *DB) summary(ctx context.Context, f filePart, dir string, names []string) string {
	if d.foldOnly || f.crc == "" {
		return ""
	}
	prefix := history.SummaryName(f.rel, f.crc, factsDigest)
	for _, n := range names {
		sum, ok := strings.CutPrefix(n, prefix)
		if !ok {
			continue
		}
		sum, ok = strings.CutSuffix(sum, ".parquet")
		p := filepath.Join(dir, n)
		if !ok || strings.Contains(sum, ".") {
			continue
		}
		if d.checked[p] == sum {
			return p
		}
		if got, err := history.FileSum(p); err == nil && got == sum {
			d.checked[p] = sum
			return p
		}
		os.Remove(p) // damaged: made again below
	}
	p, err := d.writeSummary(ctx, f, dir, prefix)
	if err != nil {
		return ""
	}
	return p
}

// writeSummary folds f's sessions into a summary named prefix + its
// checksum.
func (d *DB) writeSummary(ctx context.Context, f filePart, dir, prefix string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-summary-*.parquet")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	// USE_TMP_FILE false: DuckDB writes our temp file itself, not a
	// tmp_ file of its own beside it, which it leaves behind when the
	// write fails (a full disk: one more file per query).
	src := fmt.Sprintf("(SELECT * FROM read_parquet(%s, hive_partitioning = false) UNION ALL BY NAME %s)", quote(f.abs), addedColumns)
	q := fmt.Sprintf("COPY (%s ORDER BY session_id) TO %s (FORMAT parquet, COMPRESSION zstd, USE_TMP_FILE false)", factsOf(src), quote(tmp.Name()))
	if _, err := d.db.ExecContext(ctx, q); err != nil {
		return "", err
	}
	sum, err := history.FileSum(tmp.Name())
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, prefix+sum+".parquet")
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", err
	}
	d.checked[p] = sum
	return p, nil
}
