//go:build !linux

package sandbox

import (
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
)

// Init records nothing to do: the sandbox is Linux only.
func Init() {}

// Launch is a prepared process; see the Linux documentation.
type Launch struct {
	Path        string
	Args        []string
	Env         []string
	Dir         string
	SysProcAttr *syscall.SysProcAttr
	ExtraFiles  []*os.File
	ServeAddr   string
}

// Listener is unavailable outside Linux.
func (l *Launch) Listener(timeout time.Duration) (net.Listener, error) { return nil, ErrUnavailable }

// Started does nothing outside Linux.
func (l *Launch) Started(pid int) error { return nil }

// Close does nothing outside Linux.
func (l *Launch) Close() {}

// Swept is a process of an earlier invocation that Sweep killed.
type Swept struct {
	PID       int
	Program   string
	Kind      string
	Processes int
}

// Sweep has nothing to do outside Linux: nothing is recorded.
func Sweep(dir string) ([]Swept, error) { return nil, nil }

// Prepare refuses anything but Unconfined outside Linux.
func (c Config) Prepare(workspace, dir string, argv, env []string) (*Launch, error) {
	if !c.Unconfined {
		return nil, ErrUnavailable
	}
	return &Launch{Path: argv[0], Args: argv, Env: env, Dir: dir, SysProcAttr: &syscall.SysProcAttr{}}, nil
}

// Available is ErrUnavailable outside Linux.
func Available() error { return ErrUnavailable }

// Report is what this machine enforces.
type Report struct {
	OS       string   `json:"os"`
	Enforced []string `json:"enforced"`
	Missing  []string `json:"missing,omitempty"`
}

// Check says that nothing but process limits is enforced here.
func Check() Report {
	return Report{OS: runtime.GOOS, Missing: []string{"namespaces: the sandbox is Linux only; tools are refused unless the spec sets sandbox.unconfined: true"}}
}
