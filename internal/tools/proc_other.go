//go:build !unix

package tools

import "os"

// Without process groups only the direct child can be killed; agentctl
// supports running tools on Linux (and other Unix systems) only, and this
// file exists so the package still builds elsewhere.

func terminateGroup(p *os.Process) { _ = p.Kill() }

func killGroup(p *os.Process) { _ = p.Kill() }
