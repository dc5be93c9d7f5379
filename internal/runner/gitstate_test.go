package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/gitsafe"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// gitRun is a scripted agent over a code-shaped workspace (a go.mod, so
// git state is on by default) written into a temp folder.
type gitRun struct {
	t     *testing.T
	dir   string
	sp    *spec.Spec
	store recorder.Store
}

// newGitRun writes the workspace files, the script (YAML turns) and a
// spec with extra YAML lines, and loads the spec.
func newGitRun(t *testing.T, files map[string]string, script, extra string) *gitRun {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, "src", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644)
	y := "name: git-run\nmodel: {provider: scripted, id: scripted-1, script: script.yaml}\nprompt: \"Edit the files.\"\n" +
		"workspace: {from: src}\nmode: write\ntools: [read_file, write_file, edit_file, list_files]\n" + extra
	os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(y), 0o644)
	sp, err := spec.Load(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return &gitRun{t: t, dir: dir, sp: sp, store: recorder.Store{Root: filepath.Join(dir, "home")}}
}

func (g *gitRun) config(fp func(string, int64)) Config {
	g.t.Helper()
	script, err := provider.LoadScript(g.sp.Model.Script)
	if err != nil {
		g.t.Fatal(err)
	}
	reg, err := tools.Builtins(g.sp.Mode, g.sp.Tools)
	if err != nil {
		g.t.Fatal(err)
	}
	return Config{Spec: g.sp, Store: g.store, Provider: provider.NewScripted(script, g.sp.Model.ID), Tools: reg, Failpoint: fp}
}

func (g *gitRun) events(id string) []session.Event {
	g.t.Helper()
	evs, _, err := g.store.Load(id)
	if err != nil {
		g.t.Fatal(err)
	}
	return evs
}

func (g *gitRun) tracker(id string) *gitsafe.Tracker {
	g.t.Helper()
	tr, err := gitsafe.OpenTracker(filepath.Join(g.store.SessionDir(id), recorder.GitDir), filepath.Join(g.store.SessionDir(id), recorder.WorkspaceDir), gitsafe.RunBranch(id))
	if err != nil {
		g.t.Fatal(err)
	}
	return tr
}

// exported reads the files of commit sha (.git and go.mod aside).
func exported(t *testing.T, tr *gitsafe.Tracker, sha string) map[string]string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "x")
	if err := tr.Export(context.Background(), sha, dst); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(dst, p)
			if rel != "go.mod" {
				b, _ := os.ReadFile(p)
				out[filepath.ToSlash(rel)] = string(b)
			}
		}
		return nil
	})
	return out
}

const threeTurns = `turns:
  - text: "Write a."
    tool_calls:
      - {name: write_file, args: {path: a.txt, content: "one\n"}}
  - text: "Look, then edit a and add b."
    tool_calls:
      - {name: read_file, args: {path: a.txt}}
      - {name: edit_file, args: {path: a.txt, old: one, new: two}}
      - {name: write_file, args: {path: sub/b.txt, content: "bee\n"}}
  - text: "Rewrite a with what it has."
    tool_calls:
      - {name: write_file, args: {path: a.txt, content: "two\n"}}
  - text: "Done."
`

