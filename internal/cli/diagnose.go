package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/leanmem"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type diagnoseOptions struct {
	Session string
	Bundle  string
	JSON    bool
}

func newDiagnoseCmd(f *Factory, runF func(context.Context, *diagnoseOptions) error) *cobra.Command {
	opts := &diagnoseOptions{}
	cmd := &cobra.Command{
		Use:   "diagnose SESSION | --bundle FILE",
		Short: "Explain a run in plain words: loops, tokens after the first error, budget, waits, exit",
		Long: `Write the postmortem of one session: of the home, from its log read a record
at a time; of a debug bundle, from canned SQL queries over the views of
'agentctl query'. The findings are the same either way:

  loop         repeated tool calls and the tokens of the turns that asked for
               them, from the first failure that was then repeated
  after_error  the share of tokens spent after the first error
  budget       burn rate, the spec's limits, any budget stop
  pending      intents without a result, needs_human reconciliations
  approvals    approval requests and how long each waited
  compaction   compactions, and whether the goal survived them
  slow_tools   the slowest tool calls
  exit         the exit path, or where the log stops (a crash)

Each finding cites the seqs it rests on ('agentctl show SESSION' lists them).
--json prints {"session_id", "name", "status", "events", "tokens",
"cost_usd", "tool_calls", "findings": [{"kind", "text", "seqs"}]}.`,
		Example: `  agentctl diagnose 3f2a
  agentctl diagnose --bundle 3f2a.tar.zst --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Session = args[0]
			}
			if (opts.Session == "") == (opts.Bundle == "") {
				return usageError{fmt.Errorf("diagnose: give a SESSION or --bundle FILE, not both")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return diagnoseRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Bundle, "bundle", "", "diagnose the session of a debug bundle")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func diagnoseRun(ctx context.Context, f *Factory, opts *diagnoseOptions) error {
	// A session of the home is diagnosed from its log read a record at a
	// time (diagnose.Stream, no SQL: a million events in the memory of
	// the fold); a bundle's with SQL over its history, its events read a
	// record at a time into the anchoring check.
	var rep *diagnose.Report
	if opts.Bundle == "" {
		st := f.Store()
		id, err := st.Resolve(opts.Session)
		if err != nil {
			return err
		}
		var tail recorder.Tail
		restore := leanmem.Set()
		rep, tail, err = diagnose.Stream(st, id)
		restore()
		if tail.Torn {
			fmt.Fprintf(f.Err, "warning: session %s: log has a torn tail (%d bytes after the last whole event, from a crash mid-write); 'agentctl resume' cuts it\n",
				id, tail.FileSize-tail.GoodSize)
		}
		if err != nil {
			return err
		}
	} else {
		db, closeDB, err := openQueryDB(ctx, f, opts.Bundle)
		if err != nil {
			return err
		}
		defer closeDB()
		anchors := replaycheck.NewAnchorer("", nil)
		m, err := bundle.StreamEvents(ctx, opts.Bundle, anchors.Add)
		if err != nil {
			return fmt.Errorf("diagnose: %w", err)
		}
		if rep, err = diagnose.Run(ctx, db, m.SessionID, anchors.Report()); err != nil {
			return err
		}
	}
	if opts.JSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f.Out, string(b))
		return err
	}
	return rep.WriteText(termsafe.Writer(f.Out))
}
