package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Init must be called first thing in main, and in the TestMain of any
// package whose tests run sandboxed tools. In an ordinary process it only
// records that the binary can host the sandbox and returns. In a process
// the sandbox started it runs the hidden mode and never returns:
//
//   - init (AGENTCTL_SANDBOX_INIT): PID 1 of the new namespaces; sets up
//     the mounts and the network, starts the exec hop, reaps, forwards
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
// runner/tools) but never call Init, such as the test binaries of other
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
	if ic.NetDenied {
		if err := loopbackUp(); err != nil {
			return initFail("bring up lo: %v", err)
		}
	}
	var ctrl *os.File
	if len(ic.Forwards) > 0 {
		ctrl = os.NewFile(3, "sandbox-ctrl")
		if err := serveForwards(ctrl, ic.Forwards); err != nil {
			return initFail("allowlist forwarder: %v", err)
		}
	}
	if err := setupMounts(ic); err != nil {
		return initFail("mounts: %v", err)
	}
	if err := os.Chdir(ic.Dir); err != nil {
		return initFail("chdir: %v", err)
	}
	if ic.Probe {
		return 0
	}

	lim, _ := json.Marshal(limits{Memory: ic.Memory, CPU: ic.CPU})
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = ic.Argv
	cmd.Env = append(os.Environ(), envExec+"="+string(lim))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		return initFail("start %s: %v", ic.Argv[0], err)
	}
	var forwarded atomic.Bool
	go func() {
		for s := range sigs {
			// Everything in the namespace but the init itself.
			forwarded.Store(true)
			_ = syscall.Kill(-1, s.(syscall.Signal))
		}
	}()
	return reap(cmd.Process.Pid, ic, &forwarded)
}

