package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/evals"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type evalAddOptions struct {
	Suite         string
	From          string
	FromQuery     string
	Name          string
	ForkFrom      int64
	Assert        []string
	Model         string
	Script        string
	Command       string
	WorkspaceFrom string
	ReadOnly      []string
	Env           []string
	JSON          bool
}

// maxFromQuery bounds the sessions one --from-query adds: each is a copy
// into the suite's fixtures and a rewrite of the suite.
const maxFromQuery = 1000

func newEvalAddCmd(f *Factory, runF func(context.Context, *evalAddOptions) error) *cobra.Command {
	opts := &evalAddOptions{}
	cmd := &cobra.Command{
		Use:   "add SUITE.yaml (--from SESSION | --from-query SQL)",
		Short: "Append scenarios made from recorded sessions to a suite",
		Long: `Turn a recorded session of any origin (an agentctl run, a program recorded
through agentctl proxy, an imported transcript, a collected trace) into a
regression case: the session, with its subagents, is copied into
fixtures/<sha256>/ next to the suite (through the recorder, so every string
is redacted; named after its bytes, so adding it twice is one copy), and a
scenario is appended to the suite. SUITE.yaml is created when it does not
exist (a minimal suite, with comments saying how to run it).

  replay: {home: fixtures/<sha256>, session: ID}     by default: the replay
          must reproduce the recorded tool results and status
          (replay_matches), and asserts the recorded status. A session
          whose spec runs an external agent runs that program again
          behind a proxy answering from the recording. A session with no
          program to run (collected, imported, proxied with no spec) is
          checked against itself: pass --command to make it a test of
          your program
  replay: {..., command: CMD, workspace_from: DIR}   with --command: the
          real program (sh -c CMD, in a fresh copy of --workspace-from
          for every run) runs behind a proxy that answers its model calls
          from the recording, offline. replay_matches fails when one of
          its requests differs from the recorded one (naming the turn),
          it makes another number of model calls, or it ends otherwise
          (status, exit status, final answer)
  replay: {..., command: CMD, live_from_turn: N}     with --command and
          --fork-from N: model turns 1..N-1 are replayed (and must match),
          from turn N on the program talks to --model (default: the
          recorded model, live); the assertions judge the new ending
  replay: {..., fork_from: SEQ}                      with --fork-from and
          no --command: keep the events up to SEQ and go on with --model
          (default the session's pinned one), live

The program's sandbox hides the host's files but /usr, /etc, /opt and
the workspace: --read-only DIR lets it read a folder (a node_modules a
link in the workspace points to), --env NAME passes a variable through.

--from-query SQL adds every session the query returns (production traces
to cases in bulk): the SQL runs over the views of agentctl query, read-only
and confined as a suite's sql: assertion is (no file functions, no COPY,
no ATTACH); the session ids are the column session_id (or id, or the only
column). A session some scenario of the suite already replays is skipped;
the summary says how many were added and skipped. At most 1000 sessions.

--assert KIND=VALUE (repeatable) gives the assertions instead of the
default status; VALUE is YAML (status=done, called=edit_file,
not_called=bash, no_loop=3, budget={max_tokens: 5000}).

The suite file is edited as text: the scenario goes after the last one,
at its indentation, and every comment and line of the file stays as it
was. The new suite is loaded before it replaces the file, so a scenario
that does not load (a name in use, a bad assertion) changes nothing.

Exit status: 0 added (or nothing to add), 1 an error (the suite or the
session cannot be read, the query fails, the new scenario does not load;
with --from-query the sessions added before the error stay added).`,
		Example: `  agentctl eval add suite.yaml --from 3f2a
  agentctl eval add suite.yaml --from 3f2a --command 'node app.mjs' --workspace-from app --read-only "$(readlink -f app/node_modules)"
  agentctl eval add suite.yaml --from 3f2a --command 'node app.mjs' --workspace-from app --fork-from 2 --model openai/gpt-4.1-mini
  agentctl eval add suite.yaml --from-query "SELECT session_id FROM sessions WHERE status = 'imported' AND started > now() - INTERVAL 1 DAY" --command 'node app.mjs' --workspace-from app
  agentctl eval add suite.yaml --from 3f2a --name checkout-bug --assert status=done --assert not_called=bash
  agentctl eval add suite.yaml --from 3f2a --fork-from 12 --model scripted/alt --script alt.yaml --assert status=done`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Suite = args[0]
			if (opts.From == "") == (opts.FromQuery == "") {
				return usageError{fmt.Errorf("eval add: --from SESSION or --from-query SQL is required (one of them)")}
			}
			if opts.ForkFrom < 0 {
				return usageError{fmt.Errorf("eval add: --fork-from must be 1 or more (a seq of the session; with --command, a model turn)")}
			}
			if opts.FromQuery != "" && opts.Name != "" {
				return usageError{fmt.Errorf("eval add: --name names one scenario; --from-query adds many (each is named after its session)")}
			}
			if opts.Command == "" && (opts.WorkspaceFrom != "" || len(opts.ReadOnly) > 0 || len(opts.Env) > 0) {
				return usageError{fmt.Errorf("eval add: --workspace-from, --read-only and --env go with --command (the program the case runs)")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return evalAddRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "the recorded `SESSION` (id or unique prefix) in the home")
	cmd.Flags().StringVar(&opts.FromQuery, "from-query", "", "add every session this `SQL` returns (over the views of agentctl query)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "the scenario's `NAME` (default: the session's name and id)")
	cmd.Flags().Int64Var(&opts.ForkFrom, "fork-from", 0, "fork the session and go on live: after event `N` (a seq), or with --command from model turn N")
	cmd.Flags().StringArrayVar(&opts.Assert, "assert", nil, "an assertion `KIND=VALUE` (repeatable; default: the recorded status)")
	cmd.Flags().StringVar(&opts.Model, "model", "", "with --fork-from: the fork goes on with `PROVIDER/ID` (default: the session's pinned model)")
	cmd.Flags().StringVar(&opts.Script, "script", "", "with --model scripted/ID: the scripted model's turns `FILE`")
	cmd.Flags().StringVar(&opts.Command, "command", "", "the program the case runs against the recording, a shell `COMMAND` line (sh -c)")
	cmd.Flags().StringVar(&opts.WorkspaceFrom, "workspace-from", "", "with --command: the `DIR` the program runs in, copied fresh for every run (default: an empty folder)")
	cmd.Flags().StringArrayVar(&opts.ReadOnly, "read-only", nil, "with --command: a host `DIR` the program may read (repeatable)")
	cmd.Flags().StringArrayVar(&opts.Env, "env", nil, "with --command: pass the variable `NAME` through to the program (repeatable)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print what was added as one JSON object")
	return cmd
}

// evalAddFromQuery is the --json object of --from-query. Its fields only
// grow.
type evalAddFromQuery struct {
	Suite   string            `json:"suite"`
	Added   []evals.AddResult `json:"added"`
	Skipped []string          `json:"skipped"`
}

func evalAddRun(ctx context.Context, f *Factory, opts *evalAddOptions) error {
	ao := evals.AddOptions{Suite: opts.Suite, From: f.Store(), Name: opts.Name, ForkFrom: opts.ForkFrom, Assert: opts.Assert}
	if opts.Command != "" {
		if strings.TrimSpace(opts.Command) == "" {
			return usageError{fmt.Errorf("eval add: --command is blank")}
		}
		if opts.WorkspaceFrom != "" {
			if fi, err := os.Stat(opts.WorkspaceFrom); err != nil || !fi.IsDir() {
				return usageError{fmt.Errorf("eval add: --workspace-from %s is not a folder", opts.WorkspaceFrom)}
			}
		}
		for _, v := range opts.Env {
			if !envName.MatchString(v) {
				return usageError{fmt.Errorf("eval add: --env %q: give a variable's name (its value is read when the case runs)", v)}
			}
		}
		ao.Program = &replay.Program{Command: opts.Command, WorkspaceFrom: opts.WorkspaceFrom, ReadOnly: opts.ReadOnly, Env: opts.Env}
		// With a program, --fork-from counts model turns (what a
		// divergence names), not the recording's seqs.
		ao.LiveFromTurn, ao.ForkFrom = int(opts.ForkFrom), 0
	}
	if opts.Model != "" {
		prov, id, ok := strings.Cut(opts.Model, "/")
		if !ok || prov == "" || id == "" {
			return usageError{fmt.Errorf("eval add: --model %q: write PROVIDER/ID (scripted/alt, anthropic/claude-sonnet-4-5)", opts.Model)}
		}
		ao.Model = &spec.Model{Provider: prov, ID: id, Script: opts.Script}
	} else if opts.Script != "" {
		return usageError{fmt.Errorf("eval add: --script goes with --model scripted/ID")}
	}
	if opts.FromQuery != "" {
		return evalAddQuery(ctx, f, opts, ao)
	}
	ao.Session = opts.From
	res, err := evals.Add(ao)
	if err != nil {
		return err
	}
	addNotes(f, res)
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(res)
	}
	return writeAdded(f, res)
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func writeAdded(f *Factory, res evals.AddResult) error {
	copied := "copied"
	if res.Existed {
		copied = "already copied"
	}
	_, err := fmt.Fprintf(f.Out, "added scenario %s to %s (line %d): session %s %s into %s (%d sessions)\n",
		termsafe.Line(res.Scenario), res.Suite, res.Line, termsafe.Line(res.SessionID), copied, res.Fixture, res.Sessions)
	return err
}

// addNotes says on stderr what the user may not expect: a new suite
// file, a case that does not run any program.
func addNotes(f *Factory, res evals.AddResult) {
	if res.Created {
		fmt.Fprintf(f.Err, "created %s\n", res.Suite)
	}
	if res.NoProgram {
		fmt.Fprintf(f.Err, "note: session %s has no program agentctl can start (collected, imported, or proxied without a spec): scenario %s checks the recording against itself; add it with --command 'node app.mjs' to make the case run your program\n",
			termsafe.Line(res.SessionID), termsafe.Line(res.Scenario))
	}
}

// evalAddQuery adds every session opts.FromQuery returns (see the help),
// skipping those the suite replays already.
func evalAddQuery(ctx context.Context, f *Factory, opts *evalAddOptions, ao evals.AddOptions) error {
	ids, err := querySessionIDs(ctx, f, opts.FromQuery)
	if err != nil {
		return err
	}
	have, err := evals.SuiteSessions(opts.Suite)
	if err != nil {
		return err
	}
	out := evalAddFromQuery{Suite: opts.Suite, Added: []evals.AddResult{}, Skipped: []string{}}
	for _, id := range ids {
		if have[id] {
			out.Skipped = append(out.Skipped, id)
			continue
		}
		ao.Session = id
		res, err := evals.Add(ao)
		if err != nil {
			return fmt.Errorf("%w (sessions added before it: %d)", err, len(out.Added))
		}
		have[id] = true
		out.Added = append(out.Added, res)
		addNotes(f, res)
		if !opts.JSON {
			if err := writeAdded(f, res); err != nil {
				return err
			}
		}
	}
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(out)
	}
	_, err = fmt.Fprintf(f.Out, "%d added, %d skipped (already in %s), of %d sessions the query returned\n",
		len(out.Added), len(out.Skipped), opts.Suite, len(ids))
	return err
}

// querySessionIDs runs sql over the home's views, confined as a suite's
// sql: assertion is, and returns the session ids of its rows (column
// session_id, else id, else the only one), each once, in order.
func querySessionIDs(ctx context.Context, f *Factory, sql string) ([]string, error) {
	db, err := query.Open(ctx, f.Home, f.Err)
	if err != nil {
		return nil, fmt.Errorf("eval add: --from-query: %w", err)
	}
	defer db.Close()
	if err := db.Confine(ctx); err != nil {
		return nil, fmt.Errorf("eval add: --from-query: %w", err)
	}
	res, err := db.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("eval add: --from-query: %w", err)
	}
	col := -1
	for _, want := range []string{"session_id", "id"} {
		for i, c := range res.Columns {
			if col < 0 && strings.EqualFold(c, want) {
				col = i
			}
		}
	}
	if col < 0 && len(res.Columns) == 1 {
		col = 0
	}
	if col < 0 {
		return nil, fmt.Errorf("eval add: --from-query: the result has columns %s; name the session ids' column session_id (SELECT ... AS session_id)", strings.Join(res.Columns, ", "))
	}
	var ids []string
	seen := map[string]bool{}
	for _, row := range res.Rows {
		id, ok := row[col].(string)
		if !ok || id == "" || seen[id] {
			continue // NULL, or the same session again
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if len(ids) > maxFromQuery {
		return nil, fmt.Errorf("eval add: --from-query returned %d sessions, more than the %d one call adds; narrow it (LIMIT, WHERE)", len(ids), maxFromQuery)
	}
	return ids, nil
}
