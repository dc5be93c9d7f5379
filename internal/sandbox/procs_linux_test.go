package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitFor polls cond every 10 ms until it holds or limit passes.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// livePidsWith lists live (not zombie) processes whose command line
// contains s.
func livePidsWith(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// TestHarnessKill9EndsTheTool: SIGKILL of the harness while a tool writes
// to its workspace ends the tool within a second, without anyone calling
// Sweep: the sandbox init dies of its parent-death signal (or of its
// lifeline), and the PID namespace with it. Unconfined, only the direct
// child has the signal: its background children are left to Sweep, which
// the last row shows.
func TestHarnessKill9EndsTheTool(t *testing.T) {
	needSandbox(t)
	tests := []struct {
		name      string
		cfg       Config
		survivors bool // processes that only Sweep ends
	}{
		{"network denied", Config{}, false},
		{"allowlist forwarder", Config{Allow: []string{"localhost:1"}}, false},
		{"network allowed", Config{Network: NetworkAllow}, false},
		{"unconfined", Config{Unconfined: true}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			procs := filepath.Join(t.TempDir(), "procs")
			marker := fmt.Sprintf("kill9-%d-%d-%d", os.Getpid(), i, time.Now().UnixNano()%1e6)
			cfg := tt.cfg
			cfg.Procs = procs
			// A background writer (left by a tool that exits) and a
			// foreground one, as a tool that forks would.
			script := fmt.Sprintf(`(while :; do echo x >> bg.txt; sleep 0.02; done; : %s) & while :; do echo x >> fg.txt; sleep 0.02; done; : %s`, marker, marker)
			b, _ := json.Marshal(testHarnessArgs{Config: cfg, WS: ws, Script: script})
			h := exec.Command(os.Args[0], "-test.run=^$")
			h.Env = append(os.Environ(), envTestHarness+"="+string(b))
			h.Stderr = os.Stderr
			if err := h.Start(); err != nil {
				t.Fatal(err)
			}
			defer h.Process.Kill()
			if !waitFor(10*time.Second, func() bool {
				return fileSize(filepath.Join(ws, "bg.txt")) > 0 && fileSize(filepath.Join(ws, "fg.txt")) > 0
			}) {
				t.Fatal("the tool did not start writing")
			}
			if !waitFor(2*time.Second, func() bool { e, _ := os.ReadDir(procs); return len(e) == 1 }) {
				t.Fatal("the harness recorded no process")
			}
			if err := h.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = h.Wait()
			killed := time.Now()
			gone := waitFor(time.Second, func() bool { return len(livePidsWith(marker)) == 0 })
			if tt.survivors {
				if gone {
					t.Fatalf("an unconfined tool's background child died with the harness; the row no longer shows what Sweep is for")
				}
				swept, err := Sweep(procs)
				if err != nil || len(swept) != 1 || swept[0].Processes < 1 {
					t.Fatalf("Sweep = %+v, %v; want the unconfined group killed", swept, err)
				}
				gone = waitFor(time.Second, func() bool { return len(livePidsWith(marker)) == 0 })
			}
			if !gone {
				t.Fatalf("tool processes still alive %s after SIGKILL of the harness: %v", time.Since(killed), livePidsWith(marker))
			}
			t.Logf("tool gone %s after SIGKILL of the harness", time.Since(killed).Round(time.Millisecond))
			bg, fg := fileSize(filepath.Join(ws, "bg.txt")), fileSize(filepath.Join(ws, "fg.txt"))
			time.Sleep(200 * time.Millisecond)
			if fileSize(filepath.Join(ws, "bg.txt")) != bg || fileSize(filepath.Join(ws, "fg.txt")) != fg {
				t.Errorf("the workspace still changes after the tool is gone")
			}
		})
	}
}

// startVictim starts a real process outside any sandbox, in a process
// group of its own, reaped in the background so that it leaves no zombie.
func startVictim(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	c := exec.Command("bash", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); <-done })
	return c
}