// reap waits for every child (orphans are re-parented to the init) until
// the tool itself exits, and returns its exit status.
func reap(pid int, ic initConfig, forwarded *atomic.Bool) int {
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
	if err := dropPrivileges(); err != nil {
		fmt.Fprintf(os.Stderr, "agentctl sandbox: drop privileges: %v\n", err)
		os.Exit(125)
	}
	set := func(res int, v, slack int64) error {
		if v <= 0 {
			return nil
		}
		return unix.Setrlimit(res, &unix.Rlimit{Cur: uint64(v), Max: uint64(v + slack)})
	}
	// The CPU hard limit is a second above the soft one, so the tool gets
	// SIGXCPU (and the init can say why) before the kernel's SIGKILL.
	if err := set(unix.RLIMIT_CPU, lim.CPU, 1); err != nil {
		fmt.Fprintf(os.Stderr, "agentctl sandbox: RLIMIT_CPU: %v\n", err)
		os.Exit(125)
	}
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	// Last, so the Go runtime of this hop never runs under the ceiling for
	// more than the exec itself.
	if err := set(unix.RLIMIT_AS, lim.Memory, 0); err != nil {
		fmt.Fprintf(os.Stderr, "agentctl sandbox: RLIMIT_AS: %v\n", err)
		os.Exit(125)
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

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	point string
	flags uintptr // the per-mount flags to keep on a remount
}

func mounts() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		e := mountEntry{point: unescapeMount(fields[4])}
		for _, o := range strings.Split(fields[5], ",") {
			switch o {
			case "nosuid":
				e.flags |= unix.MS_NOSUID
			case "nodev":
				e.flags |= unix.MS_NODEV
			case "noexec":
				e.flags |= unix.MS_NOEXEC
			case "noatime":
				e.flags |= unix.MS_NOATIME
			case "nodiratime":
				e.flags |= unix.MS_NODIRATIME
			case "relatime":
				e.flags |= unix.MS_RELATIME
			case "strictatime":
				e.flags |= unix.MS_STRICTATIME
			}
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%3o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// devNodes are bound into the sandbox's own /dev; nothing else of the
// host's /dev (disks, the console) is reachable.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// setupMounts builds the file system view of the tool, in order:
//
//  1. every mount becomes private to the namespace, so nothing propagates
//     back to the host;
//  2. every existing mount is remounted read-only (keeping its nosuid,
//     nodev, noexec and atime flags);
//  3. fresh mounts cover, shallowest first: /tmp (a private writable
//     tmpfs), /dev (a tmpfs with null, zero, full, random, urandom and the
//     /dev/fd links), /proc (the PID namespace's own, with /proc/sys
//     read-only) and every hidden path outside the workspace (an empty
//     tmpfs, or /dev/null over a file);
//  4. the workspace is bound back writable at its own path, even where a
//     cover above went over it (a workspace under /tmp or the agentctl
//     home);
//     Config.ReadOnly folders are bound back the same way, read-only;
//  5. hidden paths inside the workspace are covered, and the hiding tmpfs
//     are made read-only;
//  6. with an allowlist, /etc/hosts maps each allowed name to its
//     forwarder.
func setupMounts(ic initConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	wsFD, err := unix.Open(ic.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(wsFD)
	devFDs := map[string]int{}
	for _, n := range devNodes {
		fd, err := unix.Open("/dev/"+n, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/%s: %w", n, err)
		}
		defer unix.Close(fd)
		devFDs[n] = fd
	}

	roFDs := map[string]int{}
	for _, p := range ic.ReadOnly {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		defer unix.Close(fd)
		roFDs[p] = fd
	}

	ms, err := mounts()
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	for _, m := range ms {
		err := unix.Mount("", m.point, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|m.flags, "")
		if err != nil && !errors.Is(err, unix.ENOENT) {
			// A mount point that is itself shadowed by a later mount
			// cannot be named; the one on top was (or will be) handled.
			if !shadowed(m.point, ms) {
				return fmt.Errorf("remount %s read-only: %w", m.point, err)
			}
		}
	}

	type cover struct {
		path string
		do   func() error
	}
	var covers []cover
	covers = append(covers,
		cover{"/tmp", func() error {
			return unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+tmpSize)
		}},
		cover{"/dev", func() error { return mountDev(devFDs) }},
		cover{"/proc", mountProc},
	)
	var hiddenTmpfs []string
	hide := func(p string) error {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // absent, or already under a cover
		}
		if fi.IsDir() {
			if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=755,size=64k"); err != nil {
				return fmt.Errorf("hide %s: %w", p, err)
			}
			hiddenTmpfs = append(hiddenTmpfs, p)
			return nil
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil // /var/run -> /run: the target is hidden itself
		}
		if err := unix.Mount("/dev/null", p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
		return nil
	}
	var inside []string
	for _, h := range ic.Hide {
		h = filepath.Clean(h)
		if !filepath.IsAbs(h) || h == "/" {
			continue
		}
		if within(h, ic.Workspace) && h == ic.Workspace {
			continue // hiding the workspace itself would leave nothing to do
		}
		if within(ic.Workspace, h) {
			inside = append(inside, h)
			continue
		}
		covers = append(covers, cover{h, func() error { return hide(h) }})
	}
	sort.SliceStable(covers, func(i, j int) bool {
		return strings.Count(covers[i].path, "/") < strings.Count(covers[j].path, "/")
	})
	for _, c := range covers {
		if err := c.do(); err != nil {
			return err
		}
	}

	if err := os.MkdirAll(ic.Workspace, 0o755); err != nil {
		return fmt.Errorf("workspace mount point: %w", err)
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", wsFD), ic.Workspace, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind workspace: %w", err)
	}
	// A bind copies the read-only flag of its source; lift it, keeping the
	// rest of the flags of the mount the workspace lives on.
	if err := unix.Mount("", ic.Workspace, "", unix.MS_REMOUNT|unix.MS_BIND|mountOf(ic.Workspace, ms).flags, ""); err != nil {
		return fmt.Errorf("make the workspace writable: %w", err)
	}
	for _, p := range ic.ReadOnly {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", p, err)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", roFDs[p]), p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|mountOf(p, ms).flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	sort.Strings(inside)
	for _, h := range inside {
		if err := hide(h); err != nil {
			return err
		}
	}
	for _, p := range hiddenTmpfs {
		if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	if hosts := hostsFile(ic.Forwards); hosts != "" {
		if err := bindContent("/etc/hosts", hosts); err != nil {
			return fmt.Errorf("/etc/hosts: %w", err)
		}
	}
	return nil
}

// mountOf returns the mount p lives on: the deepest mount point above it.
func mountOf(p string, ms []mountEntry) mountEntry {
	var best mountEntry
	for _, m := range ms {
		if within(m.point, p) && len(m.point) >= len(best.point) {
			best = m
		}
	}
	return best
}

// shadowed reports whether a later mount sits on p or on one of its
// parents, so p cannot be reached by its path any more.
func shadowed(p string, ms []mountEntry) bool {
	seen := false
	for _, m := range ms {
		if m.point == p && !seen {
			seen = true
			continue
		}
		if seen && within(m.point, p) {
			return true
		}
	}
	return false
}

func mountDev(fds map[string]int) error {
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=64k"); err != nil {
		return err
	}
	for _, n := range devNodes {
		p := "/dev/" + n
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		f.Close()
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fds[n]), p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
	}
	for link, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, "/dev/"+link); err != nil {
			return err
		}
	}
	if err := os.Mkdir("/dev/shm", 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=64m"); err != nil {
		return err
	}
	return unix.Mount("", "/dev", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "")
}

func mountProc() error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// hostsFile is the host's /etc/hosts with the allowlisted names mapped to
// their forwarders first, or "" when no name needs mapping.
func hostsFile(fw []forward) string {
	var b strings.Builder
	for _, f := range fw {
		if f.Alias {
			ip, _, _ := strings.Cut(f.Listen, ":")
			fmt.Fprintf(&b, "%s\t%s\n", ip, f.Host)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	host, _ := os.ReadFile("/etc/hosts")
	b.Write(host)
	return b.String()
}

// bindContent binds a read-only file holding content over path.
func bindContent(path, content string) error {
	fd, err := unix.MemfdCreate("agentctl-"+filepath.Base(path), unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(content)); err != nil {
		return err
	}
	src := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.Mount("", path, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
}
