//go:build unix

package tools

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the command the leader of a new session, and so of
// a new process group that can be signalled as a whole. A new session (not
// just Setpgid) also leaves it without a controlling terminal: opening
// /dev/tty fails instead of prompting on the user's terminal, and the
// terminal's Ctrl-C goes to the harness, which cancels through ctx.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// terminateGroup sends SIGTERM to the process group p leads.
func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the process group p leads.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
