//go:build linux

package tools

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/testenv"
)

// loopbackServer answers "pong" to every connection on 127.0.0.1.
func loopbackServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "pong")
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestSandboxNetwork(t *testing.T) {
	testenv.NeedSandbox(t)
	port := loopbackServer(t)
	connect := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && head -n1 <&3`, "%s", port)
	tests := []struct {
		name   string
		cfg    sandbox.Config
		host   string
		wantOK bool
	}{
		{"denied by default", sandbox.Config{}, "127.0.0.1", false},
		{"denied explicitly", sandbox.Config{Network: sandbox.NetworkDeny}, "127.0.0.1", false},
		{"allowed", sandbox.Config{Network: sandbox.NetworkAllow}, "127.0.0.1", true},
		{"allowlisted address", sandbox.Config{Allow: []string{"127.0.0.1:" + strconv.Itoa(port)}}, "127.0.0.1", true},
		{"allowlisted name", sandbox.Config{Allow: []string{"localhost:" + strconv.Itoa(port)}}, "localhost", true},
		{"other port allowlisted", sandbox.Config{Allow: []string{"127.0.0.1:1"}}, "127.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			got, _ := runBashCall(context.Background(), t, Call{Sandbox: &cfg, Timeout: 10 * time.Second}, fmt.Sprintf(connect, tt.host))
			if ok := got.Status == statusOK && got.Output == "pong\n"; ok != tt.wantOK {
				t.Errorf("connect to the test's loopback server = %+v, want success %v", got, tt.wantOK)
			}
		})
	}
}

// TestSandboxGrandchildCancelled: a grandchild that leaves the process
// group (setsid) still dies with the call, because the PID namespace dies
// with its init.
func TestSandboxGrandchildCancelled(t *testing.T) {
	testenv.NeedSandbox(t)
	marker := fmt.Sprintf("%d.%d", os.Getpid(), time.Now().UnixNano()%100000)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(500 * time.Millisecond); cancel() }()
	got, _ := runBashCall(ctx, t, Call{}, "setsid sleep "+marker+" & sleep "+marker+" & echo started; wait")
	if got.Status != statusCancelled {
		t.Errorf("cancelled call = %+v, want cancelled", got)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := processesWith(t, "sleep\x00"+marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the cancelled call survive: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesWith lists live processes whose command line contains s.
func processesWith(t *testing.T, s string) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(st), ") Z") {
				continue
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestSandboxLimits(t *testing.T) {
	testenv.NeedSandbox(t)
	t.Run("memory hog", func(t *testing.T) {
		cfg := sandbox.Config{Memory: 64 << 20}
		got, took := runBashCall(context.Background(), t, Call{Sandbox: &cfg, Timeout: 30 * time.Second},
			`x=$(head -c 300000000 /dev/zero | tr '\0' a); echo survived ${#x}`)
		if got.Status != statusError || strings.Contains(got.Output, "survived") {
			t.Errorf("memory hog under 64 MiB = %+v (after %s), want an error", got, took)
		}
	})
	t.Run("cpu hog", func(t *testing.T) {
		cfg := sandbox.Config{CPU: time.Second}
		got, took := runBashCall(context.Background(), t, Call{Sandbox: &cfg, Timeout: 30 * time.Second}, `while :; do :; done`)
		if got.Status != statusError || !strings.Contains(got.Output, "SIGXCPU") || took > 20*time.Second {
			t.Errorf("cpu hog under 1s = %+v after %s, want killed by SIGXCPU", got, took)
		}
	})
}

