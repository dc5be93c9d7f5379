//go:build unix

package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// escapeFixture is a workspace next to a sentinel directory "outside" that no
// refused call may change, with symlinks that lead out of the workspace.
type escapeFixture struct {
	base, ws, outside string
}

func newEscapeFixture(t *testing.T) escapeFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := escapeFixture{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	writeTree(t, f.outside, map[string]string{
		"secret.txt": "secret beta\n",
		"sub/":       "",
	})
	writeTree(t, base, map[string]string{"ws-evil/f.txt": "evil\n"})
	writeTree(t, f.ws, map[string]string{
		"a.txt":          "alpha beta\n",
		"sub/b.txt":      "beta\n",
		"etcl":           "->/etc",                                      // absolute link out
		"outl":           "->" + f.outside,                              // symlinked parent dir
		"rell":           "->../outside",                                // relative link out
		"secretl":        "->" + filepath.Join(f.outside, "secret.txt"), // file link out
		"dangling":       "->" + filepath.Join(f.outside, "created.txt"),
		"dangdir":        "->" + filepath.Join(f.outside, "nodir", "f.txt"),
		"hop1":           "->hop2", // dangling chain: hop1 -> hop2 -> outside
		"hop2":           "->../outside/hopped.txt",
		"inl":            "->sub",           // link that stays inside
		"danglingin":     "->newinside.txt", // dangling link that stays inside
		"sub/up":         "->..",            // link to the workspace root
		"sub/upup":       "->../..",         // link to the parent of the workspace
		"loop":           "->loop",          // a symlink loop
		"sub/deep/.keep": "",
	})
	return f
}

func TestEscapes(t *testing.T) {
	f := newEscapeFixture(t)
	abs := func(p string) string { return filepath.Join(f.base, p) }
	tests := []struct {
		name string
		tool string
		args map[string]string
	}{
		{"read ../ chain", NameReadFile, map[string]string{"path": "../outside/secret.txt"}},
		{"read ../ chain through subdir", NameReadFile, map[string]string{"path": "sub/../../outside/secret.txt"}},
		{"read long ../ chain", NameReadFile, map[string]string{"path": "../../../../../../../../etc/passwd"}},
		{"read absolute /etc/passwd", NameReadFile, map[string]string{"path": "/etc/passwd"}},
		{"read absolute sibling with workspace prefix", NameReadFile, map[string]string{"path": abs("ws-evil/f.txt")}},
		{"read relative sibling with workspace prefix", NameReadFile, map[string]string{"path": "../ws-evil/f.txt"}},
		{"read through link to /etc", NameReadFile, map[string]string{"path": "etcl/passwd"}},
		{"read through relative link out", NameReadFile, map[string]string{"path": "rell/secret.txt"}},
		{"read file link out", NameReadFile, map[string]string{"path": "secretl"}},
		{"read through link to parent of workspace", NameReadFile, map[string]string{"path": "sub/upup/outside/secret.txt"}},
		{"write ../ chain", NameWriteFile, map[string]string{"path": "../outside/new.txt", "content": "x"}},
		{"write absolute outside", NameWriteFile, map[string]string{"path": abs("outside/new.txt"), "content": "x"}},
		{"write through symlinked parent dir", NameWriteFile, map[string]string{"path": "outl/new.txt", "content": "x"}},
		{"write new dirs under symlinked parent", NameWriteFile, map[string]string{"path": "outl/a/b/new.txt", "content": "x"}},
		{"write through dangling link out", NameWriteFile, map[string]string{"path": "dangling", "content": "x"}},
		{"write through dangling link to missing dir", NameWriteFile, map[string]string{"path": "dangdir", "content": "x"}},
		{"write through dangling link chain", NameWriteFile, map[string]string{"path": "hop1", "content": "x"}},
		{"write file link out", NameWriteFile, map[string]string{"path": "secretl", "content": "x"}},
		{"write the linked dir itself", NameWriteFile, map[string]string{"path": "outl", "content": "x"}},
		{"write trailing slash ../", NameWriteFile, map[string]string{"path": "sub/../../outside/sub/", "content": "x"}},
		{"edit through symlinked parent dir", NameEditFile, map[string]string{"path": "outl/secret.txt", "old": "secret", "new": "x"}},
		{"edit ../ chain", NameEditFile, map[string]string{"path": "../outside/secret.txt", "old": "secret", "new": "x"}},
		{"edit file link out", NameEditFile, map[string]string{"path": "secretl", "old": "secret", "new": "x"}},
		{"list ..", NameListFiles, map[string]string{"path": ".."}},
		{"list /", NameListFiles, map[string]string{"path": "/"}},
		{"list link to /etc", NameListFiles, map[string]string{"path": "etcl/"}},
		{"list symlinked dir", NameListFiles, map[string]string{"path": "outl"}},
		{"grep ../", NameGrep, map[string]string{"pattern": "secret", "path": "../"}},
		{"grep symlinked dir", NameGrep, map[string]string{"pattern": "secret", "path": "outl"}},
		{"grep /etc/passwd", NameGrep, map[string]string{"pattern": "root", "path": "/etc/passwd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, f.base)
			delete(before, "ws/") // the workspace is allowed to change; here it must not either
			got := run(t, tt.tool, f.ws, tt.args)
			if got.Status != statusError || !strings.HasPrefix(got.Error, "path escapes the workspace: ") {
				t.Errorf("%s(%v) = %+v, want error %q", tt.tool, tt.args, got, "path escapes the workspace: "+tt.args["path"])
			}
			if want := "path escapes the workspace: " + tt.args["path"]; got.Error != want {
				t.Errorf("%s(%v).Error = %q, want %q", tt.tool, tt.args, got.Error, want)
			}
			if got.Output != "" {
				t.Errorf("%s(%v).Output = %q, want nothing", tt.tool, tt.args, got.Output)
			}
			after := snapshot(t, f.base)
			delete(after, "ws/")
			if !reflect.DeepEqual(before, after) {
				t.Errorf("%s(%v) changed the file system:\nbefore %v\nafter  %v", tt.tool, tt.args, before, after)
			}
		})
	}
}

