package sandbox

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func needSandbox(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("sandbox unavailable: %v", err)
	}
}

// hostDir is a temporary folder outside /tmp (the sandbox has a private
// /tmp, so a host path under it is invisible for another reason), removed
// at the end of the test.
func hostDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "agentctl-sandbox-test-")
	if err != nil {
		t.Skipf("no /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// unixServer listens on a unix socket at addr (a path, or @name for the
// abstract namespace) and answers "pong" to every connection.
func unixServer(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
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
			c.Write([]byte("pong\n"))
			c.Close()
		}
	}()
}

// connectScript connects to the unix socket at $1 (@name: abstract) from
// inside the sandbox and prints what it answers.
const connectScript = `python3 -c '
import socket, sys
a = sys.argv[1]
if a.startswith("@"):
    a = "\0" + a[1:]
s = socket.socket(socket.AF_UNIX)
s.connect(a)
print(s.recv(16).decode(), end="")
' `

// TestHostSocketsUnreachable: with the network denied, no unix socket of
// the host can be connected to, wherever it lives: not under a host folder
// outside the sandbox's root, not inside a folder bound read-only into it,
// not in the abstract namespace. A socket the host puts inside the
// workspace is reachable, which shows the probe itself works.
func TestHostSocketsUnreachable(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	base := hostDir(t)
	ws := filepath.Join(base, "ws")
	loose := filepath.Join(base, "daemon")
	ro := filepath.Join(base, "tooldir")
	for _, d := range []string{ws, loose, ro} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ro, "tool.sh"), []byte("echo tool\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	abstract := "@agentctl-sandbox-test-" + filepath.Base(base)
	for _, a := range []string{filepath.Join(loose, "d.sock"), filepath.Join(ro, "t.sock"), filepath.Join(ws, "w.sock"), abstract} {
		unixServer(t, a)
	}
	tests := []struct {
		name   string
		cfg    Config
		script string
		want   string // exact output; "" with fails: the call must fail
		fails  bool
	}{
		{"socket under /var/tmp", Config{}, connectScript + filepath.Join(loose, "d.sock"), "", true},
		{"socket under /var/tmp is not even listed", Config{}, "ls -A " + loose + " 2>&1 || echo gone", "", false},
		{"socket in a read-only folder", Config{ReadOnly: []string{ro}}, connectScript + filepath.Join(ro, "t.sock"), "", true},
		{"the read-only folder's files stay", Config{ReadOnly: []string{ro}}, "bash " + filepath.Join(ro, "tool.sh"), "tool\n", false},
		{"abstract socket", Config{}, connectScript + abstract, "", true},
		{"control: socket in the workspace", Config{}, connectScript + filepath.Join(ws, "w.sock"), "pong\n", false},
		{"control: abstract socket with the network allowed", Config{Network: NetworkAllow}, connectScript + abstract, "pong\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runIn(t, tt.cfg, ws, tt.script)
			if tt.fails {
				if err == nil || strings.Contains(out, "pong") {
					t.Errorf("%s: output %q, err %v; want a failed connect", tt.script, out, err)
				}
				return
			}
			if strings.HasPrefix(tt.name, "socket under /var/tmp is not even listed") {
				if strings.Contains(out, "d.sock") {
					t.Errorf("ls of the host folder = %q, want the socket invisible", out)
				}
				return
			}
			if err != nil || out != tt.want {
				t.Errorf("%s: output %q, err %v; want %q", tt.script, out, err, tt.want)
			}
		})
	}
}

