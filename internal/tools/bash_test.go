//go:build linux

package tools

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/sandbox"
)

func runBashCall(ctx context.Context, t *testing.T, call Call, command string) (Result, time.Duration) {
	t.Helper()
	call.Args = mustJSON(t, map[string]string{"command": command})
	if call.Workspace == "" {
		call.Workspace = t.TempDir()
	}
	start := time.Now()
	res := builtinTool(t, NameBash).Run(ctx, call)
	return res, time.Since(start)
}

func TestBashOutput(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	rws, _ := filepath.EvalSymlinks(ws)
	tests := []struct {
		command string
		want    Result
	}{
		{"echo out; echo err >&2", Result{Status: statusOK, Output: "out\nerr\n"}},
		{"echo partial; exit 3", Result{Status: statusError, Output: "partial\n", Error: "exit status 3"}},
		{"false", Result{Status: statusError, Error: "exit status 1"}},
		{"pwd -P", Result{Status: statusOK, Output: rws + "\n"}},
		// The sandbox's init reports how the tool died.
		{"kill -KILL $$", Result{Status: statusError, Output: "agentctl sandbox: bash terminated by signal SIGKILL\n", Error: "exit status 137"}},
		// stdin is /dev/null and there is no terminal on any stream.
		{`if read -r x; then echo "read:$x"; else echo eof; fi; cat; [ -t 0 ] || echo notty0; [ -t 1 ] || echo notty1; [ -t 2 ] || echo notty2; { : </dev/tty; } 2>/dev/null || echo nodevtty`,
			Result{Status: statusOK, Output: "eof\nnotty0\nnotty1\nnotty2\nnodevtty\n"}},
		// The tool's session and process group are those of the sandbox's
		// init, PID 1 of its PID namespace.
		{`read -r -a f </proc/$$/stat; [ "${f[4]}" = 1 ] && [ "${f[5]}" = 1 ] && echo init-led`, Result{Status: statusOK, Output: "init-led\n"}},
	}
	for _, tt := range tests {
		got, _ := runBashCall(context.Background(), t, Call{Workspace: ws}, tt.command)
		if got != tt.want {
			t.Errorf("bash %q = %+v, want %+v", tt.command, got, tt.want)
		}
	}
}

// TestBashUnconfined: with the sandbox explicitly off, the tool itself
// leads its own session and process group.
func TestBashUnconfined(t *testing.T) {
	t.Parallel()
	call := Call{Workspace: t.TempDir(), Sandbox: &sandbox.Config{Unconfined: true}}
	tests := []struct {
		command string
		want    Result
	}{
		{"kill -KILL $$", Result{Status: statusError, Error: "signal: killed"}},
		{`read -r -a f </proc/$$/stat; [ "${f[4]}" = $$ ] && [ "${f[5]}" = $$ ] && echo leader`, Result{Status: statusOK, Output: "leader\n"}},
	}
	for _, tt := range tests {
		got, _ := runBashCall(context.Background(), t, call, tt.command)
		if got != tt.want {
			t.Errorf("unconfined bash %q = %+v, want %+v", tt.command, got, tt.want)
		}
	}
}

func TestBashEnvScrubbed(t *testing.T) {
	t.Setenv("AGENTCTL_TEST_SECRET", "hunter2")
	ws := t.TempDir()
	got, _ := runBashCall(context.Background(), t, Call{Workspace: ws, Env: []string{"EXTRA=passed"}}, "env | sort")
	if got.Status != statusOK {
		t.Fatalf("bash env = %+v", got)
	}
	if strings.Contains(got.Output, "hunter2") || strings.Contains(got.Output, "AGENTCTL_TEST_SECRET") {
		t.Errorf("a secret of the parent environment reached the tool:\n%s", got.Output)
	}
	for _, want := range []string{"HOME=" + ws + "\n", "LANG=C.UTF-8\n", "EXTRA=passed\n", "PATH=", "TMPDIR="} {
		if !strings.Contains(got.Output, want) {
			t.Errorf("bash env output lacks %q:\n%s", want, got.Output)
		}
	}
	// Nothing but the scrubbed variables, what bash sets itself, and EXTRA.
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TMPDIR": true, "EXTRA": true, "PWD": true, "SHLVL": true, "_": true}
	for _, line := range strings.Split(strings.TrimSpace(got.Output), "\n") {
		key, _, _ := strings.Cut(line, "=")
		if !allowed[key] {
			t.Errorf("unexpected variable in the tool environment: %s", line)
		}
	}
}

