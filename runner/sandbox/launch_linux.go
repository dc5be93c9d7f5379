package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// hosted is set by Init: the running binary knows the hidden modes, so it
// can be re-executed as the sandbox's init.
var hosted atomic.Bool

// initConfig is what the harness tells the init, as JSON in envInit.
type initConfig struct {
	Workspace string    `json:"workspace"`
	Dir       string    `json:"dir"`
	Argv      []string  `json:"argv"`
	Hide      []string  `json:"hide"`
	ReadOnly  []string  `json:"read_only,omitempty"`
	NetDenied bool      `json:"net_denied"`
	Forwards  []forward `json:"forwards,omitempty"`
	Memory    int64     `json:"memory"`
	CPU       int64     `json:"cpu"`
	Probe     bool      `json:"probe,omitempty"`
}

// limits is what the exec hop applies, as JSON in envExec.
type limits struct {
	Memory int64 `json:"memory"`
	CPU    int64 `json:"cpu"`
}

// Launch is a prepared sandboxed process: start Path with Args, Env, Dir,
// SysProcAttr and ExtraFiles (through os/exec), then call Started, and Close
// once the process has been waited for.
type Launch struct {
	Path        string
	Args        []string
	Env         []string
	Dir         string
	SysProcAttr *syscall.SysProcAttr
	ExtraFiles  []*os.File

	relay     *relay
	childCtrl *os.File
}

// Started releases the harness's copy of what only the child needs.
func (l *Launch) Started() {
	if l.childCtrl != nil {
		l.childCtrl.Close()
		l.childCtrl = nil
	}
}

// Close stops the allowlist forwarder, closing the connections it relays.
// It is safe to call more than once.
func (l *Launch) Close() {
	l.Started()
	if l.relay != nil {
		l.relay.close()
	}
}

// Prepare turns argv, to be run in dir under workspace with env, into a
// Launch that runs it confined by c. The process leads its own session
// (Setsid) in every case. With c.Unconfined the Launch runs argv directly;
// otherwise agentctl itself is re-executed as the sandbox init in new
// mount, PID, IPC, UTS (and, when the network is denied, network)
// namespaces, plus a user namespace when not running as root. Prepare
// fails with ErrUnavailable when the machine cannot do that, and with
// ErrNoHost when the binary never called Init; it never falls back to
// running unconfined.
func (c Config) Prepare(workspace, dir string, argv, env []string) (*Launch, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: empty command")
	}
	if c.Unconfined {
		return &Launch{Path: argv[0], Args: argv, Env: env, Dir: dir,
			SysProcAttr: &syscall.SysProcAttr{Setsid: true}}, nil
	}
	if !hosted.Load() {
		return nil, ErrNoHost
	}
	if err := Available(); err != nil {
		return nil, err
	}
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace: %w", err)
	}
	if ws == "/" || within("/proc", ws) || within("/dev", ws) || within("/sys", ws) {
		return nil, fmt.Errorf("sandbox: workspace %s cannot be confined", ws)
	}
	if dir == "" {
		dir = ws
	}
	rdir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: working directory: %w", err)
	}
	if !within(ws, rdir) {
		return nil, fmt.Errorf("sandbox: working directory %s is outside the workspace %s", dir, ws)
	}
	hide := c.Hide
	if hide == nil {
		hide = DefaultHide()
	}
	var ro []string
	for _, p := range c.ReadOnly {
		if r, err := filepath.EvalSymlinks(p); err == nil && filepath.IsAbs(r) && !within(ws, r) {
			ro = append(ro, r)
		}
	}
	ic := initConfig{Workspace: ws, Dir: rdir, Argv: argv, Hide: hide, ReadOnly: ro, NetDenied: c.networkDenied(),
		Memory: c.memory(), CPU: c.cpuSeconds()}
	l := &Launch{Path: "/proc/self/exe", Args: []string{"agentctl-sandbox"}, Dir: "/"}
	if ic.NetDenied && len(c.Allow) > 0 {
		fw, err := forwards(c.Allow)
		if err != nil {
			return nil, err
		}
		ic.Forwards = fw
		parent, child, err := socketpair()
		if err != nil {
			return nil, fmt.Errorf("sandbox: forwarder socket: %w", err)
		}
		l.relay = startRelay(parent, fw)
		l.childCtrl = child
		l.ExtraFiles = []*os.File{child} // fd 3 in the init
	}
	b, err := json.Marshal(ic)
	if err != nil {
		l.Close()
		return nil, err
	}
	l.Env = append(append([]string(nil), env...), envInit+"="+string(b))
	l.SysProcAttr = nsAttr(ic.NetDenied)
	return l, nil
}

// nsAttr is the clone set-up of the init: a new session, and namespaces.
// As root no user namespace is needed (the init drops every capability
// before the tool runs); otherwise the invoking user is mapped to itself in
// a new user namespace, which grants the init the right to mount.
func nsAttr(newNet bool) *syscall.SysProcAttr {
	flags := uintptr(unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if newNet {
		flags |= unix.CLONE_NEWNET
	}
	attr := &syscall.SysProcAttr{Setsid: true}
	if os.Geteuid() != 0 {
		flags |= unix.CLONE_NEWUSER
		uid, gid := os.Geteuid(), os.Getegid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	attr.Cloneflags = flags
	return attr
}

func socketpair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "sandbox-ctrl"), os.NewFile(uintptr(fds[1]), "sandbox-ctrl-child"), nil
}

// within reports whether the clean absolute path p is root or under it.
func within(root, p string) bool {
	if p == root || root == "/" {
		return true
	}
	return len(p) > len(root) && p[:len(root)] == root && p[len(root)] == '/'
}
