package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/transcript"
)

type exportATIFOptions struct {
	Session string
	Output  string
}

func newExportATIFCmd(f *Factory, runF func(context.Context, *exportATIFOptions) error) *cobra.Command {
	opts := &exportATIFOptions{}
	cmd := &cobra.Command{
		Use:   "atif SESSION",
		Short: "Write a session as an ATIF trajectory (trajectory.json)",
		Long: `Write the session (one agentctl ran, or an imported one) as an ATIF-v1.7
trajectory, Harbor's Agent Trajectory Interchange Format: user messages as
user steps; each assistant message with its model call (metrics), tool calls
and their results (the observation) as one agent step; compactions as system
steps with context_management; every other event (approvals, evaluations,
finishes, errors) as a system step that holds it; each sub-agent also as a
subagent_trajectory_ref, its trajectory embedded (subagent_trajectories),
so an import of the file brings the children too. What ATIF has no field
for is kept under extra.agentctl, so 'agentctl import atif' of the file
gives the same events back. Writes to stdout, or to -o FILE.`,
		Example: "  agentctl export atif 3f2a -o trajectory.json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return exportATIFRun(f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write to `FILE` instead of stdout")
	return cmd
}

func exportATIFRun(f *Factory, opts *exportATIFOptions) error {
	id, evs, err := loadSession(f, opts.Session)
	if err != nil {
		return fmt.Errorf("export atif %s: %w", opts.Session, err)
	}
	// A sub-agent's trajectory goes in the file with its parent's, so an
	// import of the one file gives the children back.
	children := func(child string) ([]session.Event, error) {
		cevs, _, err := f.Store().Load(child)
		return cevs, err
	}
	b, err := transcript.ExportATIF(id, evs, children)
	if err != nil {
		return err
	}
	if opts.Output == "" {
		_, err = f.Out.Write(b)
		return err
	}
	if err := os.WriteFile(opts.Output, b, 0o644); err != nil {
		return fmt.Errorf("export atif %s: %w", id, err)
	}
	fmt.Fprintf(f.Err, "session %s: %d events written to %s\n", id, len(evs), opts.Output)
	return nil
}
