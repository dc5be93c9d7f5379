package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Cgroup kinds, as `sandbox check` reports them.
const (
	CgroupV2   = "v2"
	CgroupV1   = "v1"
	CgroupNone = "none"
)

// cgroupSupport is how this machine can limit a tool call with cgroups:
// a child cgroup per call under the cgroup agentctl runs in, with
// memory.max and pids.max (v2), or under agentctl's memory and pids cgroups
// of the v1 hierarchies (memory.limit_in_bytes, pids.max).
type cgroupSupport struct {
	Kind   string // CgroupV2, CgroupV1 or CgroupNone
	Memory bool
	Pids   bool
	Reason string // why v2 (and v1) are not usable, when Kind is not v2

	v2   string // agentctl's own v2 cgroup folder
	mem  string // v1: agentctl's memory cgroup folder
	pids string // v1: agentctl's pids cgroup folder
}

var (
	cgOnce sync.Once
	cgSup  cgroupSupport
	cgSeq  atomic.Int64
)

// cgroups detects, once per process, what cgroupSupport this machine has.
func cgroups() cgroupSupport {
	cgOnce.Do(func() {
		cgSup = detectCgroups()
		cgSup.removeStale()
	})
	return cgSup
}

// removeStale removes the call cgroups of harnesses that are gone (killed
// before they could remove them) and that are empty: rmdir of a cgroup
// with a process in it fails, so nothing running is touched. Cgroups
// that still hold processes are left to Sweep, which knows their session.
func (s cgroupSupport) removeStale() {
	var parents []string
	switch s.Kind {
	case CgroupV2:
		parents = []string{s.v2}
	case CgroupV1:
		for _, d := range []string{s.mem, s.pids} {
			if d != "" {
				parents = append(parents, filepath.Join(d, "agentctl"))
			}
		}
	}
	for _, parent := range parents {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			name := strings.TrimPrefix(e.Name(), "agentctl-")
			var pid, seq int
			if _, err := fmt.Sscanf(name, "call-%d-%d", &pid, &seq); err != nil || !e.IsDir() {
				continue
			}
			if pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
				continue // a live harness's (or a reused pid's: kept, harmless)
			}
			_ = os.Remove(filepath.Join(parent, e.Name()))
		}
	}
}

// cgroupMount is a cgroup file system mount: v2, or a v1 hierarchy with
// its controllers.
type cgroupMount struct {
	point, root string
	v2          bool
	controllers map[string]bool
}

