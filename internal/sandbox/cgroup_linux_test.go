package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func needCgroups(t *testing.T) cgroupSupport {
	t.Helper()
	needSandbox(t)
	s := cgroups()
	if !s.Memory || !s.Pids {
		t.Skipf("no writable memory and pids cgroups here (%s): %s", s.Kind, s.Reason)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	return s
}

// forkLoop forks up to 300 sleeping children and prints how many forks
// succeeded.
const forkLoop = `python3 -c '
import os, time
n = 0
for i in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(100)
        os._exit(0)
    n += 1
print("forks", n)
'`

// TestCgroupLimits: each call runs in a cgroup of its own that caps its
// processes (pids.max) and its resident memory (memory.max, or
// memory.limit_in_bytes on v1), and the cgroup is gone after the call.
// Memory is the cgroup's, not RLIMIT_AS: reserving address space far
// above the limit is fine, touching memory above it is not.
func TestCgroupLimits(t *testing.T) {
	s := needCgroups(t)
	ws := t.TempDir()
	tests := []struct {
		name   string
		cfg    Config
		script string
		check  func(out string, err error) error
	}{
		{"fork loop stops at pids", Config{Pids: 64}, forkLoop, func(out string, err error) error {
			var n int
			if _, serr := fmt.Sscanf(out[strings.Index(out, "forks"):], "forks %d", &n); serr != nil {
				return fmt.Errorf("no fork count: %v", serr)
			}
			if n >= 64 || !strings.Contains(out, "the limit of 64 processes refused") {
				return fmt.Errorf("%d forks succeeded under a cap of 64", n)
			}
			return nil
		}},
		{"memory hog is killed", Config{Memory: 64 << 20}, `python3 -c 'b = b"x" * (300 << 20); print("survived", len(b))'`, func(out string, err error) error {
			if err == nil || strings.Contains(out, "survived") || !strings.Contains(out, "memory limit of 64 MiB") {
				return fmt.Errorf("want the hog killed at the cgroup's memory limit, with a note")
			}
			return nil
		}},
		{"address space is not memory", Config{Memory: 64 << 20}, `python3 -c 'import mmap; m = mmap.mmap(-1, 1 << 30); m[0:1] = b"x"; print("mapped", len(m))'`, func(out string, err error) error {
			if err != nil || out != "mapped 1073741824\n" {
				return fmt.Errorf("want a 1 GiB untouched mapping to work under a 64 MiB memory limit")
			}
			return nil
		}},
		{"the call is in its own cgroup", Config{}, `cat /proc/self/cgroup`, func(out string, err error) error {
			if err != nil || !strings.Contains(out, fmt.Sprintf("/call-%d-", os.Getpid())) {
				return fmt.Errorf("want the tool in a call-%d-N cgroup", os.Getpid())
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runIn(t, tt.cfg, ws, tt.script)
			t.Logf("output %q, err %v", out, err)
			if cerr := tt.check(out, err); cerr != nil {
				t.Errorf("%s\noutput %q, err %v", cerr, out, err)
			}
		})
	}
	// Every call's cgroup was removed once it was waited for.
	var dirs []string
	switch s.Kind {
	case CgroupV2:
		dirs = []string{s.v2}
	case CgroupV1:
		dirs = []string{filepath.Join(s.mem, "agentctl"), filepath.Join(s.pids, "agentctl")}
	}
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.Contains(e.Name(), "call-"+strconv.Itoa(os.Getpid())+"-") {
				t.Errorf("cgroup %s left behind", filepath.Join(d, e.Name()))
			}
		}
	}
}
