package query

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// evalColumns are the columns of history.EvalRow with their DuckDB types:
// the typed empty source of the eval views when no report is sealed yet.
const evalColumns = `NULL::VARCHAR AS record, NULL::VARCHAR AS report_digest, NULL::VARCHAR AS suite,
  NULL::VARCHAR AS suite_path, NULL::VARCHAR AS suite_sha256, NULL::VARCHAR AS branch, NULL::VARCHAR AS "commit",
  NULL::TIMESTAMP WITH TIME ZONE AS started, NULL::BIGINT AS ms, NULL::BOOLEAN AS complete, NULL::BOOLEAN AS ok,
  NULL::BIGINT AS scenarios, NULL::BIGINT AS scenarios_passed, NULL::BIGINT AS scenarios_failed,
  NULL::BIGINT AS runs, NULL::BIGINT AS runs_ok, NULL::VARCHAR AS shards, NULL::VARCHAR AS filter,
  NULL::VARCHAR AS report, NULL::VARCHAR AS scenario, NULL::BIGINT AS scenario_index, NULL::BIGINT AS "repeat",
  NULL::BOOLEAN AS passed, NULL::BOOLEAN AS scenario_ok, NULL::VARCHAR AS status, NULL::VARCHAR AS error,
  NULL::BIGINT AS failed, NULL::VARCHAR AS failed_assertions, NULL::VARCHAR AS session_id,
  NULL::DOUBLE AS cost_usd, NULL::BIGINT AS tokens, NULL::BIGINT AS tool_calls, NULL::VARCHAR AS signature`

// evalViews are the eval_runs and eval_results views over $SRC, the rows
// of every eval report file (package history, EvalRow). eval_results
// carries its run's suite, branch, commit and started, so "pass rate of a
// scenario on main over the last 30 runs" needs no join.
const evalViews = `CREATE OR REPLACE VIEW main.eval_runs AS
SELECT report_digest, suite, suite_path, suite_sha256, branch, "commit", started, ms, complete, ok,
  scenarios, scenarios_passed, scenarios_failed, runs, runs_ok, nullif(shards, '') AS shards,
  nullif(filter, '') AS filter, report, nullif(signature, '') AS signature
FROM ($SRC) WHERE record = 'run';
CREATE OR REPLACE VIEW main.eval_results AS
SELECT report_digest, suite, branch, "commit", started, scenario, scenario_index, "repeat", passed,
  scenario_ok, status, nullif(error, '') AS error, failed, failed_assertions, session_id, cost_usd,
  tokens, tool_calls, ms
FROM ($SRC) WHERE record = 'result'`

// needEvals reports whether q may use the eval views.
func needEvals(q string) bool {
	q = strings.ToLower(q)
	for _, w := range []string{"eval_", "show", "describe", "summarize", "information_schema", "duckdb_", "pragma"} {
		if strings.Contains(q, w) {
			return true
		}
	}
	return false
}

// ensureEvals creates the eval views if q may use them and they do not
// exist yet.
func (d *DB) ensureEvals(ctx context.Context, q string) error {
	if d.evals || !needEvals(q) {
		return nil
	}
	if err := d.createEvalViews(ctx); err != nil {
		return err
	}
	d.evals = true
	return nil
}

// createEvalViews (re)creates the eval views over the home's eval report
// files and the remote's. A report is one file named after its digest,
// so one in both places (pushed from here, or by two homes) is read once,
// from the home.
func (d *DB) createEvalViews(ctx context.Context) error {
	files, err := d.hist.EvalFiles()
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	seen := map[string]bool{}
	var paths []string
	for _, p := range files {
		seen[filepath.Base(p)] = true
		paths = append(paths, quote(p))
	}
	for _, rp := range d.remote {
		if rp.Eval && !seen[filepath.Base(rp.Path)] {
			seen[filepath.Base(rp.Path)] = true
			paths = append(paths, quote(rp.Path))
		}
	}
	// The typed empty part gives the views every column, those that
	// files written before a column existed lack (signature) too.
	src := "SELECT " + evalColumns + " WHERE false"
	if len(paths) > 0 {
		src = fmt.Sprintf("SELECT * FROM read_parquet([%s], hive_partitioning = false, union_by_name = true) UNION ALL BY NAME %s", strings.Join(paths, ", "), src)
	}
	if _, err := d.db.ExecContext(ctx, strings.ReplaceAll(evalViews, "$SRC", src)); err != nil {
		return fmt.Errorf("query: create eval views: %w", err)
	}
	return nil
}
