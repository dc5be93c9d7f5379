package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/evals"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type evalAddOptions struct {
	Suite    string
	From     string
	Name     string
	ForkFrom int64
	Assert   []string
	Model    string
	Script   string
	JSON     bool
}

func newEvalAddCmd(f *Factory, runF func(context.Context, *evalAddOptions) error) *cobra.Command {
	opts := &evalAddOptions{}
	cmd := &cobra.Command{
		Use:   "add SUITE.yaml --from SESSION",
		Short: "Append a scenario made from a recorded session to a suite",
		Long: `Turn a recorded session of any origin (an agentctl run, a program recorded
through agentctl proxy, an imported transcript, a collected trace) into a
regression case: the session, with its subagents, is copied into
fixtures/<sha256>/ next to the suite (through the recorder, so every string
is redacted; named after its bytes, so adding it twice is one copy), and a
scenario is appended to the suite:

  replay: {home: fixtures/<sha256>, session: ID}     by default: the replay
          must reproduce the recorded tool results and status
          (replay_matches), and asserts the recorded status
  replay: {..., fork_from: SEQ}                      with --fork-from: keep
          the events up to SEQ and go on with the scenario's model (add
          model: to the scenario; default the session's pinned one), live

--assert KIND=VALUE (repeatable) gives the assertions instead of the
default status; VALUE is YAML (status=done, called=edit_file,
not_called=bash, no_loop=3, budget={max_tokens: 5000}).

The suite file is edited as text: the scenario goes after the last one,
at its indentation, and every comment and line of the file stays as it
was. The new suite is loaded before it replaces the file, so a scenario
that does not load (a name in use, a bad assertion) changes nothing.

Exit status: 0 added, 1 an error (the suite or the session cannot be
read, the new scenario does not load).`,
		Example: `  agentctl eval add suite.yaml --from 3f2a
  agentctl eval add suite.yaml --from 3f2a --name checkout-bug --assert status=done --assert not_called=bash
  agentctl eval add suite.yaml --from 3f2a --fork-from 12 --model scripted/alt --script alt.yaml --assert status=done`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Suite = args[0]
			if opts.From == "" {
				return usageError{fmt.Errorf("eval add: --from SESSION is required")}
			}
			if opts.ForkFrom < 0 {
				return usageError{fmt.Errorf("eval add: --fork-from must be a seq of the session (1 or more)")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return evalAddRun(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "the recorded `SESSION` (id or unique prefix) in the home")
	cmd.Flags().StringVar(&opts.Name, "name", "", "the scenario's `NAME` (default: the session's name and id)")
	cmd.Flags().Int64Var(&opts.ForkFrom, "fork-from", 0, "fork the session after event `SEQ` and go on live, instead of replaying it whole")
	cmd.Flags().StringArrayVar(&opts.Assert, "assert", nil, "an assertion `KIND=VALUE` (repeatable; default: the recorded status)")
	cmd.Flags().StringVar(&opts.Model, "model", "", "with --fork-from: the fork goes on with `PROVIDER/ID` (default: the session's pinned model)")
	cmd.Flags().StringVar(&opts.Script, "script", "", "with --model scripted/ID: the scripted model's turns `FILE`")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print what was added as one JSON object")
	return cmd
}

func evalAddRun(f *Factory, opts *evalAddOptions) error {
	ao := evals.AddOptions{Suite: opts.Suite, From: f.Store(), Session: opts.From, Name: opts.Name,
		ForkFrom: opts.ForkFrom, Assert: opts.Assert}
	if opts.Model != "" {
		prov, id, ok := strings.Cut(opts.Model, "/")
		if !ok || prov == "" || id == "" {
			return usageError{fmt.Errorf("eval add: --model %q: write PROVIDER/ID (scripted/alt, anthropic/claude-sonnet-4-5)", opts.Model)}
		}
		ao.Model = &spec.Model{Provider: prov, ID: id, Script: opts.Script}
	} else if opts.Script != "" {
		return usageError{fmt.Errorf("eval add: --script goes with --model scripted/ID")}
	}
	res, err := evals.Add(ao)
	if err != nil {
		return err
	}
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(res)
	}
	copied := "copied"
	if res.Existed {
		copied = "already copied"
	}
	_, err = fmt.Fprintf(f.Out, "added scenario %s to %s (line %d): session %s %s into %s (%d sessions)\n",
		termsafe.Line(res.Scenario), res.Suite, res.Line, termsafe.Line(res.SessionID), copied, res.Fixture, res.Sessions)
	return err
}
