//go:build unix

package tools

import (
	"os"
	"syscall"
)

// terminateGroup sends SIGTERM to the process group p leads (every
// sandbox.Launch command leads one).
func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the process group p leads.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
