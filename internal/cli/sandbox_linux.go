package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/internal/sandbox"
)

// writeProbes prints one line per protection: whether this machine
// enforces it, and why not.
func writeProbes(w io.Writer, rep sandbox.Report) {
	row := func(name string, p sandbox.Probe) {
		if p.OK {
			fmt.Fprintf(w, "  %-20s yes\n", name)
		} else {
			fmt.Fprintf(w, "  %-20s no (%s)\n", name, p.Error)
		}
	}
	fmt.Fprintf(w, "  %-20s %v\n", "running as root", rep.Root)
	row("user namespace", rep.UserNS)
	row("mount namespace", rep.MountNS)
	row("network namespace", rep.NetNS)
	row("pid namespace", rep.PIDNS)
	row("ipc namespace", rep.IPCNS)
	row("uts namespace", rep.UTSNS)
	row("full sandbox", rep.Full)
	if rep.MinimalRoot.OK {
		fmt.Fprintf(w, "  %-20s yes (%s)\n", "minimal root", strings.Join(rep.KeptFolders, " "))
	} else {
		row("minimal root", rep.MinimalRoot)
	}
	switch s := rep.Sockets; {
	case !s.Scanned:
		fmt.Fprintf(w, "  %-20s not scanned (%s)\n", "socket scan", s.Error)
	case len(s.Reachable) > 0:
		fmt.Fprintf(w, "  %-20s %d reachable: %s\n", "socket scan", len(s.Reachable), strings.Join(s.Reachable, ", "))
	default:
		fmt.Fprintf(w, "  %-20s none reachable (%d covered)\n", "socket scan", len(s.Covered))
	}
	row("pdeathsig", rep.Pdeathsig)
	row("long-lived server", rep.Server)
	fmt.Fprintf(w, "  %-20s %s\n", "seccomp", rep.Seccomp)
	yn := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "  %-20s %s (memory limit: %s, pids limit: %s)\n", "cgroups", rep.Cgroup, yn(rep.CgroupMemory), yn(rep.CgroupPids))
	if rep.CgroupMemory {
		fmt.Fprintf(w, "  %-20s fallback only (the cgroup limits memory)\n", "RLIMIT_AS")
	} else {
		row("RLIMIT_AS", rep.RlimitAS)
	}
	row("RLIMIT_CPU", rep.RlimitCPU)
}
