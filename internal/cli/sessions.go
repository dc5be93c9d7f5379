package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type sessionsOptions struct {
	JSON   bool
	Parent string
	Status []string
	Since  string
	Limit  int
	Tags   []string
	User   string
	Model  string
	Origin string
	Agent  string
	Text   string
}

func newSessionsCmd(f *Factory, runF func(context.Context, *sessionsOptions) error) *cobra.Command {
	opts := &sessionsOptions{}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List recorded sessions, newest first",
		Long: `List every session under the home, newest first, with its tokens and cost.
A session whose log is damaged is listed too, with the problem in the STATUS
column. A session with no end recorded is "running" while a process holds its
lease and "crashed" when none does ('agentctl resume' continues it).

The flags narrow the list; each is a condition on the sessions view of
'agentctl query' (in brackets), and all of them must hold:
  --status S    any of these statuses [status IN (...)]: done, failed,
                awaiting_approval, budget_exceeded, needs_human, interrupted,
                running, crashed, imported, corrupt (repeat, or S1,S2)
  --since T     started at or after T [started >= T]: a duration back from
                now (90m, 24h, 7d) or a date or time (2026-12-01,
                2026-12-01T09:00:00Z)
  --tag K=V     tagged K=V [tags['K'] = 'V'] (repeatable: every one)
  --user U      run for user U [user_id = 'U']
  --model M     of model M [model = 'M']
  --origin O    recorded by O: run, proxy, collect or import [origin = 'O']
  --agent A     of agent A, the NAME column [name = 'A']
  --text T      a user or assistant message contains T, case aside
  --parent ID   the subagents and forks of a session [parent_session_id]
  --limit N     the N most recently started (default: all)
--json prints the same fields the table shows and more (tokens, cost_usd,
tags, user_id, finish_reason, origin, turns, reason).`,
		Example: `  agentctl sessions
  agentctl sessions --status failed,crashed --since 24h
  agentctl sessions --tag env=ci --user alice --limit 20
  agentctl sessions --json | jq '.[] | select(.status != "done")'
  agentctl sessions --parent 3f2a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return sessionsRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array of sessions")
	cmd.Flags().StringVar(&opts.Parent, "parent", "", "list only the subagents and forks of this session (an id or a prefix)")
	cmd.Flags().StringSliceVar(&opts.Status, "status", nil, "list only sessions with one of these statuses (repeatable, or comma-separated)")
	cmd.Flags().StringVar(&opts.Since, "since", "", "list only sessions started at or after this: a duration back from now (24h, 7d) or a date or RFC 3339 time")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "list at most N sessions, the most recently started (0: all)")
	cmd.Flags().StringArrayVar(&opts.Tags, "tag", nil, "list only sessions tagged KEY=VALUE (repeatable: every one must match)")
	cmd.Flags().StringVar(&opts.User, "user", "", "list only sessions run for this user (the header's user_id)")
	cmd.Flags().StringVar(&opts.Model, "model", "", "list only sessions of this model, exactly (the MODEL column without its provider/)")
	cmd.Flags().StringVar(&opts.Origin, "origin", "", "list only sessions recorded this way: run, proxy, collect or import")
	cmd.Flags().StringVar(&opts.Text, "text", "", "list only sessions whose user or assistant messages contain this text (case aside)")
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "list only sessions of this agent: the NAME column (its spec's name), exactly")
	return cmd
}

// sessionsFilter turns the flags into the view's filter; a bad flag is a
// usage error.
func sessionsFilter(f *Factory, opts *sessionsOptions, now time.Time) (query.Filter, error) {
	var flt query.Filter
	for _, s := range opts.Status {
		st := session.Status(strings.TrimSpace(s))
		if !slices.Contains(query.Statuses, st) {
			names := make([]string, len(query.Statuses))
			for i, x := range query.Statuses {
				names[i] = string(x)
			}
			return flt, usageError{fmt.Errorf("--status %q is not a status: use one of %s", s, strings.Join(names, ", "))}
		}
		flt.Status = append(flt.Status, st)
	}
	if opts.Since != "" {
		t, err := parseSince(opts.Since, now)
		if err != nil {
			return flt, usageError{err}
		}
		flt.Since = t
	}
	if opts.Limit < 0 {
		return flt, usageError{fmt.Errorf("--limit %d: give a count of sessions, or 0 for all", opts.Limit)}
	}
	flt.Limit = opts.Limit
	tags, err := session.ParseTags(opts.Tags)
	if err != nil {
		return flt, usageError{fmt.Errorf("--tag: %w", err)}
	}
	flt.Tags, flt.User, flt.Model, flt.Origin, flt.Agent, flt.Text = tags, opts.User, opts.Model, opts.Origin, opts.Agent, opts.Text
	if o := opts.Origin; o != "" && !slices.Contains([]string{"run", "proxy", "collect", "import"}, o) {
		return flt, usageError{fmt.Errorf("sessions: --origin %q: one of run, proxy, collect, import", o)}
	}
	if opts.Parent != "" {
		parent, err := f.Store().Resolve(opts.Parent)
		if err != nil {
			return flt, fmt.Errorf("sessions --parent: %w", err)
		}
		flt.Parent = parent
	}
	return flt, nil
}

// parseSince reads --since (query.ParseSince: the MCP server's
// list_sessions reads its since the same way).
func parseSince(s string, now time.Time) (time.Time, error) { return query.ParseSince(s, now) }

func sessionsRun(f *Factory, opts *sessionsOptions) error {
	flt, err := sessionsFilter(f, opts, time.Now())
	if err != nil {
		return err
	}
	db, err := query.OpenStore(context.Background(), f.Store(), f.Err)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := db.Sessions(context.Background(), flt)
	if err != nil {
		return err
	}
	// A log with no session_finished is running while a process holds its
	// lease and crashed otherwise: the sessions view says which.
	if opts.JSON {
		enc := json.NewEncoder(f.Out)
		if list == nil {
			_, err := fmt.Fprintln(f.Out, "[]")
			return err
		}
		return enc.Encode(list)
	}
	if len(list) == 0 {
		if flt.Status != nil || !flt.Since.IsZero() || flt.Tags != nil || flt.User != "" || flt.Parent != "" {
			fmt.Fprintf(f.Err, "no sessions under %s match\n", f.Home)
			return nil
		}
		fmt.Fprintf(f.Err, "no sessions under %s; run 'agentctl run SPEC.yaml' to record one\n", f.Home)
		return nil
	}
	tw := tabwriter.NewWriter(termsafe.Writer(f.Out), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tNAME\tSTARTED\tSTATUS\tMODEL\tEVENTS\tTOKENS\tCOST")
	for _, s := range list {
		status := string(s.Status)
		if s.Err != "" {
			status = "corrupt: " + s.Err
		} else if s.Torn {
			status += " (torn tail)"
		}
		model := session.ModelName(s.Provider, s.Model)
		// A source that records no usage has unknown tokens, not 0.
		tokens, cost := fmt.Sprint(s.Tokens), fmt.Sprintf("$%.4f", s.CostUSD)
		if !s.Records(session.NotRecordedUsage) {
			tokens, cost = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", termsafe.Line(s.SessionID), termsafe.Line(s.Name), formatTime(s.Started),
			termsafe.Line(status), termsafe.Line(model), s.Events, tokens, cost)
	}
	return tw.Flush()
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
