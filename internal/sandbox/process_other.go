//go:build !unix

package sandbox

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Process is a long-lived sandboxed process; see the Unix documentation.
// Elsewhere none can be started.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
}

// Start is refused outside Unix systems.
func (c Config) Start(workspace string, argv, env []string, stderr io.Writer) (*Process, error) {
	return nil, fmt.Errorf("sandbox: long-lived processes need a Unix system: %w", ErrUnavailable)
}

// Pid is 0.
func (p *Process) Pid() int { return 0 }

// Done is closed.
func (p *Process) Done() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Err is nil.
func (p *Process) Err() error { return nil }

// Kill does nothing.
func (p *Process) Kill() {}

// ownSession keeps attr: without process groups there is nothing to lead.
func ownSession(attr *syscall.SysProcAttr) *syscall.SysProcAttr { return attr }

// killGroup kills p alone: there is no group to reach.
func killGroup(p *os.Process) { _ = p.Kill() }
