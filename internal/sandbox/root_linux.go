package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// keptFolders are the host folders a tool's root is built from: what
// programs, their libraries and their configuration need. Nothing else of
// the host exists in the sandbox, so no host socket path outside them
// (under /run, /var, /tmp, /home, /root, ...) can be named, let alone
// connected to. A kept name that is a symlink on the host (/bin ->
// usr/bin) is a symlink in the sandbox too.
var keptFolders = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt"}

// unscannedFolders are kept folders whose sockets are not looked for at
// every call: walking /usr takes 0.2 s warm (150,000 entries on a
// development machine) and seconds cold, for a folder the system keeps
// read-only by convention. `agentctl sandbox check` scans it.
var unscannedFolders = map[string]bool{"usr": true}

// oldRoot is where the host's root hangs while the sandbox's root is
// built; it is detached before the tool starts.
const oldRoot = "/.oldroot"

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

// devNodes are bound into the sandbox's own /dev; nothing else of the
// host's /dev (disks, the console, /dev/log) is reachable.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// kept is one kept folder as the host has it.
type kept struct {
	name     string // "usr"
	link     string // the symlink's text, when the host's /name is one
	resolved string // the real folder behind a symlink
}

// rootView is what setupMounts produced, for the probe's report.
type rootView struct {
	covered []string // sockets covered with /dev/null
}

