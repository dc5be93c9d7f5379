// Package history seals session logs into Parquet and keeps the Parquet
// history of an agentctl home compact. The logs stay the source of truth;
// the history is a projection that can be rebuilt from them.
//
// # Layout
//
//	<home>/history/MANIFEST                              the live files (see Manifest, LoadManifest)
//	<home>/history/LOCK                                  writers' flock
//	<home>/history/date=YYYY-MM-DD/<id>-<lastseq>.parquet   one sealed session
//	<home>/history/date=YYYY-MM-DD/seg-<gen>-<n>.parquet    a compacted segment
//	<home>/history/evals/date=YYYY-MM-DD/eval-<digest/16>.parquet   one eval report
//	<home>/history/summaries/<file>.<crc>.<def>.<crc>.parquet   a live file's summary (package query)
//
// Partitions are Hive-style, by the UTC date the session started, so a
// session's rows are never split across dates. Files are zstd-compressed,
// with row groups of at most RowGroupRows rows; the columns are those of
// Row (the event's JSON names, ts as TIMESTAMP(MICROS), nested values as
// JSON text).
//
// # Summaries
//
// Package query keeps, for each live file, a summary: one row per session
// of its figures (the sessions view's facts), named by SummaryName after
// the file, its checksum, the digest of the SQL that made it and its own
// checksum. They are derived from the file and made again from it when
// missing or damaged; this package only removes them, with their file
// (remove, collectGarbage).
//
// # Eval reports
//
// Each report of `agentctl eval` (and of `eval merge`) is sealed into one
// file of EvalRow rows under evals/, partitioned by the UTC date the eval
// started: one row with record = 'run' (suite, suite_path, suite_sha256,
// branch, commit, started, ms, complete, ok, scenarios, scenarios_passed,
// scenarios_failed, runs, runs_ok, shards, filter, report: the whole
// report as JSON, and signature: an ed25519 signature of the report's
// bytes when the sealing job held a key; see evals.SigningKeyEnv), then one row with record = 'result' per scenario
// repeat (scenario, scenario_index, repeat, passed, scenario_ok, status,
// error, failed, failed_assertions as a JSON array, session_id,
// cost_usd, tokens, tool_calls, ms), each carrying the run's columns
// too. The file is named after the report's digest (report_digest: hex
// SHA-256 of the report column's bytes), written atomically and never
// rewritten, so sealing is idempotent and a reader checks a report
// against its name. Eval files are not in the manifest (they are never
// superseded or compacted; compaction leaves the folder alone); package
// query's eval_runs and eval_results views read them.
//
// # Example
//
//	h := history.New(".agentctl")
//	results, err := h.Seal(id)              // after the run ended
//	res, err := h.Compact(history.CompactOptions{})
//	m, err := h.Manifest()                  // readers: the live files
//
// # Consistency
//
//  1. The manifest is the only list of live files. It is replaced
//     atomically (temp file, fsync, rename, fsync of the folder), and every
//     file it names is durable before it is named.
//  2. A row of file F is live if and only if the manifest maps its session
//     to F. Each file entry also lists the sessions dropped from it, so a
//     reader filters with NOT IN instead of consulting the session map.
//  3. Seal writes the session's file, then swaps in a manifest pointing the
//     session at it. An earlier per-session file of that session is removed
//     after the swap; a segment that held its rows is written again
//     without them (supersede) and swapped in by the same manifest. So
//     sealing twice never duplicates rows, a resumed session's re-seal
//     replaces what was sealed before, and every row of a listed file is
//     live: a reader of the listed files alone counts each event once. (A
//     manifest written before this rule may still list dropped sessions
//     per file, its D lines; the next seal or compaction rewrites them.)
//  4. Compact writes the new segments, swaps the manifest, then removes the
//     merged files. A crash before the swap leaves unlisted segments; after
//     it, unlisted old files. Readers never see either; the next Compact
//     removes them (and any .tmp- file).
//  5. A reader that lists the files and then finds one removed by a
//     concurrent compaction reads the manifest again and retries.
//  6. Each manifest written records the sessions folder's modification
//     time and the sessions in it that are not sealed (SessionsSnapshot).
//     Creating or removing a session folder changes that time, so while
//     it is unchanged a reader knows every unsealed session without
//     listing the folder. A session sealed as final (finished, status
//     done) is never appended to again, so a reader does not look at its
//     log; other sealed sessions' logs are stat'ed, and read instead of
//     the history when their size changed since sealing.
//
// # Concurrency
//
// Writers (Seal, Compact), in any process, serialize on an exclusive flock
// of LOCK. Readers take no lock. A session being written is not sealed by
// its runner until the run ends; readers read such logs directly (see
// package query).
package history