// TestGitCommitsAcrossTurns: a scripted run editing files across turns
// records an initializer commit on the first user message, one commit per
// call that changed files on its tool_result (none for a read or for a
// write that left the file as it was), and the final commit on the done
// finish. The real git history of the run branch (read through gitsafe)
// holds exactly those commits, newest first, each with the session and
// the intent's seq in its trailers and the files of its moment.
func TestGitCommitsAcrossTurns(t *testing.T) {
	g := newGitRun(t, map[string]string{"go.mod": "module m\n"}, threeTurns, "")
	res, err := Start(context.Background(), g.config(nil))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %+v, %v", res, err)
	}
	evs := g.events(res.SessionID)
	var recorded []string // SHAs in log order
	var shaSeq = map[string]int64{}
	var intentOf = map[string]int64{}
	want := map[string]map[string]string{} // sha -> files
	for _, e := range evs {
		switch {
		case e.Kind == session.KindToolIntent:
			intentOf[e.CallID] = e.Seq
		case e.Kind == session.KindToolResult && e.Tool == "read_file" && e.GitSHA != "":
			t.Errorf("a read_file result carries git_sha %s", e.GitSHA)
		}
		if e.GitSHA != "" {
			if e.Kind != session.KindSessionFinished {
				recorded = append(recorded, e.GitSHA)
			}
			shaSeq[e.GitSHA] = e.Seq
		}
	}
	first := evs[1]
	if first.Kind != session.KindUserMessage || first.GitSHA == "" {
		t.Fatalf("the first user message %+v carries no initializer commit", first)
	}
	tr := g.tracker(res.SessionID)
	log, err := tr.Log(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	// initializer, write a, edit a, write b; the last write changed nothing.
	if len(log) != 4 || len(recorded) != 4 {
		t.Fatalf("%d commits on the branch, %d recorded; want 4 and 4:\n%+v", len(log), len(recorded), log)
	}
	for i, c := range log {
		if c.SHA != recorded[len(recorded)-1-i] {
			t.Errorf("commit %d of the branch is %s, the log recorded %s", i, c.SHA, recorded[len(recorded)-1-i])
		}
		if c.Trailers[TrailerSession] != res.SessionID {
			t.Errorf("commit %s has session trailer %q", c.SHA, c.Trailers[TrailerSession])
		}
		seq, _ := strconv.ParseInt(c.Trailers[TrailerSeq], 10, 64)
		if call := c.Trailers[TrailerCall]; call != "" && seq != intentOf[call] {
			t.Errorf("commit %s names seq %d, the intent of %s is %d", c.SHA, seq, call, intentOf[call])
		}
		if seq >= shaSeq[c.SHA] {
			t.Errorf("commit %s names seq %d, not before the event %d that records it", c.SHA, seq, shaSeq[c.SHA])
		}
	}
	want[recorded[0]] = map[string]string{}
	want[recorded[1]] = map[string]string{"a.txt": "one\n"}
	want[recorded[2]] = map[string]string{"a.txt": "two\n"}
	want[recorded[3]] = map[string]string{"a.txt": "two\n", "sub/b.txt": "bee\n"}
	for sha, files := range want {
		got := exported(t, tr, sha)
		if len(got) != len(files) {
			t.Errorf("commit %s holds %v, want %v", sha, got, files)
		}
		for k, v := range files {
			if got[k] != v {
				t.Errorf("commit %s: %s = %q, want %q", sha, k, got[k], v)
			}
		}
	}
	last := evs[len(evs)-1]
	if last.Kind != session.KindSessionFinished || last.GitSHA != recorded[3] {
		t.Errorf("the done finish carries %q, want the last commit %s", last.GitSHA, recorded[3])
	}
	if cp, ok := latestCheckpoint(g.store.SessionDir(res.SessionID), evs); !ok || cp.WorkspaceGit == "" || shaSeq[cp.WorkspaceGit] == 0 {
		t.Errorf("the latest checkpoint's workspace_git_sha %q is not a recorded commit", cp.WorkspaceGit)
	}
	if session.Fold(evs).GitSHA != recorded[3] {
		t.Errorf("State.GitSHA = %s, want %s", session.Fold(evs).GitSHA, recorded[3])
	}
}

