package cli

import (
	"fmt"
	"io"

	"github.com/agentctl/agentctl/runner/sandbox"
)

func writeProbes(w io.Writer, rep sandbox.Report) {
	row := func(name string, p sandbox.Probe) {
		if p.OK {
			fmt.Fprintf(w, "  %-18s yes\n", name)
		} else {
			fmt.Fprintf(w, "  %-18s no (%s)\n", name, p.Error)
		}
	}
	fmt.Fprintf(w, "  %-18s %v\n", "running as root", rep.Root)
	row("user namespace", rep.UserNS)
	row("mount namespace", rep.MountNS)
	row("network namespace", rep.NetNS)
	row("pid namespace", rep.PIDNS)
	row("full sandbox", rep.Full)
	row("RLIMIT_AS", rep.RlimitAS)
	row("RLIMIT_CPU", rep.RlimitCPU)
	fmt.Fprintf(w, "  %-18s %s (not used)\n", "cgroups", rep.Cgroup)
}
