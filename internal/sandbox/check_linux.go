package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	IPCNS     Probe  `json:"ipc_namespace"`
	UTSNS     Probe  `json:"uts_namespace"`
	Full      Probe  `json:"full_sandbox"`
	RlimitAS  Probe  `json:"rlimit_as"`
	RlimitCPU Probe  `json:"rlimit_cpu"`
	Cgroup    string `json:"cgroup"` // v2, v1 or none
	// CgroupMemory and CgroupPids say whether each call gets a cgroup
	// memory limit and process cap; CgroupReason why v2 (or more) is not
	// usable.
	CgroupMemory bool   `json:"cgroup_memory"`
	CgroupPids   bool   `json:"cgroup_pids"`
	CgroupReason string `json:"cgroup_reason,omitempty"`
	// Seccomp is "not used": the sandbox filters no system calls.
	Seccomp string `json:"seccomp"`
	// MinimalRoot is the tool's root built from the kept folders only.
	MinimalRoot Probe    `json:"minimal_root"`
	KeptFolders []string `json:"kept_folders,omitempty"`
	// Sockets is the scan, from inside a probe sandbox, of every unix
	// socket in the tool's view.
	Sockets SocketScan `json:"sockets"`
	// Pdeathsig is the parent-death signal the init holds (SIGKILL).
	Pdeathsig Probe `json:"pdeathsig"`
	// Server is a long-lived sandboxed process with pipes (Config.Start,
	// how MCP servers on stdio run): started, echoed a line, killed.
	Server Probe `json:"long_lived_server"`
	// Enforced lists what a tool subprocess gets by default here.
	Enforced []string `json:"enforced"`
	// Missing lists what is not enforced, with the reason.
	Missing []string `json:"missing,omitempty"`
}

// SocketScan is what a probe sandbox found walking its whole view (but
// /proc): the sockets its set-up covered with /dev/null, and any left
// that a tool could connect to.
type SocketScan struct {
	Scanned   bool     `json:"scanned"`
	Covered   []string `json:"covered"`
	Reachable []string `json:"reachable"`
	Error     string   `json:"error,omitempty"`
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
// throwaway workspace, and stops before starting anything. With scan, the
// init walks its view for sockets and reports them.
func fullProbe() error {
	_, err := runProbe(false)
	return err
}

func runProbe(scan bool) (scanReport, error) {
	var rep scanReport
	if !hosted.Load() {
		return rep, ErrNoHost
	}
	ws, err := os.MkdirTemp("", "agentctl-probe-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(ws)
	ic := initConfig{Workspace: ws, Dir: ws, Argv: []string{"true"}, Hide: []string{}, NetDenied: true, Probe: true, Scan: scan}
	if scan {
		ic.Hide = resolveHide(DefaultHide())
	}
	lr, lw, err := os.Pipe()
	if err != nil {
		return rep, err
	}
	defer lw.Close()
	ic.LifelineFD = 3
	b, _ := json.Marshal(ic)
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"agentctl-sandbox-probe"}
	cmd.Env = []string{envInit + "=" + string(b)}
	cmd.SysProcAttr = nsAttr(true)
	cmd.ExtraFiles = []*os.File{lr}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	err = cmd.Start()
	lr.Close()
	if err != nil {
		return rep, err
	}
	go func() { done <- cmd.Wait() }()
	limit := 10 * time.Second
	if scan {
		limit = 2 * time.Minute // a cold walk of /usr takes seconds
	}
	select {
	case err := <-done:
		if err != nil {
			if msg := strings.TrimSpace(errOut.String() + out.String()); msg != "" {
				return rep, fmt.Errorf("%v: %s", err, msg)
			}
			return rep, err
		}
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		return rep, fmt.Errorf("the probe did not finish in %s", limit)
	}
	if scan {
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			return rep, fmt.Errorf("the probe's report: %v", err)
		}
	}
	return rep, nil
}