// setupMounts builds the file system the tool sees, in a mount namespace
// of its own, in order:
//
//  1. every mount becomes private, so nothing propagates back to the host;
//  2. a new root on an empty tmpfs, pivoted into, with the host's root
//     hanging at /.oldroot until step 9;
//  3. the kept folders (keptFolders that exist), bound read-only and
//     recursively; a kept symlink whose target is kept is recreated, any
//     other is replaced by its target's folder;
//  4. fresh mounts: /proc (the PID namespace's own, /proc/sys read-only),
//     /tmp (a private writable tmpfs), /dev (null, zero, full, random,
//     urandom, shm and the fd links);
//  5. the workspace (bound writable at its own path; its parent folders
//     are empty folders of the new root), the Config.ReadOnly folders
//     (read-only at theirs) and the hidden paths (an empty tmpfs, or
//     /dev/null over a file), shallowest first, each over what contains
//     it: a home hidden around the workspace before the workspace is bound
//     into it, a home inside the workspace or a read-only folder after;
//     then the host's symlinks on the way to them (initConfig.Links),
//     where the sandbox has nothing of that name, so a path the caller
//     gave through a symlinked folder resolves as on the host;
//  6. every unix socket found in the kept folders (but /usr, see
//     unscannedFolders) and in the read-only folders, outside the
//     workspace, is covered with /dev/null;
//  7. the hiding tmpfs are made read-only;
//  8. /etc/hosts with the allowlisted names, and a /etc/resolv.conf that
//     links out of the kept folders made to resolve;
//  9. the host's root is detached and the new root made read-only.
//
// A host path outside all of these does not exist for the tool.
func setupMounts(ic initConfig) (rootView, error) {
	var view rootView
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return view, fmt.Errorf("make / private: %w", err)
	}
	// Everything taken from the host by path is opened now: the new root
	// goes over /tmp, where a workspace may live.
	wsFD, err := unix.Open(ic.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return view, fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(wsFD)
	devFDs := map[string]int{}
	for _, n := range devNodes {
		fd, err := unix.Open("/dev/"+n, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return view, fmt.Errorf("open /dev/%s: %w", n, err)
		}
		defer unix.Close(fd)
		devFDs[n] = fd
	}
	roFDs := map[string]int{}
	for _, p := range ic.ReadOnly {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return view, fmt.Errorf("open %s: %w", p, err)
		}
		defer unix.Close(fd)
		roFDs[p] = fd
	}
	ms, err := mounts()
	if err != nil {
		return view, fmt.Errorf("read mountinfo: %w", err)
	}
	var keep []kept
	for _, n := range keptFolders {
		fi, err := os.Lstat("/" + n)
		if err != nil {
			continue
		}
		k := kept{name: n}
		if fi.Mode()&os.ModeSymlink != 0 {
			k.link, _ = os.Readlink("/" + n)
			r, err := filepath.EvalSymlinks("/" + n)
			if err != nil {
				continue // dangling on the host
			}
			if st, err := os.Stat(r); err != nil || !st.IsDir() {
				continue
			}
			k.resolved = r
		} else if !fi.IsDir() {
			continue
		}
		keep = append(keep, k)
	}
	resolv, _ := filepath.EvalSymlinks("/etc/resolv.conf")

	// 2. The new root.
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size=1m"); err != nil {
		return view, fmt.Errorf("new root: %w", err)
	}
	if err := os.Mkdir("/tmp"+oldRoot, 0o700); err != nil {
		return view, fmt.Errorf("new root: %w", err)
	}
	if err := unix.PivotRoot("/tmp", "/tmp"+oldRoot); err != nil {
		return view, fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return view, err
	}
	// 4, first: /proc, so /proc/self/fd/N names the descriptors above.
	if err := os.Mkdir("/proc", 0o555); err != nil {
		return view, err
	}
	if err := mountProc(); err != nil {
		return view, fmt.Errorf("/proc: %w", err)
	}

	// 3. The kept folders.
	keptDir := func(p string) bool {
		for _, k := range keep {
			if k.link == "" && within("/"+k.name, p) {
				return true
			}
		}
		return false
	}
	for _, k := range keep {
		if k.link != "" {
			continue
		}
		if err := bindRO(oldRoot+"/"+k.name, "/"+k.name, mountOf("/"+k.name, ms).flags); err != nil {
			return view, err
		}
	}
	for _, k := range keep {
		if k.link == "" {
			continue
		}
		if keptDir(k.resolved) {
			if err := os.Symlink(k.link, "/"+k.name); err != nil {
				return view, err
			}
			continue
		}
		if err := bindRO(oldRoot+k.resolved, "/"+k.name, mountOf(k.resolved, ms).flags); err != nil {
			return view, err
		}
	}

	// 4. /tmp and /dev.
	if err := os.Mkdir("/tmp", 0o1777); err != nil {
		return view, err
	}
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+tmpSize); err != nil {
		return view, fmt.Errorf("/tmp: %w", err)
	}
	if err := os.Mkdir("/dev", 0o755); err != nil {
		return view, err
	}
	if err := mountDev(devFDs); err != nil {
		return view, fmt.Errorf("/dev: %w", err)
	}

	// 5. The workspace, the read-only folders and the hidden paths,
	// shallowest first, so that each goes over what contains it: a home
	// hidden around the workspace is covered before the workspace is
	// bound into it, a read-only folder around the workspace is bound
	// before the workspace, a home inside a read-only folder or the
	// workspace is hidden after they are bound.
	var hiddenTmpfs []string
	hide := func(p string) error {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // absent from the sandbox, or already under a cover
		}
		switch {
		case fi.IsDir():
			if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=755,size=64k"); err != nil {
				return fmt.Errorf("hide %s: %w", p, err)
			}
			hiddenTmpfs = append(hiddenTmpfs, p)
		case fi.Mode()&os.ModeSymlink != 0:
			// A link cannot be mounted over; the harness hides its
			// target (Prepare adds every resolved hidden path).
		default:
			if err := unix.Mount("/dev/null", p, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("hide %s: %w", p, err)
			}
		}
		return nil
	}
	type op struct {
		path string
		do   func() error
		rank int // at one depth: binds first, then hides
	}
	ops := []op{{ic.Workspace, func() error {
		if err := os.MkdirAll(ic.Workspace, 0o755); err != nil {
			return fmt.Errorf("workspace mount point: %w", err)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", wsFD), ic.Workspace, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind workspace: %w", err)
		}
		return nil
	}, 0}}
	for _, p := range ic.ReadOnly {
		ops = append(ops, op{p, func() error {
			return bindRO(fmt.Sprintf("/proc/self/fd/%d", roFDs[p]), p, mountOf(p, ms).flags)
		}, 0})
	}
	for _, h := range ic.Hide {
		h = filepath.Clean(h)
		if !filepath.IsAbs(h) || h == "/" || h == ic.Workspace {
			continue // hiding the workspace itself would leave nothing to do
		}
		ops = append(ops, op{h, func() error { return hide(h) }, 1})
	}
	sort.SliceStable(ops, func(i, j int) bool {
		di, dj := strings.Count(ops[i].path, "/"), strings.Count(ops[j].path, "/")
		if di != dj {
			return di < dj
		}
		return ops[i].rank < ops[j].rank
	})
	for _, o := range ops {
		if err := o.do(); err != nil {
			return view, err
		}
	}

	// 5b. The host's symlinks on the way to the workspace and the
	// read-only folders, where the sandbox has nothing by their name.
	if err := makeLinks(ic.Links); err != nil {
		return view, err
	}

	// 6. Sockets in the kept folders and the read-only folders; the
	// workspace is the tool's own.
	var scan []string
	for _, k := range keep {
		if k.link == "" && !unscannedFolders[k.name] {
			scan = append(scan, "/"+k.name)
		}
	}
	scan = append(scan, ic.ReadOnly...)
	covered, err := coverSockets(scan, ic.Workspace)
	view.covered = covered
	if err != nil {
		return view, err
	}

	// 7.
	for _, p := range hiddenTmpfs {
		if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return view, fmt.Errorf("make %s read-only: %w", p, err)
		}
	}

	// 8.
	if hosts := hostsFile(ic.Forwards); hosts != "" {
		if err := bindContent("/etc/hosts", hosts); err != nil {
			return view, fmt.Errorf("/etc/hosts: %w", err)
		}
	}
	if err := resolvConf(resolv, keptDir); err != nil {
		return view, fmt.Errorf("/etc/resolv.conf: %w", err)
	}

	// 9.
	if err := unix.Unmount(oldRoot, unix.MNT_DETACH); err != nil {
		return view, fmt.Errorf("detach the host's root: %w", err)
	}
	if err := os.Remove(oldRoot); err != nil {
		return view, err
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return view, fmt.Errorf("make the root read-only: %w", err)
	}
	return view, nil
}