// TestInsidePathsAllowed is the other side of TestEscapes: odd spellings that
// stay inside the workspace work.
func TestInsidePathsAllowed(t *testing.T) {
	f := newEscapeFixture(t)
	tests := []struct {
		name       string
		tool       string
		args       map[string]string
		wantOutput string
		wantFile   string // workspace-relative file whose content must now be args["content"]
	}{
		{"read ./ chain", NameReadFile, map[string]string{"path": "././sub/./b.txt"}, "beta\n", ""},
		{"read .. that stays inside", NameReadFile, map[string]string{"path": "sub/../a.txt"}, "alpha beta\n", ""},
		{"read trailing slash", NameReadFile, map[string]string{"path": "sub/b.txt/"}, "beta\n", ""},
		{"read absolute inside", NameReadFile, map[string]string{"path": filepath.Join(f.ws, "a.txt")}, "alpha beta\n", ""},
		{"read through link inside", NameReadFile, map[string]string{"path": "inl/b.txt"}, "beta\n", ""},
		{"read through link to root", NameReadFile, map[string]string{"path": "sub/up/a.txt"}, "alpha beta\n", ""},
		{"read ../ back into workspace", NameReadFile, map[string]string{"path": "../ws/a.txt"}, "alpha beta\n", ""},
		{"write ./ chain", NameWriteFile, map[string]string{"path": "./new/./x.txt", "content": "x1"}, "wrote 2 bytes to new/x.txt", "new/x.txt"},
		{"write through link inside", NameWriteFile, map[string]string{"path": "inl/y.txt", "content": "y"}, "wrote 1 bytes to sub/y.txt", "sub/y.txt"},
		{"write through dangling link inside", NameWriteFile, map[string]string{"path": "danglingin", "content": "z"}, "wrote 1 bytes to newinside.txt", "newinside.txt"},
		{"edit absolute inside", NameEditFile, map[string]string{"path": filepath.Join(f.ws, "sub", "b.txt"), "old": "beta", "new": "BETA"}, "edited sub/b.txt", ""},
		{"list trailing slash", NameListFiles, map[string]string{"path": "sub/deep/"}, "sub/deep/.keep\n", ""},
		{"list ./", NameListFiles, map[string]string{"path": "./sub/deep/."}, "sub/deep/.keep\n", ""},
		{"grep ./ path", NameGrep, map[string]string{"pattern": "alpha", "path": "./"}, "a.txt:1: alpha beta\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outsideBefore := snapshot(t, f.outside)
			got := run(t, tt.tool, f.ws, tt.args)
			if got.Status != statusOK || got.Output != tt.wantOutput {
				t.Errorf("%s(%v) = %+v, want ok with output %q", tt.tool, tt.args, got, tt.wantOutput)
			}
			if tt.wantFile != "" {
				b, err := os.ReadFile(filepath.Join(f.ws, tt.wantFile))
				if err != nil || string(b) != tt.args["content"] {
					t.Errorf("after %s(%v): %s = %q, %v; want %q", tt.tool, tt.args, tt.wantFile, b, err, tt.args["content"])
				}
			}
			if after := snapshot(t, f.outside); !reflect.DeepEqual(outsideBefore, after) {
				t.Errorf("%s(%v) changed the sentinel dir: %v", tt.tool, tt.args, after)
			}
		})
	}
}

