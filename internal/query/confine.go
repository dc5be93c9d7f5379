package query

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Confine limits the SQL run on d afterwards to the files its views read
// (the home's history, d's own copy of the unsealed logs and the folders
// of a remote's cached parts and their summaries) and locks
// DuckDB's configuration so that SQL cannot lift the limit again.
//
// DuckDB otherwise reads and writes any file the process can
// (read_text('/etc/passwd'), COPY … TO, ATTACH, INSTALL). agentctl query
// is the user's own SQL at their own prompt and keeps that power; an eval
// suite's sql: assertion is text in a file a pull request can change, run
// by CI with its secrets, so it gets the run's rows and nothing else.
func (d *DB) Confine(ctx context.Context) error {
	if err := d.connect(); err != nil {
		return err
	}
	if d.tmp == "" {
		// A later reload writes the unsealed logs' rows here: it must
		// be among the allowed folders already.
		var err error
		if d.tmp, err = os.MkdirTemp("", "agentctl-query-"); err != nil {
			return fmt.Errorf("query: %w", err)
		}
	}
	var dirs []string
	// A remote's parts are files of its local cache (package remote),
	// outside the home: their folders are read by the views too.
	read := []string{d.hist.Dir, d.tmp}
	seen := map[string]bool{}
	for _, rp := range d.remote {
		for _, dir := range []string{filepath.Dir(rp.Path), rp.SummaryDir} {
			if dir != "" && !seen[dir] {
				seen[dir] = true
				read = append(read, dir)
			}
		}
	}
	for _, p := range read {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
		for _, q := range []string{abs, evalOr(abs)} {
			dirs = append(dirs, quote(strings.TrimSuffix(q, string(filepath.Separator))+string(filepath.Separator)))
		}
	}
	stmts := []string{
		"SET allowed_directories = [" + strings.Join(dirs, ", ") + "]",
		"SET enable_external_access = false",
		"SET lock_configuration = true",
	}
	for _, s := range stmts {
		if _, err := d.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("query: confine the SQL (%s): %w", s, err)
		}
	}
	return nil
}

// evalOr is p with its symlinks resolved, or p when that fails (a history
// folder not made yet).
func evalOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