// TestSweep: what resume relies on when the parent-death signal did not
// reach a process (simulated by real processes recorded by hand): a
// recorded process that is alive with its recorded start time is killed,
// with its group when unconfined; a pid since reused by another process
// (another start time) is left alone; records are removed; a record that
// cannot be read stops the resume.
func TestSweep(t *testing.T) {
	t.Run("alive init-like record is killed", func(t *testing.T) {
		dir := t.TempDir()
		v := startVictim(t, "sleep 1000")
		r, err := recordOf(v.Process.Pid, KindInit, "bash", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writeRecord(dir, r); err != nil {
			t.Fatal(err)
		}
		swept, err := Sweep(dir)
		if err != nil || len(swept) != 1 || swept[0].PID != v.Process.Pid || swept[0].Processes != 1 {
			t.Fatalf("Sweep = %+v, %v; want pid %d killed", swept, err, v.Process.Pid)
		}
		if r.same() {
			t.Errorf("pid %d is still alive after Sweep returned", r.PID)
		}
		if e, _ := os.ReadDir(dir); len(e) != 0 {
			t.Errorf("records left: %v", e)
		}
	})
	t.Run("reused pid is left alone", func(t *testing.T) {
		dir := t.TempDir()
		v := startVictim(t, "sleep 1000")
		r, _ := recordOf(v.Process.Pid, KindInit, "bash", nil)
		r.Start-- // the recorded process started at another time: not this one
		writeRecord(dir, r)
		swept, err := Sweep(dir)
		if err != nil || len(swept) != 0 {
			t.Fatalf("Sweep = %+v, %v; want nothing killed", swept, err)
		}
		if zombie(v.Process.Pid) {
			t.Errorf("Sweep killed pid %d, whose start time differs from the record", v.Process.Pid)
		}
		if e, _ := os.ReadDir(dir); len(e) != 0 {
			t.Errorf("records left: %v", e)
		}
	})
	t.Run("unconfined group outliving its leader is killed", func(t *testing.T) {
		dir := t.TempDir()
		marker := fmt.Sprintf("sweep-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
		v := startVictim(t, "(exec -a "+marker+" sleep 1000) & exec sleep 1000")
		r, _ := recordOf(v.Process.Pid, KindUnconfined, "bash", nil)
		writeRecord(dir, r)
		child := func() bool {
			for _, pid := range livePidsWith(marker) {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(b), marker) {
					return true
				}
			}
			return false
		}
		if !waitFor(2*time.Second, child) {
			t.Fatal("the background child did not start")
		}
		swept, err := Sweep(dir)
		if err != nil || len(swept) != 1 || swept[0].Processes < 2 {
			t.Fatalf("Sweep = %+v, %v; want the leader and its group killed", swept, err)
		}
		if child() {
			t.Errorf("the group's background child is alive after Sweep")
		}
	})
	t.Run("dead record is removed quietly", func(t *testing.T) {
		dir := t.TempDir()
		writeRecord(dir, Record{PID: 1 << 22, Start: 1, Kind: KindInit, Program: "bash"})
		swept, err := Sweep(dir)
		if err != nil || len(swept) != 0 {
			t.Fatalf("Sweep = %+v, %v; want nothing", swept, err)
		}
		if e, _ := os.ReadDir(dir); len(e) != 0 {
			t.Errorf("records left: %v", e)
		}
	})
	t.Run("unreadable record stops", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "77.json"), []byte("{not json"), 0o600)
		if _, err := Sweep(dir); err == nil || !strings.Contains(err.Error(), "is not a process record") {
			t.Fatalf("Sweep = %v, want an error naming the record", err)
		}
	})
	t.Run("no folder", func(t *testing.T) {
		if swept, err := Sweep(filepath.Join(t.TempDir(), "none")); err != nil || swept != nil {
			t.Fatalf("Sweep = %+v, %v", swept, err)
		}
	})
}
