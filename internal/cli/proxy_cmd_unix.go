//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// agentGroup runs the agent in a process group of its own, and a cancel
// sends SIGINT to the whole group: the agent's own children (a tool it
// started, a sub-agent) are interrupted with it, as a terminal's Ctrl-C
// would.
func agentGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
}
