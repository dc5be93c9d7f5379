package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/sandbox"
)

type sandboxCheckOptions struct {
	JSON bool
}

func newSandboxCmd(f *Factory, runF func(context.Context, *sandboxCheckOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Inspect the sandbox tools run in",
		Args:  cobra.NoArgs,
	}
	opts := &sandboxCheckOptions{}
	check := &cobra.Command{
		Use:   "check",
		Short: "Print what this machine enforces on tool subprocesses",
		Long: `Probe the mechanisms the sandbox uses and print, protection by
protection, whether this machine enforces it: the user, mount, network, PID,
IPC and UTS namespaces; a full confined start; the minimal root (the kept
host folders); a scan, from inside a probe sandbox, for unix sockets a tool
could reach; the init's parent-death signal; seccomp (not used); cgroups
(v2, v1 or none, with the memory and pids limits); rlimits. Where namespaces
are unavailable, runs whose tools start subprocesses are refused unless the
spec sets sandbox.unconfined.

Exit status: 0 when the full sandbox works, 1 when it does not.`,
		Example: `  agentctl sandbox check
  agentctl sandbox check --json | jq .full_sandbox.ok`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return sandboxCheckRun(f, opts)
		},
	}
	check.Flags().BoolVar(&opts.JSON, "json", false, "print the report as one JSON object")
	cmd.AddCommand(check)
	return cmd
}

func sandboxCheckRun(f *Factory, opts *sandboxCheckOptions) error {
	rep := sandbox.Check()
	ok := sandbox.Available() == nil
	if opts.JSON {
		if err := json.NewEncoder(f.Out).Encode(rep); err != nil {
			return err
		}
	} else {
		writeSandboxReport(f.Out, rep, ok)
	}
	if !ok {
		return withCode(ExitError, nil)
	}
	return nil
}

func writeSandboxReport(w io.Writer, rep sandbox.Report, ok bool) {
	if ok {
		fmt.Fprintln(w, "sandbox: enforced")
	} else {
		fmt.Fprintln(w, "sandbox: NOT available (tools that start subprocesses are refused unless sandbox.unconfined is set)")
	}
	writeProbes(w, rep)
	fmt.Fprintln(w, "enforced:")
	for _, e := range rep.Enforced {
		fmt.Fprintf(w, "  - %s\n", e)
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintln(w, "not enforced:")
		for _, m := range rep.Missing {
			fmt.Fprintf(w, "  - %s\n", m)
		}
	}
}