// TestSandboxFilesystem: writes outside the workspace fail inside the
// tool, the agentctl home and credential folders are hidden, the
// workspace and /tmp are writable.
func TestSandboxFilesystem(t *testing.T) {
	testenv.NeedSandbox(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(base, "ws")
	home := filepath.Join(base, ".agentctl")
	user := filepath.Join(base, "user")
	writeTree(t, base, map[string]string{
		"ws/.keep":                        "",
		".agentctl/sessions/x/events.log": "log-secret\n",
		"user/.ssh/id_ed25519":            "ssh-secret\n",
		"user/.aws/credentials":           "aws-secret\n",
		"user/.netrc":                     "netrc-secret\n",
		"outside/f.txt":                   "outside\n",
	})
	t.Setenv("HOME", user)
	cfg := sandbox.Config{Hide: sandbox.DefaultHide(home)}
	tests := []struct {
		command string
		fails   bool
	}{
		{"echo x > " + filepath.Join(base, "outside/new.txt"), true},
		{"echo x >> " + filepath.Join(base, "outside/f.txt"), true},
		{"rm " + filepath.Join(base, "outside/f.txt"), true},
		{"touch /etc/agentctl-test /usr/agentctl-test", true},
		{"cat " + filepath.Join(home, "sessions/x/events.log"), true},
		{"cat " + filepath.Join(user, ".ssh/id_ed25519"), true},
		{"cat " + filepath.Join(user, ".aws/credentials"), true},
		{"grep -r secret " + user + " " + home, true},
		{"mount -o remount,rw / 2>&1", true},
		{"umount " + filepath.Join(user, ".ssh"), true},
		{"echo x > /dev/sda 2>&1 || ls /dev/sda", true},
		{"echo ok > inside.txt && cat inside.txt", false},
		{"echo ok > /tmp/t && cat /tmp/t", false},
		{"cat /etc/passwd >/dev/null && ! touch /etc/passwd", false}, // the host is readable, read-only
		{"test ! -e " + filepath.Join(base, "outside/f.txt"), false}, // under the host's /tmp: not even visible
	}
	for _, tt := range tests {
		got, _ := runBashCall(context.Background(), t, Call{Workspace: ws, Sandbox: &cfg}, tt.command)
		if failed := got.Status != statusOK; failed != tt.fails {
			t.Errorf("bash %q = %+v, want failure %v", tt.command, got, tt.fails)
		}
		if strings.Contains(got.Output, "-secret") {
			t.Errorf("bash %q read a hidden secret: %q", tt.command, got.Output)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(base, "outside/f.txt")); string(b) != "outside\n" {
		t.Errorf("outside/f.txt = %q, changed by the tool", b)
	}
	if _, err := os.Stat(filepath.Join(base, "outside/new.txt")); err == nil {
		t.Errorf("the tool created outside/new.txt")
	}
	if _, err := os.Stat(filepath.Join(ws, "inside.txt")); err != nil {
		t.Errorf("the workspace write is missing: %v", err)
	}
}

// TestSandboxRedactionAndArtifact: output is redacted as it is captured;
// large output keeps head and tail and the whole (redacted) output is in
// the artifact file.
func TestSandboxRedactionAndArtifact(t *testing.T) {
	secret := "tok-" + strings.Repeat("9f8e", 6)
	red := redact.New(redact.Secret{Name: "MY_TOKEN", Value: secret})
	art := filepath.Join(t.TempDir(), "artifacts", "call_1.txt")
	call := Call{Redactor: red, ArtifactPath: art, MaxOutput: 1024, Env: []string{"MY_TOKEN=" + secret}}
	got, _ := runBashCall(context.Background(), t, call, `echo "first $MY_TOKEN"; for i in $(seq 1 2000); do echo "line $i"; done; echo "last $MY_TOKEN"`)
	if got.Status != statusOK || !got.Truncated || got.Artifact != art {
		t.Fatalf("big output = status %s truncated %v artifact %q", got.Status, got.Truncated, got.Artifact)
	}
	if strings.Contains(got.Output, secret) || !strings.Contains(got.Output, "first [REDACTED:MY_TOKEN]") || !strings.Contains(got.Output, "last [REDACTED:MY_TOKEN]") {
		t.Errorf("output = %q, want head and tail with the secret redacted", got.Output)
	}
	b, err := os.ReadFile(art)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), "line 1000\n") || !strings.HasSuffix(string(b), "last [REDACTED:MY_TOKEN]\n") {
		t.Errorf("artifact (%d bytes) is not the whole redacted output", len(b))
	}
	small := filepath.Join(t.TempDir(), "small.txt")
	call.ArtifactPath = small
	got, _ = runBashCall(context.Background(), t, call, "echo small")
	if got.Artifact != "" {
		t.Errorf("small output kept an artifact %q", got.Artifact)
	}
	if _, err := os.Stat(small); err == nil {
		t.Errorf("small output left its artifact file")
	}
}

// TestBashDirEscapes: bash's working directory is confined like every path.
func TestBashDirEscapes(t *testing.T) {
	f := newEscapeFixture(t)
	for _, dir := range []string{"..", "../outside", "/", "/etc", "outl", "etcl", "sub/upup", "rell", "../ws-evil"} {
		got := run(t, NameBash, f.ws, map[string]string{"command": "touch pwned; pwd", "dir": dir})
		if got.Status != statusError || got.Error != "path escapes the workspace: "+dir {
			t.Errorf("bash in dir %q = %+v, want an escape error", dir, got)
		}
	}
	got := run(t, NameBash, f.ws, map[string]string{"command": "pwd -P", "dir": "inl"})
	if got.Status != statusOK || got.Output != filepath.Join(f.ws, "sub")+"\n" {
		t.Errorf("bash in dir inl = %+v, want ok in sub", got)
	}
}

// FuzzConfine: whatever the path, Confine never returns one outside the
// (resolved) workspace root.
func FuzzConfine(f *testing.F) {
	for _, s := range []string{".", "..", "../outside/secret.txt", "/etc/passwd", "outl/x", "etcl/passwd", "hop1",
		"sub/upup/outside", "dangling", "sub/../..", "./././a.txt", "sub/up/../..", "a\x00b", "//", "loop/x", "inl/../../"} {
		f.Add(s)
	}
	var fx escapeFixture
	f.Fuzz(func(t *testing.T, p string) {
		if fx.ws == "" {
			fx = newEscapeFixture(t)
		}
		got, err := Confine(fx.ws, p)
		if err != nil {
			return
		}
		if got != fx.ws && !strings.HasPrefix(got, fx.ws+"/") {
			t.Fatalf("Confine(%q) = %q, outside %s", p, got, fx.ws)
		}
		if r, err := filepath.EvalSymlinks(got); err == nil && r != fx.ws && !strings.HasPrefix(r, fx.ws+"/") {
			t.Fatalf("Confine(%q) = %q, which resolves to %q outside %s", p, got, r, fx.ws)
		}
	})
}
