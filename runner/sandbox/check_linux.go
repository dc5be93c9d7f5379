package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Report is what this machine enforces, as `agentctl sandbox check`
// prints it. Its JSON form only grows.
type Report struct {
	OS        string `json:"os"`
	Root      bool   `json:"root"`
	Hosted    bool   `json:"hosted"`
	UserNS    Probe  `json:"user_namespace"`
	MountNS   Probe  `json:"mount_namespace"`
	NetNS     Probe  `json:"network_namespace"`
	PIDNS     Probe  `json:"pid_namespace"`
	Full      Probe  `json:"full_sandbox"`
	RlimitAS  Probe  `json:"rlimit_as"`
	RlimitCPU Probe  `json:"rlimit_cpu"`
	Cgroup    string `json:"cgroup"`
	// Enforced lists what a tool subprocess gets by default here.
	Enforced []string `json:"enforced"`
	// Missing lists what is not enforced, with the reason.
	Missing []string `json:"missing,omitempty"`
}

// Probe is the outcome of one test.
type Probe struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

func probeOf(err error) Probe {
	if err != nil {
		return Probe{Error: err.Error()}
	}
	return Probe{OK: true}
}

var (
	availOnce sync.Once
	availErr  error
)

// Available reports whether the full sandbox can be set up here, by
// starting one confined probe (once per process). The error wraps
// ErrUnavailable with the reason.
func Available() error {
	availOnce.Do(func() {
		if err := fullProbe(); err != nil {
			availErr = fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	})
	return availErr
}

// cloneProbe starts this binary in probe mode with the given namespaces.
func cloneProbe(flags uintptr) error {
	if !hosted.Load() {
		return ErrNoHost
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"agentctl-sandbox-probe"}
	cmd.Env = []string{envProbe + "=1"}
	attr := &syscall.SysProcAttr{Cloneflags: flags}
	if os.Geteuid() != 0 || flags&unix.CLONE_NEWUSER != 0 {
		attr.Cloneflags |= unix.CLONE_NEWUSER
		uid, gid := os.Geteuid(), os.Getegid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
	cmd.SysProcAttr = attr
	return cmd.Run()
}

// fullProbe runs the init with every mount and namespace a tool gets, in a
// throwaway workspace, and stops before starting anything.
func fullProbe() error {
	if !hosted.Load() {
		return ErrNoHost
	}
	ws, err := os.MkdirTemp("", "agentctl-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	ic := fmt.Sprintf(`{"workspace":%q,"dir":%q,"argv":["true"],"hide":[],"net_denied":true,"probe":true}`, ws, ws)
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"agentctl-sandbox-probe"}
	cmd.Env = []string{envInit + "=" + ic}
	cmd.SysProcAttr = nsAttr(true)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			if msg := strings.TrimSpace(out.String()); msg != "" {
				return fmt.Errorf("%v: %s", err, msg)
			}
			return err
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("the probe did not finish in 10s")
	}
}

// Check probes every mechanism the sandbox uses and says what is enforced.
func Check() Report {
	r := Report{OS: "linux", Root: os.Geteuid() == 0, Hosted: hosted.Load()}
	r.UserNS = probeOf(cloneProbe(unix.CLONE_NEWUSER))
	r.MountNS = probeOf(cloneProbe(unix.CLONE_NEWNS))
	r.NetNS = probeOf(cloneProbe(unix.CLONE_NEWNET))
	r.PIDNS = probeOf(cloneProbe(unix.CLONE_NEWPID))
	r.Full = probeOf(Available())
	var lim unix.Rlimit
	r.RlimitAS = probeOf(unix.Getrlimit(unix.RLIMIT_AS, &lim))
	r.RlimitCPU = probeOf(unix.Getrlimit(unix.RLIMIT_CPU, &lim))
	r.Cgroup = cgroupKind()

	if r.Full.OK {
		r.Enforced = append(r.Enforced,
			"network: denied by default (new network namespace, loopback only; allowlist through a forwarder)",
			"filesystem: host read-only, workspace and a private /tmp writable, credential folders, /run and the agentctl home hidden, minimal /dev",
			"processes: new PID namespace (nothing outlives the tool), own process group, no TTY, stdin closed",
			"privileges: every capability dropped, no_new_privs",
		)
	} else {
		r.Missing = append(r.Missing, "namespaces: "+r.Full.Error+"; tools are refused unless the spec sets sandbox.unconfined: true")
		r.Enforced = append(r.Enforced, "processes: own process group, no TTY, stdin closed (without namespaces a process that calls setsid escapes the group)")
	}
	r.Enforced = append(r.Enforced,
		"limits: memory (RLIMIT_AS), CPU time (RLIMIT_CPU), wall-clock timeout, output bytes",
		"environment: scrubbed to PATH, HOME, LANG, TMPDIR and the variables the spec passes through",
		"redaction: secrets replaced in tool output before it is recorded",
	)
	r.Missing = append(r.Missing, "cgroup limits: not used (memory is capped by RLIMIT_AS, which counts address space, not resident memory; no pids limit)")
	return r
}

func cgroupKind() string {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return "none"
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "v2"
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		return "v1"
	}
	return "unknown"
}
