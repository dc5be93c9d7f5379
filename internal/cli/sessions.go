package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type sessionsOptions struct {
	JSON   bool
	Parent string
}

func newSessionsCmd(f *Factory, runF func(context.Context, *sessionsOptions) error) *cobra.Command {
	opts := &sessionsOptions{}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List recorded sessions, newest first",
		Long: `List every session under the home, newest first. A session whose log is
damaged is listed too, with the problem in the STATUS column. A session with
no end recorded is "running" while a process holds its lease and "crashed"
when none does ('agentctl resume' continues it). --parent lists only the
sessions a session's task calls started (its subagents) and its forks; in
SQL, the sessions view's parent_session_id column says the same.`,
		Example: "  agentctl sessions\n  agentctl sessions --json | jq '.[] | select(.status != \"done\")'\n  agentctl sessions --parent 3f2a",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return sessionsRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array of sessions")
	cmd.Flags().StringVar(&opts.Parent, "parent", "", "list only the subagents and forks of this session (an id or a prefix)")
	return cmd
}

func sessionsRun(f *Factory, opts *sessionsOptions) error {
	db, err := query.OpenStore(context.Background(), f.Store(), f.Err)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := db.Sessions(context.Background())
	if err != nil {
		return err
	}
	if opts.Parent != "" {
		parent, err := f.Store().Resolve(opts.Parent)
		if err != nil {
			return fmt.Errorf("sessions --parent: %w", err)
		}
		list = parentFilter(list, parent)
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
		fmt.Fprintf(f.Err, "no sessions under %s; run 'agentctl run SPEC.yaml' to record one\n", f.Home)
		return nil
	}
	tw := tabwriter.NewWriter(termsafe.Writer(f.Out), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tNAME\tSTARTED\tSTATUS\tMODEL\tEVENTS")
	for _, s := range list {
		status := string(s.Status)
		if s.Err != "" {
			status = "corrupt: " + s.Err
		} else if s.Torn {
			status += " (torn tail)"
		}
		model := s.Model
		if s.Provider != "" {
			model = s.Provider + "/" + s.Model
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", termsafe.Line(s.SessionID), termsafe.Line(s.Name), formatTime(s.Started), termsafe.Line(status), termsafe.Line(model), s.Events)
	}
	return tw.Flush()
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