// TestHiddenSymlinks: a hidden path that is a symlink hides its target
// too, and a hidden path reached through a symlinked parent is hidden at
// its real place. Each target is somewhere the sandbox shows (the
// workspace, a read-only folder), so only the hiding keeps it out.
func TestHiddenSymlinks(t *testing.T) {
	needSandbox(t)
	base := hostDir(t)
	ws := filepath.Join(base, "proj")
	ro := filepath.Join(base, "shared")
	user := filepath.Join(base, "user")
	files := map[string]string{
		"proj/.agentctl/sessions/x/events.log": "log-secret\n",
		"proj/dotfiles/ssh/id_ed25519":         "ssh-secret\n",
		"shared/aws/credentials":               "aws-secret\n",
		"shared/tool.sh":                       "echo tool\n",
		"proj/keep.txt":                        "keep\n",
	}
	for name, content := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(base, "homelink"): filepath.Join(ws, ".agentctl"), // --home /var/tmp/.../homelink
		filepath.Join(user, ".ssh"):     filepath.Join(ws, "dotfiles/ssh"),
		filepath.Join(user, ".aws"):     filepath.Join(ro, "aws"),
	}
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", user)
	cfg := Config{Hide: DefaultHide(filepath.Join(base, "homelink")), ReadOnly: []string{ro}}
	for _, script := range []string{
		"cat .agentctl/sessions/x/events.log",
		"cat dotfiles/ssh/id_ed25519",
		"cat " + filepath.Join(ro, "aws/credentials"),
		"grep -r secret . " + ro,
	} {
		out, _ := runIn(t, cfg, ws, script)
		if strings.Contains(out, "-secret") {
			t.Errorf("%s read a hidden file through a symlinked hide entry: %q", script, out)
		}
	}
	if out, err := runIn(t, cfg, ws, "cat keep.txt; bash "+filepath.Join(ro, "tool.sh")); err != nil || out != "keep\ntool\n" {
		t.Errorf("the rest of the workspace and the read-only folder = %q, %v; want them readable", out, err)
	}
}

// TestNestedMounts: a read-only tool folder that holds the agentctl home,
// which holds the workspace (a spec next to its tools, run with the home
// beside it): the workspace stays writable, the rest of the home hidden,
// the tool readable.
func TestNestedMounts(t *testing.T) {
	needSandbox(t)
	base := hostDir(t)
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "sessions", "s1", "workspace")
	for name, content := range map[string]string{
		"tool.sh":                      "echo tool\n",
		"home/sessions/s1/events.log":  "log-secret\n",
		"home/sessions/s0/events.log":  "log-secret\n",
		"home/sessions/s1/workspace/a": "a\n",
	} {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Hide: DefaultHide(home), ReadOnly: []string{base}}
	out, err := runIn(t, cfg, ws, "cat a; echo b > b; bash "+filepath.Join(base, "tool.sh")+"; cat ../events.log ../../s0/events.log 2>/dev/null; ls "+home+"/sessions")
	if err != nil || out != "a\ntool\ns1\n" {
		t.Errorf("output %q; want the workspace and the tool, and of the home only the way to the workspace", out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "b")); err != nil || string(b) != "b\n" {
		t.Errorf("the workspace is not writable: %q, %v", b, err)
	}
}

// TestHostLinks: the symlinks the host follows on the way to a folder,
// outermost first, each naming its resolved target, so that making them
// in the sandbox leads the given path to the bound resolved folder.
func TestHostLinks(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"real/proj", "other/sub"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link":       "real",      // relative
		"abs":        d + "/real", // absolute
		"chain":      "link",      // a link to a link
		"real/other": "../other",  // a link inside the target of another
		"loop":       "loop",      // never resolves
	} {
		if err := os.Symlink(target, filepath.Join(d, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path string
		want []link
	}{
		{"real/proj", nil},
		{"link/proj", []link{{d + "/link", d + "/real"}}},
		{"abs/proj", []link{{d + "/abs", d + "/real"}}},
		{"chain/proj", []link{{d + "/chain", d + "/real"}}},
		{"link/other/sub", []link{{d + "/link", d + "/real"}, {d + "/real/other", d + "/other"}}},
		{"loop/x", nil},
		{"missing/x", nil},
	}
	for _, tt := range tests {
		got := hostLinks(filepath.Join(d, tt.path))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("hostLinks(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
	if got := hostLinks("link/proj"); got != nil {
		t.Errorf("hostLinks of a relative path = %v, want none", got)
	}
}

// TestProgramThroughSymlinkedFolder: a program named through a symlinked
// folder, given as a read-only folder as the tools package gives it, runs
// in the real sandbox, and $HOME named through a symlink is there too.
func TestProgramThroughSymlinkedFolder(t *testing.T) {
	needSandbox(t)
	d := hostDir(t)
	for _, p := range []string{"real/bin", "realws"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "real/bin/tool.sh"), []byte("#!/bin/sh\ncd \"$1\" && echo ran in \"$PWD\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink("real", filepath.Join(d, "link"))
	os.Symlink("realws", filepath.Join(d, "ws"))
	prog, ws := filepath.Join(d, "link/bin/tool.sh"), filepath.Join(d, "ws")
	out, err := runIn(t, Config{ReadOnly: []string{filepath.Dir(prog)}}, ws, prog+" "+ws)
	if err != nil || !strings.Contains(out, "ran in "+ws) {
		t.Fatalf("program through a symlinked folder: %v: %s", err, out)
	}
}