// TestGitDefault: git state is the default for a code-shaped workspace
// only; workspace.git says otherwise either way.
func TestGitDefault(t *testing.T) {
	for _, c := range []struct {
		files map[string]string
		extra string
		want  bool
	}{
		{map[string]string{"go.mod": "module m\n"}, "", true},
		{map[string]string{"package.json": "{}"}, "", true},
		{map[string]string{"notes.md": "hello\n"}, "", false},
		{map[string]string{"notes.md": "hello\n"}, "", false},
		{map[string]string{"notes.md": "hello\n"}, "workspace: {from: src, git: true}\n", true},
		{map[string]string{"go.mod": "module m\n"}, "workspace: {from: src, git: false}\n", false},
	} {
		extra := c.extra
		g := newGitRun(t, c.files, threeTurns, "")
		if extra != "" {
			y, _ := os.ReadFile(filepath.Join(g.dir, "agent.yaml"))
			os.WriteFile(filepath.Join(g.dir, "agent.yaml"), []byte(strings.Replace(string(y), "workspace: {from: src}\n", extra, 1)), 0o644)
			sp, err := spec.Load(filepath.Join(g.dir, "agent.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			g.sp = sp
		}
		res, err := Start(context.Background(), g.config(nil))
		if err != nil {
			t.Fatal(err)
		}
		got := session.Fold(g.events(res.SessionID)).GitSHA != ""
		if got != c.want {
			t.Errorf("%v %q: git state %v, want %v", c.files, c.extra, got, c.want)
		}
		_, statErr := os.Stat(filepath.Join(g.store.SessionDir(res.SessionID), recorder.GitDir))
		if (statErr == nil) != c.want {
			t.Errorf("%v %q: git folder exists = %v", c.files, c.extra, statErr == nil)
		}
	}
}

// crash is the panic value of the in-process failpoint.
type crash struct{}

// startCrashing runs the session until the failpoint panics at kind:seq,
// as a SIGKILL would stop it (deferred closes run; nothing else).
func startCrashing(t *testing.T, cfg Config, kind string, seq int64) {
	t.Helper()
	cfg.Failpoint = func(k string, s int64) {
		if k == kind && s == seq {
			panic(crash{})
		}
	}
	defer func() {
		if v := recover(); v != (crash{}) {
			t.Fatalf("the run did not crash at %s:%d (%v)", kind, seq, v)
		}
	}()
	Start(context.Background(), cfg)
}

// TestGitCrashBetweenEditAndCommit: the run dies inside the edit_file
// call, after the file changed and before the commit and its result. The
// resumed run accepts the difference (a call was in flight), reconciles
// the call, and records the commit of its change on the reconciled event;
// the branch then holds every change once and the run ends done.
func TestGitCrashBetweenEditAndCommit(t *testing.T) {
	g := newGitRun(t, map[string]string{"go.mod": "module m\n"}, threeTurns, "")
	cfg := g.config(nil)
	cfg.SessionID = "crash1"
	// seq: 1 header, 2 user, 3 assistant, 4 model_call, 5 intent, 6 result,
	// 7 assistant, 8 model_call, 9 intent read, 10 result, 11 intent edit.
	startCrashing(t, cfg, "in-tool", 11)
	evs := g.events("crash1")
	if l := evs[len(evs)-1]; l.Kind != session.KindToolIntent || l.Tool != "edit_file" {
		t.Fatalf("the log ends with %s %s, not the edit's intent", l.Kind, l.Tool)
	}
	ws := filepath.Join(g.store.SessionDir("crash1"), recorder.WorkspaceDir)
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "two\n" {
		t.Fatalf("the edit did not land before the crash: %q", b)
	}
	tr := g.tracker("crash1")
	if changes, _ := tr.Changes(context.Background(), session.Fold(evs).GitSHA); len(changes) != 1 {
		t.Fatalf("uncommitted changes at the crash: %v, want a.txt", changes)
	}
	res, err := Resume(context.Background(), g.config(nil), "crash1")
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	evs = g.events("crash1")
	var rec *session.Event
	for i, e := range evs {
		if e.Kind == session.KindReconciled {
			rec = &evs[i]
		}
	}
	if rec == nil || rec.GitSHA == "" {
		t.Fatalf("the reconciled event %+v carries no commit", rec)
	}
	if got := exported(t, tr, rec.GitSHA); got["a.txt"] != "two\n" {
		t.Errorf("the reconciled commit holds %v", got)
	}
	log, _ := tr.Log(context.Background(), 100)
	if len(log) != 4 {
		t.Errorf("%d commits after the resumed run, want 4 (init, a, edit, b): %+v", len(log), log)
	}
}

// TestGitBranchPastTheLog: a run that dies after a call's commit and
// before its result leaves the branch one commit past the log (made here
// by hand, as the crashed run would have, with the pending call's
// trailers): resume accepts a commit made for a call in flight, and
// refuses one that names no such call.
func TestGitBranchPastTheLog(t *testing.T) {
	g := newGitRun(t, map[string]string{"go.mod": "module m\n"}, threeTurns, "")
	cfg := g.config(nil)
	cfg.SessionID = "past1"
	startCrashing(t, cfg, "in-tool", 11)
	tr := g.tracker("past1")
	// What the crashed run would have done next: commit for call of seq 11.
	evs := g.events("past1")
	call := evs[len(evs)-1].CallID
	if _, made, err := tr.Commit(context.Background(), "call", map[string]string{TrailerSession: "past1", TrailerSeq: "11", TrailerCall: call}, evs[len(evs)-1].TS); err != nil || !made {
		t.Fatal(err)
	}
	res, err := Resume(context.Background(), g.config(nil), "past1")
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	// A commit of no call in flight is a mismatch.
	g2 := newGitRun(t, map[string]string{"go.mod": "module m\n"}, threeTurns, "")
	cfg2 := g2.config(nil)
	cfg2.SessionID = "past2"
	startCrashing(t, cfg2, "in-tool", 11)
	tr2 := g2.tracker("past2")
	if _, _, err := tr2.Commit(context.Background(), "someone else", map[string]string{TrailerSession: "past2"}, evs[0].TS); err != nil {
		t.Fatal(err)
	}
	_, err = Resume(context.Background(), g2.config(nil), "past2")
	var wm *WorkspaceMismatchError
	if !errors.As(err, &wm) || !strings.Contains(err.Error(), "no call in flight") {
		t.Errorf("resume over a foreign commit: %v, want a mismatch", err)
	}
}

// TestGitResumeMismatch: between invocations someone changes the
// workspace (no call in flight): resume refuses with the differing paths
// and appends nothing; --on-mismatch=reset puts the files back and goes
// on; --on-mismatch=accept records them as a commit.
func TestGitResumeMismatch(t *testing.T) {
	for _, choice := range []string{WorkspaceReset, WorkspaceAccept} {
		t.Run(choice, func(t *testing.T) {
			g := newGitRun(t, map[string]string{"go.mod": "module m\n"}, threeTurns, "budget: {max_tool_calls: 1}\n")
			cfg := g.config(nil)
			res, err := Start(context.Background(), cfg)
			if err != nil || res.Status != session.StatusBudgetExceeded {
				t.Fatalf("run: %+v, %v", res, err)
			}
			id := res.SessionID
			ws := filepath.Join(g.store.SessionDir(id), recorder.WorkspaceDir)
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("tampered\n"), 0o644)
			os.WriteFile(filepath.Join(ws, "extra.txt"), []byte("x\n"), 0o644)
			before := len(g.events(id))
			cfg = g.config(nil)
			cfg.Resume.Budget = []string{"max_tool_calls=20"}
			_, err = Resume(context.Background(), cfg, id)
			var wm *WorkspaceMismatchError
			if !errors.As(err, &wm) || len(wm.Paths) != 2 || wm.Paths[0].Path != "a.txt" || wm.Paths[1].Path != "extra.txt" {
				t.Fatalf("resume over a changed workspace: %v; want a mismatch naming a.txt and extra.txt", err)
			}
			if !strings.Contains(err.Error(), "--on-mismatch=reset") {
				t.Errorf("the error does not say how to go on: %v", err)
			}
			// The budget_changed of the refused resume is recorded before the
			// check; nothing about the workspace is.
			for _, e := range g.events(id)[before:] {
				if e.Kind != session.KindBudgetChanged {
					t.Errorf("the refused resume appended %s", e.Kind)
				}
			}
			cfg = g.config(nil)
			cfg.Resume.Budget = []string{"max_tool_calls=20"}
			cfg.Resume.WorkspaceChoice = choice
			res, err = Resume(context.Background(), cfg, id)
			if err != nil || res.Status != session.StatusDone {
				t.Fatalf("resume --on-mismatch=%s: %+v, %v", choice, res, err)
			}
			var mm *session.Event
			evs := g.events(id)
			for i, e := range evs {
				if e.Kind == session.KindError && e.Reason == ReasonWorkspaceMismatch {
					mm = &evs[i]
				}
			}
			if mm == nil || !strings.Contains(mm.Error, "a.txt") {
				t.Fatalf("no workspace_mismatch error event naming a.txt: %+v", mm)
			}
			_, extraErr := os.Stat(filepath.Join(ws, "extra.txt"))
			switch choice {
			case WorkspaceReset:
				if extraErr == nil || mm.GitSHA != "" {
					t.Errorf("reset left extra.txt (%v) or recorded a commit %q", extraErr, mm.GitSHA)
				}
			case WorkspaceAccept:
				if extraErr != nil || mm.GitSHA == "" {
					t.Errorf("accept removed extra.txt (%v) or recorded no commit", extraErr)
				} else if got := exported(t, g.tracker(id), mm.GitSHA); got["extra.txt"] != "x\n" {
					t.Errorf("the accepted commit holds %v", got)
				}
			}
		})
	}
}

// TestGitArmedRepository: the source workspace is a repository armed
// against whoever runs git in it (hooks for every event, an fsmonitor, a
// filter driver), and the agent adds a .gitignore that hides everything
// and replaces .git with a symlink to a repository outside. No planted
// program runs, and every file the agent wrote is in the record.
func TestGitArmedRepository(t *testing.T) {
	g := newGitRun(t, map[string]string{"main.go": "package main\n"}, `turns:
  - text: "Hide."
    tool_calls:
      - {name: write_file, args: {path: .gitignore, content: "*\n"}}
      - {name: write_file, args: {path: secret-plan.txt, content: "plan\n"}}
  - text: "Done."
`, "")
	src := filepath.Join(g.dir, "src")
	marker := filepath.Join(g.dir, "marker")
	evil := filepath.Join(g.dir, "evil.sh")
	os.WriteFile(evil, []byte("#!/bin/sh\necho ran >> "+marker+"\ncat\n"), 0o755)
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir, cmd.Env = dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + g.dir, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git(src, "init", "-q")
	git(src, "add", ".")
	git(src, "commit", "-qm", "src")
	git(src, "config", "core.fsmonitor", evil)
	git(src, "config", "filter.pwn.clean", evil)
	os.WriteFile(filepath.Join(src, ".gitattributes"), []byte("* filter=pwn\n"), 0o644)
	for _, h := range []string{"pre-commit", "post-commit", "post-index-change", "reference-transaction", "post-checkout"} {
		os.WriteFile(filepath.Join(src, ".git", "hooks", h), []byte("#!/bin/sh\necho "+h+" >> "+marker+"\n"), 0o755)
	}
	res, err := Start(context.Background(), g.config(nil))
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("a planted program ran: %s", b)
	}
	evs := g.events(res.SessionID)
	got := exported(t, g.tracker(res.SessionID), session.Fold(evs).GitSHA)
	if got["secret-plan.txt"] != "plan\n" || got[".gitignore"] != "*\n" || got["main.go"] != "package main\n" {
		t.Errorf("the record lacks what the agent wrote: %v", got)
	}
	if _, ok := got[".git/config"]; ok {
		t.Error("the workspace's .git is in the record")
	}
}

