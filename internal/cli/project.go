package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type projectOptions struct {
	Session string
	At      int64
	JSON    bool
}

func newProjectCmd(f *Factory, runF func(context.Context, *projectOptions) error) *cobra.Command {
	opts := &projectOptions{}
	cmd := &cobra.Command{
		Use:   "project SESSION",
		Short: "Print the messages a provider would receive after an event",
		Long: `Rebuild the provider payload from the session log, as the runner does
before each model call: the system prompt, the latest compaction summary
with the first user message pinned verbatim, every event after it, and
dangling tool calls closed. --at SEQ projects the log as it was after
event SEQ (default: the whole log).`,
		Example: "  agentctl project 3f2a\n  agentctl project 3f2a --at 12 --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return projectRun(f, opts)
		},
	}
	cmd.Flags().Int64Var(&opts.At, "at", 0, "project the log up to and including event `SEQ`")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the messages as a JSON array")
	return cmd
}

func projectRun(f *Factory, opts *projectOptions) error {
	id, evs, err := loadSession(f, opts.Session)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return fmt.Errorf("project %s: the log has no events", id)
	}
	if opts.At < 0 || opts.At > evs[len(evs)-1].Seq {
		return usageError{fmt.Errorf("project %s: --at %d is outside the log (seq 1..%d)", id, opts.At, evs[len(evs)-1].Seq)}
	}
	if opts.At > 0 {
		evs = evs[:opts.At] // seqs are dense from 1
	}
	msgs := session.Project(evs, evs[0].System)
	if opts.JSON {
		enc := json.NewEncoder(f.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(msgs)
	}
	out := termsafe.Writer(f.Out) // recorded text may hold terminal escapes
	for i, m := range msgs {
		src := "synthetic"
		if m.Seq > 0 {
			src = fmt.Sprintf("seq %d", m.Seq)
		} else if i == 0 && m.Role == session.RoleSystem {
			src = "system prompt"
		}
		fmt.Fprintf(out, "── %d. %s (%s)", i+1, m.Role, src)
		if m.ToolCallID != "" {
			fmt.Fprintf(out, " reply to %s [%s]", m.Name, m.ToolCallID)
		}
		fmt.Fprintln(out)
		if m.Content != "" {
			fmt.Fprintln(out, m.Content)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(out, "→ %s(%s) [%s]\n", c.Name, c.Args, c.ID)
		}
	}
	return nil
}