// pdeathsigProbe checks the parent-death signal the probe's init holds
// after setting it, as the kernel reports it (PR_GET_PDEATHSIG).
func pdeathsigProbe(sig int) error {
	if sig != int(syscall.SIGKILL) {
		return fmt.Errorf("the sandbox init holds parent-death signal %d, not SIGKILL", sig)
	}
	return nil
}

// Check probes every mechanism the sandbox uses and says what is enforced.
// It takes a second or more: it scans the sandbox's view for sockets.
func Check() Report {
	r := Report{OS: "linux", Root: os.Geteuid() == 0, Hosted: hosted.Load(), Seccomp: "not used"}
	r.UserNS = probeOf(cloneProbe(unix.CLONE_NEWUSER))
	r.MountNS = probeOf(cloneProbe(unix.CLONE_NEWNS))
	r.NetNS = probeOf(cloneProbe(unix.CLONE_NEWNET))
	r.PIDNS = probeOf(cloneProbe(unix.CLONE_NEWPID))
	r.IPCNS = probeOf(cloneProbe(unix.CLONE_NEWIPC))
	r.UTSNS = probeOf(cloneProbe(unix.CLONE_NEWUTS))
	r.Full = probeOf(Available())
	var lim unix.Rlimit
	r.RlimitAS = probeOf(unix.Getrlimit(unix.RLIMIT_AS, &lim))
	r.RlimitCPU = probeOf(unix.Getrlimit(unix.RLIMIT_CPU, &lim))
	cg := cgroups()
	r.Cgroup, r.CgroupMemory, r.CgroupPids, r.CgroupReason = cg.Kind, cg.Memory, cg.Pids, cg.Reason
	for _, k := range keptFolders {
		if _, err := os.Lstat("/" + k); err == nil {
			r.KeptFolders = append(r.KeptFolders, "/"+k)
		}
	}
	if r.Full.OK {
		r.MinimalRoot = Probe{OK: true}
		scan, err := runProbe(true)
		if err != nil {
			r.Sockets.Error = err.Error()
			r.Pdeathsig = probeOf(err)
		} else {
			r.Sockets = SocketScan{Scanned: true, Covered: scan.Covered, Reachable: scan.Reachable}
			r.Pdeathsig = probeOf(pdeathsigProbe(scan.Pdeathsig))
		}
		r.Server = probeOf(serverProbe())
	} else {
		r.MinimalRoot = Probe{Error: "needs the full sandbox"}
		r.Sockets.Error = "needs the full sandbox"
		r.Pdeathsig = Probe{Error: "needs the full sandbox"}
		r.Server = Probe{Error: "needs the full sandbox"}
	}
	if r.Sockets.Covered == nil {
		r.Sockets.Covered = []string{}
	}
	if r.Sockets.Reachable == nil {
		r.Sockets.Reachable = []string{}
	}

	if r.Full.OK {
		r.Enforced = append(r.Enforced,
			"network: denied by default (new network namespace, loopback only, abstract unix sockets of the host unreachable; allowlist through a forwarder)",
			"filesystem: a new root of "+strings.Join(r.KeptFolders, " ")+" (read-only), the workspace (writable), a private /tmp and a minimal /dev and /proc; nothing else of the host exists for the tool (no /home, /root, /run, /var, /sys); credential folders and the agentctl home hidden where they fall inside these, symlinked ones at their targets too",
			"host unix sockets: none in the tool's view; sockets found in the kept folders other than /usr and in read-only tool folders are covered with /dev/null at every call",
			"processes: new PID namespace (nothing outlives the tool), own process group, no TTY, stdin closed",
			"harness death: the sandbox init holds a parent-death signal (SIGKILL) and watches a pipe from the harness, so a killed harness takes every tool process with it; resume kills any recorded process of an earlier attempt before reconciling",
			"privileges: every capability dropped, no_new_privs; the sandbox init is not dumpable (a tool cannot open /proc/1)",
			"long-lived servers (MCP servers on stdio): the same init, namespaces, root, hidden paths, network policy, cgroup and rlimits as a tool call, with stdin and stdout as pipes to the harness; the cgroup and RLIMIT_CPU cover the server's whole life; killed with its namespace when the run ends, the server misbehaves or the harness dies, and recorded for resume's sweep",
		)
		if len(r.Sockets.Reachable) > 0 {
			r.Missing = append(r.Missing, "host unix sockets: the scan found sockets a tool can reach: "+strings.Join(r.Sockets.Reachable, ", "))
		}
		if r.Sockets.Error != "" {
			r.Missing = append(r.Missing, "socket scan: "+r.Sockets.Error)
		}
	} else {
		r.Missing = append(r.Missing, "namespaces: "+r.Full.Error+"; tools are refused unless the spec sets sandbox.unconfined: true")
		r.Enforced = append(r.Enforced, "processes: own process group, no TTY, stdin closed (without namespaces a process that calls setsid escapes the group)")
	}
	switch {
	case cg.Memory && cg.Pids:
		r.Enforced = append(r.Enforced, fmt.Sprintf("limits: a cgroup (%s) per call with a memory limit and a process cap (sandbox.memory, sandbox.pids), killed whole at the end of the call; CPU time (RLIMIT_CPU), wall-clock timeout, output bytes", cg.Kind))
	case cg.Memory:
		r.Enforced = append(r.Enforced, fmt.Sprintf("limits: a cgroup (%s) per call with a memory limit; CPU time (RLIMIT_CPU), wall-clock timeout, output bytes", cg.Kind))
		r.Missing = append(r.Missing, "process cap: no writable pids cgroup ("+cg.Reason+"); sandbox.pids is not enforced")
	default:
		r.Enforced = append(r.Enforced, "limits: memory (RLIMIT_AS, address space, per process), CPU time (RLIMIT_CPU), wall-clock timeout, output bytes")
		if cg.Pids {
			r.Enforced = append(r.Enforced, fmt.Sprintf("process cap: a pids cgroup (%s) per call", cg.Kind))
		}
		r.Missing = append(r.Missing, "cgroup memory limit: none usable ("+cg.Reason+"); memory is capped by RLIMIT_AS, which counts address space, not resident memory")
		if !cg.Pids {
			r.Missing = append(r.Missing, "process cap: no usable pids cgroup; sandbox.pids is not enforced")
		}
	}
	if cg.Kind != CgroupV2 {
		r.Missing = append(r.Missing, "cgroup v2: "+cg.Reason)
	}
	r.Enforced = append(r.Enforced,
		"environment: scrubbed to PATH, HOME, LANG, TMPDIR and the variables the spec passes through",
		"redaction: secrets (.env values, secret-looking variables, token formats) replaced in every string of every event before it is recorded, and in the files a bundle copies from the workspace",
	)
	r.Missing = append(r.Missing,
		"seccomp: not used (no system call is filtered; the namespaces, the dropped capabilities and no_new_privs are the boundary)",
		"unconfined tools (sandbox.unconfined): no namespaces, no cgroup; only a parent-death signal on the direct child and its process group, which resume kills",
	)
	return r
}

// serverProbe starts a long-lived process the way an MCP server on stdio
// runs (Config.Start, default policy, in a scratch workspace), sends it a
// line, reads the line back and kills it.
func serverProbe() error {
	ws, err := os.MkdirTemp("", "agentctl-server-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	p, err := Config{}.Start(ws, []string{"cat"}, []string{"PATH=/usr/bin:/bin"}, nil)
	if err != nil {
		return err
	}
	defer p.Kill()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := io.ReadAtLeast(p.Stdout, buf, len("ping\n"))
		got <- string(buf[:n])
	}()
	if _, err := p.Stdin.Write([]byte("ping\n")); err != nil {
		return fmt.Errorf("write to the server: %w", err)
	}
	select {
	case s := <-got:
		if s != "ping\n" {
			return fmt.Errorf("the server answered %q, want %q", s, "ping\n")
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the server did not answer within 10s")
	}
	p.Kill()
	select {
	case <-p.Done():
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("the server was still running 5s after it was killed")
	}
}
