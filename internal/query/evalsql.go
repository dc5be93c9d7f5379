package query

// The eval views' questions a reader asks of every history: the suites,
// and one suite's reports with their baseline comparison. The UI's evals
// pages and the MCP server's eval_reports both ask them; $SUITE is
// replaced by the suite's name as an SQL literal.
const (
	// EvalSuitesSQL: one row per suite, its last report's verdict.
	EvalSuitesSQL = `SELECT suite, count(*) AS reports, max(started) AS last_started,
  arg_max(ok, started) AS last_ok, arg_max(branch, started) AS last_branch,
  arg_max(runs_ok, started) AS last_runs_ok, arg_max(runs, started) AS last_runs,
  string_agg(DISTINCT coalesce(branch, '(none)'), ', ' ORDER BY coalesce(branch, '(none)')) AS branches
FROM eval_runs GROUP BY suite ORDER BY last_started DESC, suite`
	// EvalReportsSQL: a suite's reports, newest first, with their runs'
	// cost and tokens and the baseline comparison the report carries.
	EvalReportsSQL = `SELECT r.report_digest, r.branch, r."commit", r.started, r.ms, r.complete, r.ok,
  r.scenarios, r.scenarios_passed, r.scenarios_failed, r.runs, r.runs_ok,
  coalesce(x.cost_usd, 0) AS cost_usd, coalesce(x.tokens, 0) AS tokens,
  CAST(json_extract(r.report, '$.comparison') AS VARCHAR) AS comparison
FROM eval_runs r LEFT JOIN (SELECT report_digest, sum(cost_usd) AS cost_usd, CAST(sum(tokens) AS BIGINT) AS tokens
  FROM eval_results GROUP BY report_digest) x USING (report_digest)
WHERE r.suite = $SUITE ORDER BY r.started DESC, r.report_digest LIMIT 200`
)