func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		m := cgroupMount{point: unescapeMount(fields[4]), root: unescapeMount(fields[3]), controllers: map[string]bool{}}
		switch tail[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			for _, o := range strings.Split(tail[2], ",") {
				m.controllers[o] = true
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// ownCgroups reads /proc/self/cgroup: controller (or "" for v2) to path.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// folderOf is where the cgroup path p of a hierarchy is in mount m.
func folderOf(m cgroupMount, p string) (string, bool) {
	if !within(m.root, p) {
		return "", false
	}
	rel := strings.TrimPrefix(p, m.root)
	return filepath.Join(m.point, rel), true
}

// writableChild tries to create and remove a child of dir.
func writableChild(dir string) error {
	probe := filepath.Join(dir, fmt.Sprintf("agentctl-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return err
	}
	return os.Remove(probe)
}

func detectCgroups() cgroupSupport {
	ms, err := cgroupMounts()
	if err != nil {
		return cgroupSupport{Kind: CgroupNone, Reason: "read mountinfo: " + err.Error()}
	}
	own, err := ownCgroups()
	if err != nil {
		return cgroupSupport{Kind: CgroupNone, Reason: "read /proc/self/cgroup: " + err.Error()}
	}
	var why []string
	// v2: the controllers must be enabled for agentctl's children.
	v2ok := false
	for _, m := range ms {
		if !m.v2 {
			continue
		}
		v2ok = true
		dir, ok := folderOf(m, own[""])
		if !ok {
			why = append(why, "v2: agentctl's cgroup is outside the mounted tree")
			break
		}
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err != nil {
			why = append(why, "v2: "+err.Error())
			break
		}
		ctl := strings.Fields(string(b))
		has := func(c string) bool {
			for _, x := range ctl {
				if x == c {
					return true
				}
			}
			return false
		}
		if !has("memory") || !has("pids") {
			why = append(why, fmt.Sprintf("v2: the memory and pids controllers are not enabled in %s/cgroup.subtree_control (it has %q)", dir, strings.TrimSpace(string(b))))
			break
		}
		if err := writableChild(dir); err != nil {
			why = append(why, "v2: "+err.Error())
			break
		}
		return cgroupSupport{Kind: CgroupV2, Memory: true, Pids: true, v2: dir}
	}
	if !v2ok {
		why = append(why, "v2: not mounted")
	}
	// v1: a memory and a pids hierarchy in which agentctl may create
	// children.
	s := cgroupSupport{Kind: CgroupNone}
	for _, c := range []string{"memory", "pids"} {
		found := false
		for _, m := range ms {
			if m.v2 || !m.controllers[c] {
				continue
			}
			found = true
			dir, ok := folderOf(m, own[c])
			if !ok {
				why = append(why, "v1 "+c+": agentctl's cgroup is outside the mounted tree")
				break
			}
			if err := writableChild(dir); err != nil {
				why = append(why, "v1 "+c+": "+err.Error())
				break
			}
			if c == "memory" {
				s.Memory, s.mem = true, dir
			} else {
				s.Pids, s.pids = true, dir
			}
			break
		}
		if !found {
			why = append(why, "v1 "+c+": not mounted")
		}
	}
	if s.Memory || s.Pids {
		s.Kind = CgroupV1
	}
	s.Reason = strings.Join(why, "; ")
	return s
}

// callCgroup is the cgroup (v2) or cgroups (v1: memory, pids) of one
// tool call.
type callCgroup struct {
	Dirs   []string `json:"dirs"`
	Kind   string   `json:"kind"`
	Events string   `json:"events,omitempty"` // memory events file (OOM kills)
	PidEv  string   `json:"pids_events,omitempty"`
	Memory bool     `json:"memory"` // the memory limit is the cgroup's
	Pids   bool     `json:"pids"`
}

// newCallCgroup creates the cgroup of one call with the given limits
// (0 or less: none), or returns nil when cgroups are not usable here.
func newCallCgroup(memory, pids int64) (*callCgroup, error) {
	s := cgroups()
	name := fmt.Sprintf("call-%d-%d", os.Getpid(), cgSeq.Add(1))
	write := func(dir, file string, v int64) error {
		return os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0)
	}
	cg := &callCgroup{Kind: s.Kind}
	fail := func(err error) (*callCgroup, error) {
		cg.remove()
		return nil, err
	}
	switch s.Kind {
	case CgroupV2:
		dir := filepath.Join(s.v2, "agentctl-"+name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		cg.Dirs = []string{dir}
		cg.Events, cg.PidEv = filepath.Join(dir, "memory.events"), filepath.Join(dir, "pids.events")
		if memory > 0 {
			if err := write(dir, "memory.max", memory); err != nil {
				return fail(err)
			}
			_ = write(dir, "memory.swap.max", 0)
			cg.Memory = true
		}
		if pids > 0 {
			if err := write(dir, "pids.max", pids); err != nil {
				return fail(err)
			}
			cg.Pids = true
		}
	case CgroupV1:
		if s.Memory {
			dir := filepath.Join(s.mem, "agentctl", name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fail(err)
			}
			cg.Dirs = append(cg.Dirs, dir)
			cg.Events = filepath.Join(dir, "memory.oom_control")
			if memory > 0 {
				if err := write(dir, "memory.limit_in_bytes", memory); err != nil {
					return fail(err)
				}
				_ = write(dir, "memory.memsw.limit_in_bytes", memory) // no swapping around the limit
				cg.Memory = true
			}
		}
		if s.Pids {
			dir := filepath.Join(s.pids, "agentctl", name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fail(err)
			}
			cg.Dirs = append(cg.Dirs, dir)
			cg.PidEv = filepath.Join(dir, "pids.events")
			if pids > 0 {
				if err := write(dir, "pids.max", pids); err != nil {
					return fail(err)
				}
				cg.Pids = true
			}
		}
	default:
		return nil, nil
	}
	return cg, nil
}

// kill ends every process in the call's cgroups and waits, up to wait,
// until they are empty. It reports how many processes it signalled.
func (c *callCgroup) kill(wait time.Duration) int {
	if c == nil {
		return 0
	}
	n := 0
	deadline := time.Now().Add(wait)
	for _, dir := range c.Dirs {
		if c.Kind == CgroupV2 {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
				n += len(cgroupPids(dir))
			}
		}
		for {
			pids := cgroupPids(dir)
			if len(pids) == 0 {
				break
			}
			for _, pid := range pids {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					n++
				}
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return n
}

// remove kills what is left and removes the call's cgroups.
func (c *callCgroup) remove() {
	if c == nil {
		return
	}
	c.kill(2 * time.Second)
	for _, dir := range c.Dirs {
		for i := 0; i < 50; i++ {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(10 * time.Millisecond) // dying tasks leave late
		}
	}
}

// cgroupPids lists the live processes in a cgroup folder.
func cgroupPids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// cgroupEvents is the init's view of its call's cgroup counters, opened
// before the host's file system goes away.
type cgroupEvents struct {
	mem, pids *os.File
	noted     bool
}

func openEvents(ic initConfig) *cgroupEvents {
	ev := &cgroupEvents{}
	if ic.MemEvents != "" {
		ev.mem, _ = os.Open(ic.MemEvents)
	}
	if ic.PidsEvents != "" {
		ev.pids, _ = os.Open(ic.PidsEvents)
	}
	return ev
}

// counter reads "name N" from a flat-keyed cgroup file.
func counter(f *os.File, name string) int64 {
	if f == nil {
		return 0
	}
	buf := make([]byte, 4096)
	n, _ := f.ReadAt(buf, 0)
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == name {
			x, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return x
		}
	}
	return 0
}

// oomKilled reports whether the cgroup's OOM killer ended a process.
func (e *cgroupEvents) oomKilled() bool {
	if e == nil || counter(e.mem, "oom_kill") == 0 {
		return false
	}
	e.noted = true
	return true
}

// notes says on stderr which cgroup limit stopped something, unless the
// tool's own exit already said so.
func (e *cgroupEvents) notes(ic initConfig) {
	if e == nil {
		return
	}
	if !e.noted && counter(e.mem, "oom_kill") > 0 {
		fmt.Fprintf(os.Stderr, "agentctl sandbox: the memory limit of %d MiB was reached: the cgroup's OOM killer ended a process\n", ic.CgroupMemory>>20)
	}
	if n := counter(e.pids, "max"); n > 0 {
		fmt.Fprintf(os.Stderr, "agentctl sandbox: the limit of %d processes refused %d process start(s)\n", ic.Pids, n)
	}
}

// zombie reports whether pid is gone or a zombie (it runs nothing).
func zombie(pid int) bool {
	st, err := procStat(pid)
	return err != nil || st.state == 'Z' || st.state == 'X'
}

// statInfo is what /proc/<pid>/stat says about a process.
type statInfo struct {
	state byte
	start uint64 // clock ticks after boot
	pgrp  int
}

func procStat(pid int) (statInfo, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return statInfo{}, err
	}
	// The command name may hold spaces and parentheses: fields start
	// after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return statInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return statInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return statInfo{}, err
	}
	pgrp, _ := strconv.Atoi(f[2])
	return statInfo{state: f[0][0], start: start, pgrp: pgrp}, nil
}