func TestConfine(t *testing.T) {
	f := newEscapeFixture(t)
	wsLink := filepath.Join(f.base, "wslink")
	if err := os.Symlink("ws", wsLink); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		root, p string
		want    string // "" means ErrEscape
	}{
		{f.ws, ".", f.ws},
		{f.ws, "", f.ws},
		{f.ws, "a.txt", filepath.Join(f.ws, "a.txt")},
		{f.ws, "missing/dir/x", filepath.Join(f.ws, "missing/dir/x")},
		{f.ws, "inl/missing/x", filepath.Join(f.ws, "sub/missing/x")},
		{f.ws, "danglingin", filepath.Join(f.ws, "newinside.txt")},
		{f.ws, f.ws + "/", f.ws},
		{wsLink, "a.txt", filepath.Join(f.ws, "a.txt")},
		{wsLink, filepath.Join(wsLink, "a.txt"), filepath.Join(f.ws, "a.txt")},
		{wsLink, filepath.Join(f.ws, "a.txt"), filepath.Join(f.ws, "a.txt")},
		{f.ws, "..", ""},
		{f.ws, "/", ""},
		{f.ws, f.base, ""},
		{f.ws, "outl/missing/x", ""},
		{f.ws, "hop1", ""},
		{f.ws, "sub/upup", ""},
		{wsLink, filepath.Join(f.base, "wslink-x"), ""},
	}
	for _, tt := range tests {
		got, err := Confine(tt.root, tt.p)
		if tt.want == "" {
			if !errors.Is(err, ErrEscape) || !strings.Contains(err.Error(), tt.p) {
				t.Errorf("Confine(%q, %q) = %q, %v; want an ErrEscape naming the path", tt.root, tt.p, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Confine(%q, %q) = %q, %v; want %q", tt.root, tt.p, got, err, tt.want)
		}
	}
	if _, err := Confine(f.ws, "loop/x"); err == nil || errors.Is(err, ErrEscape) {
		t.Errorf("Confine through a symlink loop = %v, want a resolution error", err)
	}
	if _, err := Confine("relative/root", "a"); err == nil {
		t.Errorf("Confine with a relative root succeeded")
	}
}

// TestSwappedComponent checks the second line of defence: after Confine has
// approved a path, a directory on it is replaced by a symlink out of the
// workspace; the write through the os.Root must fail, not follow it.
func TestSwappedComponent(t *testing.T) {
	f := newEscapeFixture(t)
	tg, err := resolveTarget(Call{Workspace: f.ws}, "swap/new.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := os.Symlink(f.outside, filepath.Join(f.ws, "swap")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, f.outside)
	if err := tg.root.MkdirAll("swap", 0o755); err == nil {
		t.Errorf("MkdirAll through a swapped-in symlink succeeded")
	}
	if w, _, err := tg.open("write", tg.rel, os.O_WRONLY|os.O_CREATE, 0); err == nil {
		w.Close()
		t.Errorf("open(%q) for writing through a swapped-in symlink succeeded", tg.rel)
	}
	if after := snapshot(t, f.outside); !reflect.DeepEqual(before, after) {
		t.Errorf("the sentinel dir changed: %v", after)
	}
}

func TestBadWorkspace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{"", "relative", file, "/nonexistent-agentctl-ws"} {
		for _, name := range []string{NameReadFile, NameBash} {
			got := builtinTool(t, name).Run(context.Background(), Call{Args: []byte(`{"path":"a","command":"true"}`), Workspace: ws})
			if name == NameBash {
				got = builtinTool(t, name).Run(context.Background(), Call{Args: []byte(`{"command":"true"}`), Workspace: ws})
			}
			if got.Status != statusError || !strings.Contains(got.Error, "workspace") {
				t.Errorf("%s with workspace %q = %+v, want a workspace error", name, ws, got)
			}
		}
	}
}
