//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/sandbox"
)

// writeScript writes an executable shell script into dir and returns its
// name.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommandRun(t *testing.T) {
	t.Setenv("AGENTCTL_TEST_SECRET", "hunter2")
	dir := t.TempDir()
	writeScript(t, dir, "tool.sh", `args=$(cat)
echo "args=$args"
echo "key=$AGENTCTL_IDEMPOTENCY_KEY"
echo "pwd=$(pwd -P)"
echo "secret=$AGENTCTL_TEST_SECRET"
echo "extra=$EXTRA"
echo "warning" >&2
`)
	writeScript(t, dir, "fail.sh", `cat >/dev/null; printf out; echo bad >&2; exit 4
`)
	writeScript(t, dir, "quiet.sh", `printf 'no newline'; printf 'err\n' >&2
`)
	ws, _ := filepath.EvalSymlinks(t.TempDir())

	tests := []struct {
		name    string
		command []string
		dir     string
		args    string
		ro      string
		want    Result
	}{
		{
			name: "relative to Dir", command: []string{"./tool.sh"}, dir: dir, args: `{"x": 1}`,
			want: Result{Status: statusOK, Output: "args={\"x\": 1}\nkey=sess-7-0-deploy\npwd=" + ws + "\nsecret=\nextra=yes\nwarning\n"},
		},
		{
			name: "absolute", command: []string{filepath.Join(dir, "tool.sh")}, args: ``,
			want: Result{Status: statusOK, Output: "args={}\nkey=sess-7-0-deploy\npwd=" + ws + "\nsecret=\nextra=yes\nwarning\n"},
		},
		{
			// The script is an argument, not the program, so its folder
			// (under /tmp) is made visible explicitly.
			name: "bare name from PATH", command: []string{"sh", filepath.Join(dir, "tool.sh")}, args: `{}`, ro: dir,
			want: Result{Status: statusOK, Output: "args={}\nkey=sess-7-0-deploy\npwd=" + ws + "\nsecret=\nextra=yes\nwarning\n"},
		},
		{
			name: "exit status", command: []string{"./fail.sh"}, dir: dir, args: `{}`,
			want: Result{Status: statusError, Output: "out\nbad\n", Error: "exit status 4"},
		},
		{
			name: "stderr after stdout without newline", command: []string{"./quiet.sh"}, dir: dir, args: `{}`,
			want: Result{Status: statusOK, Output: "no newline\nerr\n"},
		},
		{
			name: "missing program", command: []string{"./nope.sh"}, dir: dir, args: `{}`,
			want: Result{Status: statusError, Error: "start " + filepath.Join(dir, "nope.sh") + ": exec: \"" + filepath.Join(dir, "nope.sh") + "\": stat " + filepath.Join(dir, "nope.sh") + ": no such file or directory"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCommand(CommandDef{Name: "deploy", Command: tt.command, Dir: tt.dir, SideEffects: true})
			got := c.Run(context.Background(), Call{
				Args: json.RawMessage(tt.args), Workspace: ws, IdempotencyKey: "sess-7-0-deploy",
				Env: []string{"EXTRA=yes"}, Sandbox: &sandbox.Config{ReadOnly: nonEmpty(tt.ro)},
			})
			if got != tt.want {
				t.Errorf("Run = %+v\nwant  %+v", got, tt.want)
			}
		})
	}
}

func TestCommandTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, dir, "slow.sh", "echo $$; sleep 30 & sleep 30\n")
	c := NewCommand(CommandDef{Name: "slow", Command: []string{"./slow.sh"}, Dir: dir})

	got := c.Run(context.Background(), Call{Workspace: t.TempDir(), Timeout: 500 * time.Millisecond, Sandbox: unconfined})
	if got.Status != statusError || got.Error != "timed out after 500ms" {
		t.Errorf("Run past its timeout = %+v, want error %q", got, "timed out after 500ms")
	}
	waitGroupGone(t, firstLineInt(t, got.Output))

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	got = c.Run(ctx, Call{Workspace: t.TempDir(), Sandbox: unconfined})
	if got.Status != statusCancelled {
		t.Errorf("Run after cancel = %+v, want cancelled", got)
	}
	waitGroupGone(t, firstLineInt(t, got.Output))
}

func TestCommandLookup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, dir, "lookup.sh", `case "$AGENTCTL_IDEMPOTENCY_KEY" in
known) echo "deployed v1"; echo "note" >&2; exit 0 ;;
unknown) echo "no such deploy"; exit 3 ;;
*) echo "database down" >&2; exit 1 ;;
esac
`)
	c := NewCommand(CommandDef{Name: "deploy", Command: []string{"true"}, Lookup: []string{"./lookup.sh"}, Dir: dir, Idempotent: true})
	if !c.HasLookup() || !c.Idempotent() {
		t.Errorf("HasLookup, Idempotent = %v, %v; want true, true", c.HasLookup(), c.Idempotent())
	}
	ws := t.TempDir()
	tests := []struct {
		key       string
		wantOut   string
		wantFound bool
		wantErr   string
	}{
		{"known", "deployed v1\n", true, ""},
		{"unknown", "", false, ""},
		{"other", "", false, "lookup deploy: exit status 1: database down"},
	}
	for _, tt := range tests {
		out, found, err := c.LookupResult(context.Background(), Call{Workspace: ws, IdempotencyKey: tt.key})
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if out != tt.wantOut || found != tt.wantFound || gotErr != tt.wantErr {
			t.Errorf("LookupResult(%q) = %q, %v, %q; want %q, %v, %q", tt.key, out, found, gotErr, tt.wantOut, tt.wantFound, tt.wantErr)
		}
	}

	none := NewCommand(CommandDef{Name: "plain", Command: []string{"true"}})
	if none.HasLookup() || none.Idempotent() {
		t.Errorf("a tool without lookup: HasLookup, Idempotent = %v, %v; want false, false", none.HasLookup(), none.Idempotent())
	}
	if _, _, err := none.LookupResult(context.Background(), Call{Workspace: ws, IdempotencyKey: "k"}); err == nil || !strings.Contains(err.Error(), "no lookup command") {
		t.Errorf("LookupResult without a lookup command = %v, want an error", err)
	}
	if got := NewCommand(CommandDef{Name: "empty"}).Run(context.Background(), Call{Workspace: ws}); got.Status != statusError {
		t.Errorf("Run without a command = %+v, want an error", got)
	}
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// TestCommandLookupHidesLikeTheCall: a lookup runs confined like the call
// it settles, with the run's hide list (the agentctl home inside an
// in-place workspace, say), not the default one.
func TestCommandLookupHidesLikeTheCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, dir, "lookup.sh", "cat home/sessions/other/events.log 2>/dev/null || echo hidden\n")
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "home", "sessions", "other"), 0o755)
	os.WriteFile(filepath.Join(ws, "home", "sessions", "other", "events.log"), []byte("another session's log\n"), 0o644)
	c := NewCommand(CommandDef{Name: "deploy", Command: []string{"true"}, Lookup: []string{"./lookup.sh"}, Dir: dir, Idempotent: true})
	out, found, err := c.LookupResult(context.Background(), Call{Workspace: ws, IdempotencyKey: "k",
		Sandbox: &sandbox.Config{Hide: []string{filepath.Join(ws, "home")}}})
	if err != nil || !found || out != "hidden\n" {
		t.Fatalf("LookupResult with the home hidden = %q, %v, %v; want the lookup not to see the home", out, found, err)
	}
}
