package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	Links     []link    `json:"links,omitempty"`
	NetDenied bool      `json:"net_denied"`
	Forwards  []forward `json:"forwards,omitempty"`
	Memory    int64     `json:"memory"` // RLIMIT_AS, when no cgroup limits memory
	CPU       int64     `json:"cpu"`
	Probe     bool      `json:"probe,omitempty"`
	Scan      bool      `json:"scan,omitempty"` // probe: report the sockets in the view

	LifelineFD   int      `json:"lifeline_fd,omitempty"` // read end of a pipe only the harness writes to
	CtrlFD       int      `json:"ctrl_fd,omitempty"`     // the allowlist forwarder's socket
	Cgroups      []string `json:"cgroups,omitempty"`     // folders whose cgroup.procs the init joins
	CgroupMemory int64    `json:"cgroup_memory,omitempty"`
	MemEvents    string   `json:"mem_events,omitempty"`
	PidsEvents   string   `json:"pids_events,omitempty"`
	Pids         int64    `json:"pids,omitempty"`
	Serve        string   `json:"serve,omitempty"`    // loopback ip:port the init listens on for the harness
	ServeFD      int      `json:"serve_fd,omitempty"` // where it sends that listener
}

// limits is what the exec hop applies, as JSON in envExec.
type limits struct {
	Memory int64 `json:"memory"`
	CPU    int64 `json:"cpu"`
}

// Launch is a prepared sandboxed process: build it with Command, start it
// with Start (which calls Started), and Close it once the process has been
// waited for. The fields are what Command puts in the exec.Cmd.
type Launch struct {
	Path        string
	Args        []string
	Env         []string
	Dir         string
	SysProcAttr *syscall.SysProcAttr
	ExtraFiles  []*os.File
	// ServeAddr is the address the process reaches the harness at, when
	// Config.Serve is set (see Listener).
	ServeAddr string

	serve      *serveSide
	relay      *relay
	childCtrl  *os.File
	lifeline   *os.File // the harness's write end: the init ends when it closes
	childLife  *os.File
	childServe *os.File
	cg         *callCgroup
	procs      string // Config.Procs
	kind       string
	program    string
	record     string // the record file written by Started
}

// Started releases the harness's copy of what only the child needs and,
// with Config.Procs set, records the started process (pid and start time)
// so that a later Sweep can prove it gone. An error means the record could
// not be written; the caller should kill the process and fail the call.
func (l *Launch) Started(pid int) error {
	for _, f := range []**os.File{&l.childCtrl, &l.childLife, &l.childServe} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if l.procs == "" || pid <= 0 || l.record != "" {
		return nil
	}
	r, err := recordOf(pid, l.kind, l.program, l.cg)
	if err != nil {
		return fmt.Errorf("sandbox: record the started process: %w", err)
	}
	path, err := writeRecord(l.procs, r)
	if err != nil {
		return fmt.Errorf("sandbox: record the started process in %s: %w", l.procs, err)
	}
	l.record = path
	return nil
}

// Close stops the allowlist forwarder, closing the connections it relays,
// kills what is left in the call's cgroup and removes it, closes the
// lifeline (which ends an init still running) and removes the process
// record. Call it after the process has been waited for. It is safe to
// call more than once.
func (l *Launch) Close() {
	_ = l.Started(0)
	if l.relay != nil {
		l.relay.close()
	}
	if l.serve != nil {
		l.serve.close()
	}
	if l.lifeline != nil {
		l.lifeline.Close()
		l.lifeline = nil
	}
	if l.cg != nil {
		l.cg.remove()
		l.cg = nil
	}
	if l.record != "" {
		os.Remove(l.record)
		l.record = ""
	}
}

