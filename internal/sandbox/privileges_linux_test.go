package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestToolPrivileges: whichever way the init starts the tool (itself, or
// through the exec hop when RLIMIT_AS is the memory ceiling), the tool has
// no capability in any set, runs with no_new_privs, and inherits the CPU
// and core-dump ceilings; only the hop path sets RLIMIT_AS.
func TestToolPrivileges(t *testing.T) {
	needSandbox(t)
	// The init (PID 1) must not be open to the tool: its other threads
	// keep their capabilities, and writing its memory would hand them over.
	const script = `grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; echo "cpu $(ulimit -t) core $(ulimit -c) as $(ulimit -v)"
cat /proc/1/environ >/dev/null 2>&1 && echo "init environ readable"
(exec 3>/proc/1/mem) 2>/dev/null && echo "init memory writable"
echo end`
	want := []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "cpu 7 core 0", "end"}
	t.Run("started by the init", func(t *testing.T) {
		s := cgroups()
		if !s.Memory {
			t.Skipf("no memory cgroup here (%s): the init always takes the hop", s.Reason)
		}
		out, err := runIn(t, Config{CPU: 7 * time.Second}, t.TempDir(), script)
		check(t, out, err, append(want, "as unlimited"))
	})
	t.Run("through the exec hop", func(t *testing.T) {
		withoutCgroups(t)
		out, err := runIn(t, Config{CPU: 7 * time.Second, Memory: 1 << 30}, t.TempDir(), script)
		check(t, out, err, append(want, "as 1048576"))
	})
	t.Run("through the exec hop, with an allowlist", func(t *testing.T) {
		as := "as unlimited" // the cgroup limits memory
		if !cgroups().Memory {
			as = fmt.Sprintf("as %d", DefaultMemory>>10) // RLIMIT_AS, in KiB
		}
		out, err := runIn(t, Config{CPU: 7 * time.Second, Allow: []string{"127.0.0.1:9"}}, t.TempDir(), script)
		check(t, out, err, append(want, as))
	})
	t.Run("unknown program exits 127", func(t *testing.T) {
		ws := t.TempDir()
		l, err := Config{}.Prepare(ws, ws, []string{"no-such-program-agentctl"}, []string{"PATH=/usr/bin:/bin"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		out, err := l.Command(context.Background()).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 127 || !strings.Contains(string(out), "no-such-program-agentctl") {
			t.Errorf("unknown program: %v, %q; want exit 127 naming it", err, out)
		}
	})
}

func check(t *testing.T, out string, err error, want []string) {
	t.Helper()
	if err != nil {
		t.Fatalf("tool: %v\n%s", err, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("tool output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "init environ readable") || strings.Contains(out, "init memory writable") {
		t.Errorf("the tool can reach the init's memory:\n%s", out)
	}
}

// withoutCgroups makes this process's calls go without call cgroups for
// the rest of the test, as on a machine with none writable.
func withoutCgroups(t *testing.T) {
	saved := cgroups()
	cgSup = cgroupSupport{Kind: CgroupNone, Reason: "switched off by the test"}
	t.Cleanup(func() { cgSup = saved })
}
