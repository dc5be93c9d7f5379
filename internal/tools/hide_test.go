//go:build unix

package tools

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/sandbox"
)

// hideFixture is a workspace used in place with the agentctl home inside
// it (workspace: {path: .} with the default ./.agentctl), plus a
// credential folder outside the workspace that is a symlink to a folder
// inside it, as a dotfile manager makes them.
type hideFixture struct {
	base, ws, home string
	hide           []string
}

func newHideFixture(t *testing.T) hideFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := hideFixture{base: base, ws: filepath.Join(base, "ws")}
	f.home = filepath.Join(f.ws, ".agentctl")
	writeTree(t, f.ws, map[string]string{
		".agentctl/sessions/s1/events.log":          "secret log of s1\n",
		".agentctl/sessions/s1/workspace/notes.txt": "secret notes of s1\n",
		".agentctl/history/MANIFEST":                "agentctl history manifest 2\n",
		"dotfiles/aws/credentials":                  "secret aws key\n",
		"src/main.go":                               "package main // not secret\n",
		"h":                                         "->.agentctl",
		"m":                                         "->.agentctl/history/MANIFEST",
		"dl":                                        "->.agentctl/new.txt",
		"src/up":                                    "->../.agentctl/sessions",
	})
	writeTree(t, base, map[string]string{
		"user/.aws":  "->" + filepath.Join(f.ws, "dotfiles", "aws"),
		"homelink":   "->" + f.home,
		"user/.ssh/": "",
	})
	// As runner.sandboxConfig builds it: the credential folders and the
	// home, here given through a link as --home /var/tmp/link would.
	f.hide = []string{filepath.Join(base, "user/.aws"), filepath.Join(base, "user/.ssh"), filepath.Join(base, "homelink")}
	return f
}

func (f hideFixture) call(t *testing.T, tool string, args any) Result {
	t.Helper()
	return builtinTool(t, tool).Run(context.Background(), Call{Args: mustJSON(t, args), Workspace: f.ws,
		Sandbox: &sandbox.Config{Hide: f.hide}})
}

// TestHiddenRefused: every call that reaches into a hidden path, however
// it is spelt, is a tool error wrapping ErrHidden and changes nothing.
func TestHiddenRefused(t *testing.T) {
	f := newHideFixture(t)
	tests := []struct {
		name string
		tool string
		args map[string]string
	}{
		{"read a session log", NameReadFile, map[string]string{"path": ".agentctl/sessions/s1/events.log"}},
		{"read another session's workspace", NameReadFile, map[string]string{"path": ".agentctl/sessions/s1/workspace/notes.txt"}},
		{"read with ./ and //", NameReadFile, map[string]string{"path": "./.agentctl//history/MANIFEST"}},
		{"read with ..", NameReadFile, map[string]string{"path": "src/../.agentctl/history/MANIFEST"}},
		{"read absolute", NameReadFile, map[string]string{"path": filepath.Join(f.ws, ".agentctl/history/MANIFEST")}},
		{"read through a folder link", NameReadFile, map[string]string{"path": "h/history/MANIFEST"}},
		{"read through a file link", NameReadFile, map[string]string{"path": "m"}},
		{"read through a nested link", NameReadFile, map[string]string{"path": "src/up/s1/events.log"}},
		{"read the target of a linked credential folder", NameReadFile, map[string]string{"path": "dotfiles/aws/credentials"}},
		{"read the home folder itself", NameReadFile, map[string]string{"path": ".agentctl"}},
		{"write the MANIFEST", NameWriteFile, map[string]string{"path": ".agentctl/history/MANIFEST", "content": "pwned\n"}},
		{"write through a file link", NameWriteFile, map[string]string{"path": "m", "content": "pwned\n"}},
		{"write through a dangling link", NameWriteFile, map[string]string{"path": "dl", "content": "pwned\n"}},
		{"write a new folder in the home", NameWriteFile, map[string]string{"path": ".agentctl/new/x.txt", "content": "pwned\n"}},
		{"write a new credential", NameWriteFile, map[string]string{"path": "dotfiles/aws/config", "content": "pwned\n"}},
		{"edit the MANIFEST", NameEditFile, map[string]string{"path": "h/history/MANIFEST", "old": "2", "new": "3"}},
		{"list the home", NameListFiles, map[string]string{"path": ".agentctl"}},
		{"list through a link", NameListFiles, map[string]string{"path": "h/sessions"}},
		{"grep the home", NameGrep, map[string]string{"pattern": "secret", "path": ".agentctl/sessions"}},
		{"grep a linked credential folder", NameGrep, map[string]string{"pattern": "secret", "path": "dotfiles/aws"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, f.base)
			got := f.call(t, tt.tool, tt.args)
			if got.Status != statusError || !strings.HasPrefix(got.Error, "path is hidden from the tools: "+tt.args["path"]+" (") || got.Output != "" {
				t.Errorf("%s(%v) = %+v, want a hidden-path error naming the path and nothing else", tt.tool, tt.args, got)
			}
			if after := snapshot(t, f.base); !reflect.DeepEqual(before, after) {
				t.Errorf("%s(%v) changed the file system", tt.tool, tt.args)
			}
		})
	}
	_, err := resolveTarget(Call{Workspace: f.ws, Sandbox: &sandbox.Config{Hide: f.hide}}, "m")
	if !errors.Is(err, ErrHidden) {
		t.Errorf("resolveTarget(m) = %v, want ErrHidden", err)
	}
}

