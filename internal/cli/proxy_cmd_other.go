//go:build !unix

package cli

import (
	"os"
	"os/exec"
)

// agentGroup interrupts the agent process itself where there are no
// process groups to signal.
func agentGroup(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
}
