// Package query answers SQL over an agentctl home through an in-memory
// DuckDB database (github.com/duckdb/duckdb-go/v2).
//
// Open reads the history's manifest (package history) and every session
// log that is not sealed as it is now — running, crashed, resumed since it
// was sealed, or never sealed — and writes those logs' events to a
// temporary Parquet file with the history's schema (none when there are
// none). It finds those logs from the manifest's snapshot of the sessions
// folder, and stats only the logs of sealed sessions that are not final,
// so a query over a sealed, compacted history touches a handful of files
// whatever the number of sessions. The views:
//
//	events      read_parquet over the live history files (less the rows
//	            the manifest marks dropped, and less the sealed rows of
//	            sessions read from their logs), UNION ALL the temp file, if any;
//	            columns match by name, so files sealed by an older agentctl
//	            (without the columns added since) read with those NULL
//	sessions    one row per session, with session.State's figures by the
//	            definitions of its doc (status, model in force, tool_calls
//	            = its rows of tool_calls, ...); a log with no end is running
//	            while a process holds its lease, crashed when none does,
//	            corrupt when damaged; a test holds the view to the Go fold;
//	            a sealed session's figures are read from its history
//	            file's summary (summaries.go: the same SQL over the file's
//	            rows, written once by the first query that needs it);
//	            also the cache token sums, refusals, truncations (turns cut
//	            at the output cap), retries (model tries after the first
//	            of a call), for an import its imported_from and
//	            source_status (the end state the source recorded), and the
//	            header's parent_session_id, parent_seq (a subagent's: its
//	            parent's task intent) and forked_from (a fork's); origin
//	            (run, proxy, collect, import), turns, reason (the ending
//	            session_finished's), finish_reason (the last model call's),
//	            tags (MAP(VARCHAR, VARCHAR): tags['env'] = 'ci'),
//	            user_id and an import's not_recorded (VARCHAR[]: what
//	            its source does not record, 'usage' making its tokens
//	            and cost unknown), from the header
//	tool_calls  one row per call (its id and requesting message) that was
//	            dispatched or answered: its last tool_intent joined with its
//	            last tool_result, and a later reconciliation's outcome; args
//	            are the intent's, else the requesting message's
//	model_calls one row per model_call event (every provider request, a
//	            failed or retried one too): provider, model, tokens (input,
//	            output, cache reads and writes), cost_usd, latency_ms,
//	            finish_reason, error_type and error, attempt (1 for a call
//	            tried once); its sums per session are the sessions view's
//	eval_runs   one row per eval report sealed into the history (package
//	            history, EvalRow), the home's and a remote's, a report in
//	            both read once: report_digest, suite, branch, commit,
//	            started, complete, ok, counts, and the report as JSON
//	eval_results one row per scenario repeat of those reports: scenario,
//	            repeat, passed, failed and failed_assertions, session_id,
//	            cost_usd, tokens, tool_calls, ms, with its run's suite,
//	            branch, commit and started
//
// # Example
//
//	db, err := query.Open(ctx, ".agentctl", os.Stderr)
//	defer db.Close()
//	res, err := db.Query(ctx, "SELECT status, count(*) FROM sessions GROUP BY ALL")
//	query.Write(os.Stdout, res, "table")
//
// # Errors
//
// SQL errors are *SQLError with DuckDB's text and the view names. A history
// file DuckDB cannot read is checked, reported by name on the warning
// writer, and left out; its sessions are read from their logs when these
// still exist, and the query runs again. If a compaction swapped the
// manifest while the query ran, the views are rebuilt and the query retried.
//
// # Concurrency
//
// A DB is for one goroutine. Any number of processes may query while
// others seal or compact.
package query
