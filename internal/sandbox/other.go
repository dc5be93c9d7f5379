//go:build !linux

package sandbox

import (
	"fmt"
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

// callCgroup is the cgroup of one call, which only Linux has; a Record
// elsewhere never names one.
type callCgroup struct{}

// Sweep has nothing to do outside Linux: nothing is recorded.
func Sweep(dir string) ([]Swept, error) { return nil, nil }

// Prepare refuses anything but Unconfined outside Linux, naming the way
// out, since agentctl runs there but cannot confine a tool. The Launch
// leads its own process group through Command, as on Linux.
func (c Config) Prepare(workspace, dir string, argv, env []string) (*Launch, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: empty command")
	}
	if !c.Unconfined {
		return nil, fmt.Errorf("%w; run tools unconfined with sandbox: {unconfined: true} in the spec or --unsandboxed", errNotLinux)
	}
	return &Launch{Path: argv[0], Args: argv, Env: env, Dir: dir}, nil
}

// errNotLinux is ErrUnavailable saying why: agentctl runs here, only its
// confinement does not.
var errNotLinux = fmt.Errorf("%w: confinement needs Linux namespaces and this is %s", ErrUnavailable, runtime.GOOS)

// Available is ErrUnavailable outside Linux.
func Available() error { return errNotLinux }

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