// TestHiddenLeftOutOfWalks: list_files and grep over the whole workspace
// do not descend into hidden folders, and say what they left out.
func TestHiddenLeftOutOfWalks(t *testing.T) {
	f := newHideFixture(t)
	got := f.call(t, NameListFiles, map[string]string{})
	want := "dl\ndotfiles/\nh\nm\nsrc/\nsrc/main.go\nsrc/up\n" +
		"[hidden from the tools, left out: .agentctl/]\n[hidden from the tools, left out: dotfiles/aws/]\n"
	if got.Status != statusOK || got.Output != want {
		t.Errorf("list_files(.) = %+v, want output\n%s", got, want)
	}
	got = f.call(t, NameGrep, map[string]string{"pattern": "secret"})
	want = "src/main.go:1: package main // not secret\n" +
		"[hidden from the tools, left out: .agentctl/]\n[hidden from the tools, left out: dotfiles/aws/]\n"
	if got.Status != statusOK || got.Output != want {
		t.Errorf("grep(secret) = %+v, want output\n%s", got, want)
	}
}

// TestWorkspaceInsideHiddenHome: the default workspace lies in the home
// (sessions/<id>/workspace); a hidden path that holds the workspace hides
// nothing of it, as in the sandbox, which mounts the workspace back.
func TestWorkspaceInsideHiddenHome(t *testing.T) {
	f := newHideFixture(t)
	ws := filepath.Join(f.home, "sessions/s1/workspace")
	call := func(tool string, args any) Result {
		return builtinTool(t, tool).Run(context.Background(), Call{Args: mustJSON(t, args), Workspace: ws,
			Sandbox: &sandbox.Config{Hide: []string{f.home}}})
	}
	if got := call(NameReadFile, map[string]string{"path": "notes.txt"}); got.Status != statusOK || got.Output != "secret notes of s1\n" {
		t.Errorf("read_file(notes.txt) in a workspace inside the home = %+v, want its content", got)
	}
	if got := call(NameListFiles, map[string]string{}); got.Status != statusOK || got.Output != "notes.txt\n" {
		t.Errorf("list_files in a workspace inside the home = %+v", got)
	}
}

// TestDefaultHideWithoutSandbox: a call with no sandbox configuration
// hides sandbox.DefaultHide(), the invoking user's credential folders.
func TestDefaultHideWithoutSandbox(t *testing.T) {
	f := newHideFixture(t)
	t.Setenv("HOME", filepath.Join(f.base, "user"))
	got := run(t, NameReadFile, f.ws, map[string]string{"path": "dotfiles/aws/credentials"})
	if got.Status != statusError || !strings.Contains(got.Error, "path is hidden from the tools") {
		t.Errorf("read_file of ~/.aws's target with no sandbox config = %+v, want a hidden-path error", got)
	}
}

// TestGateSeesResolvedPath: Call.Gate is asked about the resolved path,
// not the one written, and its error refuses the call before any I/O.
func TestGateSeesResolvedPath(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"migrations/001.sql": "x\n", "m": "->migrations"})
	var asked []string
	gate := func(rel string) error {
		asked = append(asked, rel)
		if strings.HasPrefix(rel, "migrations/") {
			return errors.New("needs approval")
		}
		return nil
	}
	tests := []struct {
		tool string
		args map[string]string
		want string
	}{
		{NameWriteFile, map[string]string{"path": "m/002.sql", "content": "y"}, "migrations/002.sql"},
		{NameWriteFile, map[string]string{"path": filepath.Join(ws, "migrations", "003.sql"), "content": "y"}, "migrations/003.sql"},
		{NameEditFile, map[string]string{"path": "./m//001.sql", "old": "x", "new": "y"}, "migrations/001.sql"},
		{NameReadFile, map[string]string{"path": "m/001.sql"}, "migrations/001.sql"},
	}
	for _, tt := range tests {
		asked = nil
		before := snapshot(t, ws)
		got := builtinTool(t, tt.tool).Run(context.Background(), Call{Args: mustJSON(t, tt.args), Workspace: ws, Gate: gate})
		if got.Status != statusError || got.Error != "needs approval" || !reflect.DeepEqual(asked, []string{tt.want}) {
			t.Errorf("%s(%v) = %+v, gate asked %q; want the gate's error after asking about %q", tt.tool, tt.args, got, asked, tt.want)
		}
		if after := snapshot(t, ws); !reflect.DeepEqual(before, after) {
			t.Errorf("%s(%v) changed the workspace although the gate refused", tt.tool, tt.args)
		}
	}
}
