package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/remote"
)

type queryOptions struct {
	SQL    string
	File   string
	Format string
	Bundle string
	Remote string
}

func newQueryCmd(f *Factory, runF func(context.Context, *queryOptions) error) *cobra.Command {
	opts := &queryOptions{}
	cmd := &cobra.Command{
		Use:   "query [SQL]",
		Short: "Run SQL (DuckDB) over the run history",
		Long: `Run SQL over every session under the home through an embedded DuckDB.
Sealed sessions are read from the Parquet history (<home>/history/), sessions
still running (or never sealed) from their logs, so every event is there.

Views:
  events      one row per event of every session; columns are the event
              fields (session_id, seq, ts, kind, model, input_tokens,
              cost_usd, tool, args, status, ...); nested values are JSON text
  sessions    one row per session: session_id, name, provider, model, status,
              reason, started, ended, duration_ms, events, input_tokens,
              output_tokens, tokens, cost_usd, tool_calls, errors, turns,
              origin (run|proxy|collect|import), finish_reason (the last
              model call's), tags (MAP: tags['env'] = 'ci'), user_id, ...
  tool_calls  one row per tool call: session_id, call_id, tool, args,
              idempotency_key, intent_seq, intent_ts, result_seq, result_ts,
              status (ok|error|cancelled|denied|pending), latency_ms, error,
              output, artifact
  model_calls one row per model call (failed and retried ones too):
              session_id, seq, ts, provider, model, input_tokens,
              output_tokens, tokens, cache_read_input_tokens,
              cache_creation_input_tokens, cost_usd, latency_ms,
              finish_reason, error_type, error, attempt, purpose
  eval_runs   one row per eval report ('agentctl eval' seals each into the
              history): report_digest, suite, suite_path, suite_sha256,
              branch, commit, started, ms, complete (the whole suite, no
              filter, nothing interrupted), ok, scenarios,
              scenarios_passed, scenarios_failed, runs, runs_ok, shards,
              filter, report (the JSON report), signature (its ed25519
              signature, when the sealing job held $AGENTCTL_REPORT_KEY)
  eval_results one row per scenario repeat of a report: report_digest,
              suite, branch, commit, started, scenario, scenario_index,
              repeat, passed, scenario_ok, status, error, failed,
              failed_assertions (JSON array), session_id, cost_usd,
              tokens, tool_calls, ms

An error in the SQL is printed as DuckDB reports it. A corrupt history file
is skipped with a warning on stderr naming it, and the rest answers.`,
		Example: `  agentctl query "SELECT status, count(*) FROM sessions GROUP BY ALL"
  agentctl query "SELECT tool, count(*) FILTER (status = 'error') AS errors FROM tool_calls GROUP BY ALL ORDER BY errors DESC" --format csv
  agentctl query --file weekly.sql --format jsonl
  agentctl query --remote s3://ci-runs/agentctl "SELECT avg(passed::INT) FROM (SELECT passed FROM eval_results WHERE scenario = 'fix-typo' AND branch = 'main' ORDER BY started DESC LIMIT 30)"
  agentctl query --bundle 3f2a.tar.zst "SELECT tool, status, latency_ms FROM tool_calls"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.SQL = args[0]
			}
			if (opts.SQL == "") == (opts.File == "") {
				return usageError{fmt.Errorf("query: give the SQL as an argument or with --file, not both")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return queryRun(cmd, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.File, "file", "", "read the SQL from this file")
	cmd.Flags().StringVar(&opts.Bundle, "bundle", "", "query one debug bundle (agentctl bundle) instead of the home")
	cmd.Flags().StringVar(&opts.Remote, "remote", "", "also answer over this S3 remote's history `URL` (s3://bucket/prefix): new objects are downloaded into a local cache first (env "+remote.Env+"; not with --bundle)")
	cmd.Flags().StringVar(&opts.Format, "format", "table", "output format: "+strings.Join(query.Formats, "|"))
	return cmd
}

func queryRun(cmd *cobra.Command, f *Factory, opts *queryOptions) error {
	switch opts.Format {
	case "table", "csv", "json", "jsonl":
	default:
		return usageError{fmt.Errorf("query: unknown --format %q (want one of %s)", opts.Format, strings.Join(query.Formats, ", "))}
	}
	q := opts.SQL
	if opts.File != "" {
		b, err := os.ReadFile(opts.File)
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
		q = string(b)
	}
	open := func() (*query.DB, func(), error) { return openQueryDB(cmd.Context(), f, opts.Bundle) }
	if opts.Remote != "" && opts.Bundle != "" {
		return usageError{fmt.Errorf("query: --remote and --bundle do not go together")}
	}
	// $AGENTCTL_REMOTE is --remote's default, but not for a bundle.
	if url := remote.URL(opts.Remote); url != "" && opts.Bundle == "" {
		open = func() (*query.DB, func(), error) { return openRemoteQueryDB(cmd.Context(), f, url) }
	}
	db, closeDB, err := open()
	if err != nil {
		return err
	}
	defer closeDB()
	res, err := db.Query(cmd.Context(), q)
	if err != nil {
		return err
	}
	return query.Write(f.Out, res, opts.Format)
}
