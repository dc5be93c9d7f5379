package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Init must be called first thing in main, and in the TestMain of any
// package whose tests run sandboxed tools. In an ordinary process it only
// records that the binary can host the sandbox and returns. In a process
// the sandbox started it runs the hidden mode and never returns:
//
//   - init (AGENTCTL_SANDBOX_INIT): PID 1 of the new namespaces; sets up
//     the mounts and the network, starts the tool (itself, or through the
//     exec hop when RLIMIT_AS is needed: see startTool), reaps, forwards
//     signals and exits with the tool's status, which kills whatever is
//     left in the PID namespace;
//   - exec hop (AGENTCTL_SANDBOX_EXEC): applies rlimits, drops every
//     capability, sets no_new_privs and execs the tool;
//   - probe (AGENTCTL_SANDBOX_PROBE): exits 0, to test that clone works.
func Init() {
	hosted.Store(true)
	hiddenMode()
}

// init is the safety net for binaries that link this package (through
// internal/tools) but never call Init, such as the test binaries of other
// packages: the hidden modes are chosen before any other package's init or
// main runs, so such a binary can host the sandbox too.
func init() {
	hosted.Store(true)
	hiddenMode()
}

func hiddenMode() {
	switch {
	case os.Getenv(envProbe) != "":
		os.Exit(0)
	case os.Getenv(envExec) != "":
		execHop()
	case os.Getenv(envInit) != "":
		os.Exit(initMain())
	}
}

// initFail reports a set-up failure on the tool's output, where the harness
// records it, and returns the exit status for it.
func initFail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "agentctl sandbox: "+format+"\n", args...)
	return 125
}

func initMain() int {
	var ic initConfig
	if err := json.Unmarshal([]byte(os.Getenv(envInit)), &ic); err != nil {
		return initFail("bad init config: %v", err)
	}
	os.Unsetenv(envInit)
	if os.Getpid() != 1 {
		return initFail("init is not PID 1 of a new PID namespace")
	}
	// Die with the harness. The parent-death signal comes first; then the
	// lifeline proves the harness did not die before it was set (getppid
	// says nothing here: the parent is outside the PID namespace, so it
	// is 0). The lifeline also covers what the signal does not: it fires
	// when the harness's forking thread exits, the pipe only when the
	// whole harness process is gone.
	// The signal is a property of the calling thread: stay on it, so
	// that the thread lives as long as the init and the probe below reads
	// back what was set.
	runtime.LockOSThread()
	// Not dumpable: the tool runs as the same user, and the init's other
	// threads keep the capabilities this one drops before it forks
	// (startTool). A dumpable init would let the tool open /proc/1/mem
	// (the kernel checks the capabilities of PID 1's main thread, which
	// has none left) and write code that those threads run.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return initFail("not dumpable: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return initFail("parent-death signal: %v", err)
	}
	if ic.LifelineFD > 0 {
		unix.CloseOnExec(ic.LifelineFD)
		if harnessGone(ic.LifelineFD) {
			return initFail("the harness exited before the sandbox started")
		}
		go watchLifeline(ic.LifelineFD)
	}
	// Join the call's cgroups before anything else runs, so every process
	// the tool starts is counted and limited.
	for _, dir := range ic.Cgroups {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0); err != nil {
			return initFail("join cgroup %s: %v", dir, err)
		}
	}
	events := openEvents(ic)
	if ic.NetDenied {
		if err := loopbackUp(); err != nil {
			return initFail("bring up lo: %v", err)
		}
	}
	var ctrl *os.File
	if len(ic.Forwards) > 0 {
		unix.CloseOnExec(ic.CtrlFD)
		ctrl = os.NewFile(uintptr(ic.CtrlFD), "sandbox-ctrl")
		if err := serveForwards(ctrl, ic.Forwards); err != nil {
			return initFail("allowlist forwarder: %v", err)
		}
	}
	if ic.ServeFD > 0 {
		if err := sendListener(ic.ServeFD, ic.Serve); err != nil {
			return initFail("listen for the harness on %s: %v", ic.Serve, err)
		}
	}
	view, err := setupMounts(ic)
	if err != nil {
		return initFail("mounts: %v", err)
	}
	if err := os.Chdir(ic.Dir); err != nil {
		return initFail("chdir: %v", err)
	}
	if ic.Probe {
		if ic.Scan {
			rep := scanReport{Covered: view.covered, Reachable: findSockets()}
			var sig int32
			if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err == nil {
				rep.Pdeathsig = int(sig)
			}
			_ = json.NewEncoder(os.Stdout).Encode(rep)
		}
		return 0
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd, code := startTool(ic)
	if cmd == nil {
		return code
	}
	var forwarded atomic.Bool
	go func() {
		for s := range sigs {
			// Everything in the namespace but the init itself.
			forwarded.Store(true)
			_ = syscall.Kill(-1, s.(syscall.Signal))
		}
	}()
	code = reap(cmd.Process.Pid, ic, &forwarded, events)
	events.notes(ic)
	return code
}

