package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// gitAgent writes a code-shaped workspace (go.mod, b.txt) and an agent
// whose turns write a file, run bash (create c.txt, remove b.txt), then
// rewrite the file; git is the given workspace.git.
func gitAgent(t *testing.T, git string) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "go.mod"), []byte("module m\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "src", "b.txt"), []byte("bee\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`turns:
  - text: "Write a."
    tool_calls:
      - {name: write_file, args: {path: a.txt, content: "one\n"}}
  - text: "Shell work."
    tool_calls:
      - {name: bash, args: {command: "echo made-by-bash > c.txt && rm b.txt"}}
  - text: "Rewrite a."
    tool_calls:
      - {name: write_file, args: {path: a.txt, content: "two\n"}}
  - text: "Done."
`), 0o644)
	y := "name: git-fork\nmodel: {provider: scripted, id: scripted-1, script: script.yaml}\nprompt: \"Work.\"\n" +
		"workspace: {from: src, git: " + git + "}\nmode: write\ntools: [read_file, write_file, bash]\n"
	os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(y), 0o644)
	sp, err := spec.Load(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// wsFiles reads a workspace's regular files.
func wsFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			b, _ := os.ReadFile(p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return out
}

// TestForkFromGitState: a fork of a session with git state, from the
// result of a bash call, starts from that call's commit: its workspace has
// exactly the files of that moment (bash's new file, without the file
// bash removed, the later rewrite not applied), no recorded call runs
// again, and no --rerun-bash is needed. The same fork of the session
// without git state is refused, as before: bash's effects are not in the
// log.
func TestForkFromGitState(t *testing.T) {
	for _, git := range []string{"true", "false"} {
		t.Run("git="+git, func(t *testing.T) {
			sp := gitAgent(t, git)
			home := t.TempDir()
			st := recorder.Store{Root: home}
			res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Provider: replaytest.Scripted(t, sp), Tools: replaytest.Tools(t, sp), SessionID: "00000000000009a1"})
			if err != nil || res.Status != session.StatusDone {
				t.Fatalf("run: %+v, %v", res, err)
			}
			evs, _, _ := st.Load(res.SessionID)
			var from int64
			var sha string
			for _, e := range evs {
				if e.Kind == session.KindToolResult && e.Tool == "bash" {
					from, sha = e.Seq, e.GitSHA
				}
			}
			if from == 0 || (git == "true") != (sha != "") {
				t.Fatalf("bash result at %d with git_sha %q", from, sha)
			}
			fsp := *sp
			fsp.Model = spec.Model{Provider: "scripted", ID: "scripted-2"}
			stop := provider.Script{Turns: []provider.ScriptTurn{{Text: "Stopping here."}}}
			rep, err := Fork(context.Background(), ForkConfig{Store: st, SessionID: res.SessionID, Events: evs, From: from,
				Spec: &fsp, Provider: provider.NewScripted(stop, "scripted-2"), Tools: replaytest.Tools(t, &fsp), ForkID: "00000000000009a2"})
			if git == "false" {
				if err == nil || !strings.Contains(err.Error(), "bash") {
					t.Fatalf("fork past bash without git state: %v, want the old refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.GitSHA != sha || rep.Reapplied != 0 || rep.Rerun != 0 || rep.Result.Status != session.StatusDone {
				t.Fatalf("Fork = %+v, want the bash commit %s and nothing re-run", rep, sha)
			}
			got := wsFiles(t, filepath.Join(st.SessionDir("00000000000009a2"), recorder.WorkspaceDir))
			want := map[string]string{"go.mod": "module m\n", "a.txt": "one\n", "c.txt": "made-by-bash\n"}
			if len(got) != len(want) {
				t.Errorf("the fork's workspace = %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("the fork's %s = %q, want %q", k, got[k], v)
				}
			}
			if parent := wsFiles(t, filepath.Join(st.SessionDir(res.SessionID), recorder.WorkspaceDir)); parent["a.txt"] != "two\n" {
				t.Errorf("the parent's workspace changed: %v", parent)
			}
			fevs, _, _ := st.Load("00000000000009a2")
			if f := session.Fold(fevs); f.GitSHA != sha {
				t.Errorf("the fork's last git_sha = %s, want %s (nothing changed after the fork)", f.GitSHA, sha)
			}
		})
	}
}
