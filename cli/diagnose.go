package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/bundle"
	"github.com/agentctl/agentctl/diagnose"
	"github.com/agentctl/agentctl/session"
	"github.com/agentctl/agentctl/termsafe"
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
		Long: `Write the postmortem of one session from canned SQL queries over the same
views as 'agentctl query' (so it reads a home or a debug bundle alike):

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
	var id string
	var evs []session.Event
	if opts.Bundle == "" {
		var err error
		if id, evs, err = loadSession(f, opts.Session); err != nil {
			return err
		}
	}
	db, closeDB, err := openQueryDB(ctx, f, opts.Bundle)
	if err != nil {
		return err
	}
	defer closeDB()
	if opts.Bundle != "" {
		if id, evs, err = bundleEvents(ctx, opts.Bundle); err != nil {
			return err
		}
	}
	rep, err := diagnose.Run(ctx, db, id, evs)
	if err != nil {
		return err
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

// bundleEvents reads the session id and events.jsonl of a bundle (verified
// against its MANIFEST).
func bundleEvents(ctx context.Context, path string) (string, []session.Event, error) {
	tmp, err := os.MkdirTemp("", "agentctl-diagnose-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	r, err := os.Open(path)
	if err != nil {
		return "", nil, fmt.Errorf("diagnose: %w", err)
	}
	defer r.Close()
	dir := tmp + "/b"
	m, err := bundle.Extract(ctx, r, dir, bundle.ExtractOptions{Only: func(n string) bool { return n == "events.jsonl" }})
	if err != nil {
		return "", nil, fmt.Errorf("diagnose: open %s: %w", path, err)
	}
	ef, err := os.Open(dir + "/events.jsonl")
	if err != nil {
		return "", nil, fmt.Errorf("diagnose: %w", err)
	}
	defer ef.Close()
	var evs []session.Event
	sc := bufio.NewScanner(ef)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		e, err := session.Decode(sc.Bytes())
		if err != nil {
			return "", nil, fmt.Errorf("diagnose: %s events.jsonl: %w", path, err)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		return "", nil, fmt.Errorf("diagnose: %w", err)
	}
	return m.SessionID, evs, nil
}