// Prepare turns argv, to be run in dir under workspace with env, into a
// Launch that runs it confined by c. The process leads its own session
// (Setsid) in every case. With c.Unconfined the Launch runs argv directly,
// with a parent-death signal (SIGKILL) as its only tie to the harness;
// otherwise agentctl itself is re-executed as the sandbox init in new
// mount, PID, IPC, UTS (and, when the network is denied, network)
// namespaces, plus a user namespace when not running as root, in a cgroup
// of its own where the machine allows it. Prepare fails with
// ErrUnavailable when the machine cannot do that, and with ErrNoHost when
// the binary never called Init; it never falls back to running
// unconfined.
func (c Config) Prepare(workspace, dir string, argv, env []string) (*Launch, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: empty command")
	}
	if c.Unconfined {
		var ss *serveSide
		addr := ""
		if c.Serve != "" {
			var err error
			if ss, addr, err = hostServe(c.Serve); err != nil {
				return nil, err
			}
		}
		// Pdeathsig covers the direct child only, and fires when the
		// harness thread that forked it exits (Go keeps its threads
		// unless a locked goroutine ends); the process group and the
		// record let Sweep find the rest.
		return &Launch{Path: argv[0], Args: argv, Env: env, Dir: dir,
			SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
			procs:       c.Procs, kind: KindUnconfined, program: argv[0], serve: ss, ServeAddr: addr}, nil
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
	// The workspace and the read-only folders are bound at their resolved
	// paths; the paths the caller knows them by (a program's folder, $HOME)
	// may go through symlinks, which are made again in the sandbox.
	links := hostLinks(workspace)
	for _, p := range c.ReadOnly {
		links = append(links, hostLinks(p)...)
	}
	ic := initConfig{Workspace: ws, Dir: rdir, Argv: argv, Hide: resolveHide(hide), ReadOnly: ro, Links: links, NetDenied: c.networkDenied(),
		Memory: c.memory(), CPU: c.cpuSeconds(), Pids: c.pids()}
	l := &Launch{Path: "/proc/self/exe", Args: []string{"agentctl-sandbox"}, Dir: "/",
		procs: c.Procs, kind: KindInit, program: argv[0]}
	fail := func(err error) (*Launch, error) {
		l.Close()
		return nil, err
	}
	cg, err := newCallCgroup(ic.Memory, ic.Pids)
	if err == nil && cg != nil {
		l.cg = cg
		ic.Cgroups, ic.MemEvents, ic.PidsEvents = cg.Dirs, cg.Events, cg.PidEv
		if cg.Memory {
			// The cgroup counts resident memory; RLIMIT_AS, which counts
			// address space, is only the fallback.
			ic.CgroupMemory, ic.Memory = ic.Memory, 0
		}
	}
	if ic.Pids <= 0 || !cgroupLimitsPids(cg) {
		ic.Pids = 0
	}
	lr, lw, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("sandbox: lifeline: %w", err))
	}
	l.lifeline, l.childLife = lw, lr
	l.ExtraFiles = []*os.File{lr} // fd 3 in the init
	ic.LifelineFD = 3
	if ic.NetDenied && len(c.Allow) > 0 {
		fw, err := forwards(c.Allow)
		if err != nil {
			return fail(err)
		}
		ic.Forwards = fw
		parent, child, err := socketpair()
		if err != nil {
			return fail(fmt.Errorf("sandbox: forwarder socket: %w", err))
		}
		l.relay = startRelay(parent, fw)
		l.childCtrl = child
		l.ExtraFiles = append(l.ExtraFiles, child) // fd 4 in the init
		ic.CtrlFD = 4
	}
	if c.Serve != "" {
		if err := l.prepareServe(c, &ic); err != nil {
			return fail(err)
		}
	}
	b, err := json.Marshal(ic)
	if err != nil {
		return fail(err)
	}
	l.Env = append(append([]string(nil), env...), envInit+"="+string(b))
	l.SysProcAttr = nsAttr(ic.NetDenied)
	return l, nil
}

func cgroupLimitsPids(cg *callCgroup) bool { return cg != nil && cg.Pids }

// resolveHide adds to each hidden path the place it resolves to, when
// that differs: a symlinked ~/.aws, or an agentctl home given as a link,
// must hide what the link names, which a mount over the link itself
// (mount follows links) cannot do.
func resolveHide(hide []string) []string {
	out := append([]string(nil), hide...)
	seen := map[string]bool{}
	for _, h := range hide {
		seen[filepath.Clean(h)] = true
	}
	for _, h := range hide {
		r, err := filepath.EvalSymlinks(h)
		if err != nil || !filepath.IsAbs(r) {
			continue
		}
		if r = filepath.Clean(r); !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
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
		// The init keeps the invoking user's uid, so execve would drop the
		// capabilities the new user namespace gave it; as ambient ones
		// they survive the exec: to mount and pivot, bring up lo, listen
		// on an allowlisted port below 1024 and, in the exec hop, empty
		// the bounding set. The exec hop drops them all before the tool
		// runs.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETPCAP}
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

// link is a symlink of the host made again in the sandbox: Path, an
// absolute path, names the folder Target (absolute, resolved).
type link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// maxLinks bounds the symlinks followed on one path, as the kernel's
// ELOOP limit does.
const maxLinks = 40

// hostLinks lists the symlinks the host follows on the way to the folder p,
// outermost first, so that p resolves in the sandbox as on the host once
// each is made there: a tool's program named through a symlinked folder
// (link/proj/deploy.sh with link -> real) or a workspace under a home given
// through one, whose resolved folders alone are bound. Each link names its
// target resolved, so it leads only to what the sandbox shows anyway. A
// path that does not resolve yields the links up to where it fails.
func hostLinks(p string) []link {
	if !filepath.IsAbs(p) {
		return nil
	}
	var out []link
	p = filepath.Clean(p)
	for len(out) < maxLinks {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur, found := "/", false
		for i, part := range parts {
			next := filepath.Join(cur, part)
			fi, err := os.Lstat(next)
			if err != nil {
				return out
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				cur = next
				continue
			}
			target, err := filepath.EvalSymlinks(next)
			if err != nil || !filepath.IsAbs(target) {
				return out
			}
			out = append(out, link{Path: next, Target: target})
			p = filepath.Join(append([]string{target}, parts[i+1:]...)...)
			found = true
			break
		}
		if !found {
			return out
		}
	}
	return out
}