// makeLinks makes each link in the new root unless something is already
// at its path (a kept folder, a bound one, a hiding mount, a link made
// for an earlier path).
func makeLinks(links []link) error {
	for _, l := range links {
		if _, err := os.Lstat(l.Path); err == nil || !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
			return fmt.Errorf("link %s: %w", l.Path, err)
		}
		if err := os.Symlink(l.Target, l.Path); err != nil {
			return fmt.Errorf("link %s -> %s: %w", l.Path, l.Target, err)
		}
	}
	return nil
}

// insideAny reports whether p is one of roots or under one.
func insideAny(roots []string, p string) bool {
	for _, r := range roots {
		if within(r, p) {
			return true
		}
	}
	return false
}

// bindRO binds src at dst (created as a folder) read-only, with every
// mount below it read-only too. flags are the per-mount flags of the
// source that a user namespace does not let a remount clear.
func bindRO(src, dst string, flags uintptr) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("mount point %s: %w", dst, err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dst, err)
	}
	err := unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("make %s read-only: %w", dst, err)
	}
	// Before Linux 5.12: the top mount only. Mounts below a kept folder
	// are rare; `sandbox check` names the kernel.
	if err := unix.Mount("", dst, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|flags, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", dst, err)
	}
	return nil
}

// coverSockets binds /dev/null over every unix socket under roots, so that
// none of them can be connected to. A read-only mount does not stop
// connect(2) and seccomp cannot see a socket's path; a socket that is not
// there can be neither. Links are not followed.
func coverSockets(roots []string, skip string) ([]string, error) {
	var covered []string
	for _, root := range outermost(roots) {
		var socks []string
		socketsUnder(root, func(p string) bool { return p == skip }, &socks)
		for _, s := range socks {
			if err := unix.Mount("/dev/null", s, "", unix.MS_BIND, ""); err != nil {
				return covered, fmt.Errorf("cover the socket %s: %w", s, err)
			}
			covered = append(covered, s)
		}
	}
	return covered, nil
}

// outermost is roots without those that lie in another one (each folder
// is walked once), in their order.
func outermost(roots []string) []string {
	var out []string
	for i, r := range roots {
		r = filepath.Clean(r)
		inner := false
		for j, o := range roots {
			o = filepath.Clean(o)
			if (j < i || o != r) && within(o, r) {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, r)
		}
	}
	return out
}

// socketsUnder appends the unix sockets below dir to out, not looking into
// the folders skip says to leave out.
// It runs at every sandboxed call over a thousand or so entries (/etc,
// /opt), in a process that has just started, so it reads the folders with
// getdents(2) into one buffer and builds a string only for a folder or a
// socket: filepath.WalkDir, which sorts and allocates per entry, took
// about 3 ms of the init's time. Unreadable folders are skipped, as the
// tool could not list them either.
func socketsUnder(dir string, skip func(path string) bool, out *[]string) {
	buf := make([]byte, 32<<10)
	var walk func(fd int, path string)
	walk = func(fd int, path string) {
		defer unix.Close(fd)
		for {
			n, err := unix.Getdents(fd, buf)
			if err != nil || n <= 0 {
				return
			}
			// The buffer is reused by the recursion: collect this batch's
			// folders first.
			var subdirs []string
			for off := 0; off < n; {
				reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
				typ := buf[off+18]
				name := buf[off+19 : off+reclen]
				if i := bytes.IndexByte(name, 0); i >= 0 {
					name = name[:i]
				}
				off += reclen
				if len(name) == 0 || string(name) == "." || string(name) == ".." {
					continue
				}
				if typ == unix.DT_UNKNOWN {
					var st unix.Stat_t
					if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
						continue
					}
					switch st.Mode & unix.S_IFMT {
					case unix.S_IFDIR:
						typ = unix.DT_DIR
					case unix.S_IFSOCK:
						typ = unix.DT_SOCK
					}
				}
				switch typ {
				case unix.DT_SOCK:
					*out = append(*out, path+"/"+string(name))
				case unix.DT_DIR:
					subdirs = append(subdirs, string(name))
				}
			}
			for _, name := range subdirs {
				p := path + "/" + name
				if skip(p) {
					continue
				}
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err == nil {
					walk(sub, p)
				}
			}
		}
	}
	if skip(dir) {
		return
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	walk(fd, strings.TrimSuffix(dir, "/")) // "/" is walked with the prefix ""
}

// findSockets lists the unix sockets in the sandbox's view below /, for
// the probe of `sandbox check`: with the root built right, none.
func findSockets() []string {
	var out []string
	socketsUnder("/", func(p string) bool { return p == "/proc" || p == "/sys" }, &out)
	return out
}

// resolvConf makes /etc/resolv.conf resolve when it links out of the kept
// folders (systemd-resolved's /run/systemd/resolve/stub-resolv.conf), by
// binding the one file the link names at its place in the new root.
func resolvConf(resolved string, kept func(string) bool) error {
	if resolved == "" || kept(resolved) {
		return nil
	}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(resolved), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(resolved, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	if err := unix.Mount(oldRoot+resolved, resolved, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.Mount("", resolved, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
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