// startTool starts the tool, or returns the exit status of its failure
// to start. Without an address-space ceiling (the call's cgroup limits
// memory, the usual case) the init starts it itself: capabilities and
// no_new_privs are attributes of a thread, and this one (locked since
// initMain began) is the one that forks, so the tool inherits them
// dropped; RLIMIT_CPU and RLIMIT_CORE are the process's and are inherited
// too, the CPU one counting the init's few milliseconds against its own
// ceiling only. The exec hop applies the limits instead when they would
// bind the long-lived init: RLIMIT_AS (its address space), or RLIMIT_CPU
// when the init relays the allowlist's connections, whose CPU time could
// add up. Going through the hop costs a second start of the agentctl
// binary, about 5 ms of CPU a call.
func startTool(ic initConfig) (*exec.Cmd, int) {
	var cmd *exec.Cmd
	hop := ic.Memory > 0 || len(ic.Forwards) > 0
	if hop {
		lim, _ := json.Marshal(limits{Memory: ic.Memory, CPU: ic.CPU})
		cmd = exec.Command("/proc/self/exe")
		cmd.Args = ic.Argv
		cmd.Env = append(os.Environ(), envExec+"="+string(lim))
	} else {
		path, err := exec.LookPath(ic.Argv[0])
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentctl sandbox: %v\n", err)
			return nil, 127
		}
		if err := confineThread(ic.CPU); err != nil {
			return nil, initFail("%v", err)
		}
		cmd = exec.Command(path)
		cmd.Args = ic.Argv
		cmd.Env = os.Environ()
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		if hop {
			return nil, initFail("start %s: %v", ic.Argv[0], err)
		}
		fmt.Fprintf(os.Stderr, "agentctl sandbox: exec %s: %v\n", ic.Argv[0], err)
		return nil, 126
	}
	return cmd, 0
}

// confineThread readies the calling thread to start the tool: every
// capability dropped and no_new_privs (the thread's, which a fork or exec
// from it passes on), RLIMIT_CPU at secs (none when 0) with the hard
// limit a second above the soft one, so the tool gets SIGXCPU (and the
// init can say why) before the kernel's SIGKILL, and no core dumps.
func confineThread(secs int64) error {
	if err := dropPrivileges(); err != nil {
		return fmt.Errorf("drop privileges: %w", err)
	}
	if secs > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: uint64(secs), Max: uint64(secs + 1)}); err != nil {
			return fmt.Errorf("RLIMIT_CPU: %w", err)
		}
	}
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	return nil
}

// scanReport is what the probe of `sandbox check` prints: the sockets the
// set-up covered and any it left reachable, and the parent-death signal
// the kernel holds for the init.
type scanReport struct {
	Covered   []string `json:"covered"`
	Reachable []string `json:"reachable"`
	Pdeathsig int      `json:"pdeathsig"`
}

// harnessGone reports whether every write end of the lifeline is closed,
// which happens when the harness process has exited.
func harnessGone(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
}

// watchLifeline ends the sandbox when the harness is gone: the read
// returns at end of file once the harness's write end is closed, by its
// exit or by a kill. As PID 1 leaves, the kernel kills every process left
// in the namespace.
func watchLifeline(fd int) {
	buf := make([]byte, 1)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) || (err == nil && n > 0) {
			continue
		}
		_ = syscall.Kill(-1, syscall.SIGKILL)
		os.Exit(137)
	}
}

// reap waits for every child (orphans are re-parented to the init) until
// the tool itself exits, and returns its exit status.
func reap(pid int, ic initConfig, forwarded *atomic.Bool, ev *cgroupEvents) int {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return initFail("wait: %v", err)
		}
		if wpid != pid {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			sig := ws.Signal()
			note := ""
			switch sig {
			case syscall.SIGXCPU:
				note = fmt.Sprintf(" (CPU time limit of %ds reached)", ic.CPU)
			case syscall.SIGSEGV, syscall.SIGABRT:
				if ic.Memory > 0 {
					note = fmt.Sprintf(" (memory limit is %d MiB)", ic.Memory>>20)
				}
			case syscall.SIGKILL:
				if ev.oomKilled() {
					note = fmt.Sprintf(" (memory limit of %d MiB reached: the cgroup's OOM killer ended it)", ic.CgroupMemory>>20)
				}
			}
			if forwarded.Load() || sig == syscall.SIGTERM || sig == syscall.SIGINT || sig == syscall.SIGHUP || sig == syscall.SIGPIPE {
				// A cancel from the harness: it reports that itself.
				return 128 + int(sig)
			}
			fmt.Fprintf(os.Stderr, "agentctl sandbox: %s terminated by signal %s%s\n", filepath.Base(ic.Argv[0]), unix.SignalName(sig), note)
			return 128 + int(sig)
		}
	}
}

// execHop applies the limits and drops privileges, then becomes the tool.
func execHop() {
	var lim limits
	if err := json.Unmarshal([]byte(os.Getenv(envExec)), &lim); err != nil {
		fmt.Fprintf(os.Stderr, "agentctl sandbox: bad limits: %v\n", err)
		os.Exit(125)
	}
	os.Unsetenv(envExec)
	argv := os.Args
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentctl sandbox: %v\n", err)
		os.Exit(127)
	}
	if err := confineThread(lim.CPU); err != nil {
		fmt.Fprintf(os.Stderr, "agentctl sandbox: %v\n", err)
		os.Exit(125)
	}
	// Last, so the Go runtime of this hop never runs under the ceiling for
	// more than the exec itself.
	if lim.Memory > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: uint64(lim.Memory), Max: uint64(lim.Memory)}); err != nil {
			fmt.Fprintf(os.Stderr, "agentctl sandbox: RLIMIT_AS: %v\n", err)
			os.Exit(125)
		}
	}
	err = unix.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "agentctl sandbox: exec %s: %v\n", argv[0], err)
	os.Exit(126)
}

// dropPrivileges empties the capability bounding, ambient, inheritable,
// permitted and effective sets and sets no_new_privs, so the tool (uid 0
// or not) cannot undo the mounts, leave the namespaces or gain privileges
// through a setuid binary.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// loopbackUp brings up lo in the new network namespace, so a tool can talk
// to servers it starts itself.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