// TestGitFolderLost: the run's git folder is gone (a home copied without
// it): resume refuses, saying so; --on-mismatch=accept records the
// workspace as it is as the new base and goes on.
func TestGitFolderLost(t *testing.T) {
	g := newGitRun(t, map[string]string{"go.mod": "module m\n"}, threeTurns, "budget: {max_tool_calls: 1}\n")
	res, err := Start(context.Background(), g.config(nil))
	if err != nil || res.Status != session.StatusBudgetExceeded {
		t.Fatalf("run: %+v, %v", res, err)
	}
	os.RemoveAll(filepath.Join(g.store.SessionDir(res.SessionID), recorder.GitDir))
	cfg := g.config(nil)
	cfg.Resume.Budget = []string{"max_tool_calls=20"}
	_, err = Resume(context.Background(), cfg, res.SessionID)
	var wm *WorkspaceMismatchError
	if !errors.As(err, &wm) || !strings.Contains(err.Error(), "does not hold it") {
		t.Fatalf("resume without the git folder: %v, want a mismatch", err)
	}
	cfg.Resume.WorkspaceChoice = WorkspaceReset
	if _, err := Resume(context.Background(), cfg, res.SessionID); !errors.As(err, &wm) {
		t.Errorf("reset without the commit to reset to: %v, want the mismatch", err)
	}
	cfg.Resume.WorkspaceChoice = WorkspaceAccept
	if res, err = Resume(context.Background(), cfg, res.SessionID); err != nil || res.Status != session.StatusDone {
		t.Fatalf("resume --on-mismatch=accept: %+v, %v", res, err)
	}
}