// unconfined runs a test of the process-group layer of proc.go on its own:
// inside the sandbox $$ is a PID of the tool's PID namespace, not a host
// process group (TestSandboxGrandchildCancelled covers the sandboxed case).
var unconfined = &sandbox.Config{Unconfined: true}

func TestBashTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
	}{
		{"sleep pair", "echo $$; sleep 30 & sleep 30"},
		// SIGTERM is ignored by every process of the group: SIGKILL follows.
		{"TERM ignored", "trap '' TERM; echo $$; sleep 30 & sleep 30"},
		{"subshell tree", "echo $$; (sleep 30 & sleep 30) & (sleep 30; echo never) & wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, elapsed := runBashCall(context.Background(), t, Call{Timeout: time.Second, Sandbox: unconfined}, tt.command)
			if got.Status != statusError || got.Error != "timed out after 1s" {
				t.Errorf("bash %q = %+v, want error %q", tt.command, got, "timed out after 1s")
			}
			if elapsed > 5*time.Second {
				t.Errorf("bash %q returned after %v, want about 1s", tt.command, elapsed)
			}
			// Checked in /proc rather than with kill -0: the orphaned
			// sleeps are zombies until init reaps them, and kill -0
			// succeeds on a zombie.
			waitGroupGone(t, firstLineInt(t, got.Output))
		})
	}
}

func TestBashCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	got, elapsed := runBashCall(ctx, t, Call{Sandbox: unconfined}, "echo $$; sleep 30 & sleep 30")
	if got.Status != statusCancelled || got.Error != "cancelled" {
		t.Errorf("bash after cancel = %+v, want cancelled", got)
	}
	if elapsed > 5*time.Second {
		t.Errorf("bash returned %v after start, want soon after the cancel at 0.5s", elapsed)
	}
	waitGroupGone(t, firstLineInt(t, got.Output))
}

// TestBashBackgroundChildKilled: a command that leaves a background child
// behind returns at once, and the child does not outlive the call.
func TestBashBackgroundChildKilled(t *testing.T) {
	t.Parallel()
	got, elapsed := runBashCall(context.Background(), t, Call{Sandbox: unconfined}, "echo $$; sleep 30 &")
	if got.Status != statusOK {
		t.Errorf("bash = %+v, want ok", got)
	}
	if elapsed > pipeGrace {
		t.Errorf("bash returned after %v, want before %v", elapsed, pipeGrace)
	}
	waitGroupGone(t, firstLineInt(t, got.Output))
}

// TestBashEscapedHolderDoesNotHang: a process that left the group (setsid)
// and holds the output pipe cannot keep Run waiting past pipeGrace.
func TestBashEscapedHolderDoesNotHang(t *testing.T) {
	t.Parallel()
	got, elapsed := runBashCall(context.Background(), t, Call{Sandbox: unconfined},
		`echo $$; setsid sh -c 'echo $$; exec sleep 20' & sleep 0.3`)
	lines := strings.Split(strings.TrimSpace(got.Output), "\n")
	if len(lines) == 2 {
		if pid, err := strconv.Atoi(lines[1]); err == nil {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	if got.Status != statusOK {
		t.Errorf("bash = %+v, want ok", got)
	}
	if elapsed > pipeGrace+2*time.Second {
		t.Errorf("bash returned after %v, want about %v", elapsed, pipeGrace)
	}
}

func TestBashOutputCap(t *testing.T) {
	t.Parallel()
	got, _ := runBashCall(context.Background(), t, Call{MaxOutput: 1000},
		`echo START; for i in $(seq 1 2000); do echo "line $i"; done; echo END`)
	if got.Status != statusOK || !got.Truncated {
		t.Fatalf("bash with a lot of output = %+v, want ok and truncated", got)
	}
	if !strings.HasPrefix(got.Output, "START\nline 1\n") || !strings.HasSuffix(got.Output, "line 2000\nEND\n") {
		t.Errorf("capped output lost its head or tail:\n%s", got.Output)
	}
	if !strings.Contains(got.Output, " bytes elided ...]\n") || len(got.Output) > 1100 {
		t.Errorf("capped output is %d bytes without an elision note or too long:\n%s", len(got.Output), got.Output)
	}
}
