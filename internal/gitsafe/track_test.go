package gitsafe_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/gitsafe"
)

// tracker opens a Tracker for w.ws with its git folder next to the
// workspace, as the runner keeps it under the session folder.
func (w *world) tracker() *gitsafe.Tracker {
	w.t.Helper()
	tr, err := gitsafe.OpenTracker(filepath.Join(filepath.Dir(w.ws), "rungit"), w.ws, "agentctl/s1")
	if err != nil {
		w.t.Fatal(err)
	}
	tr.Timeout = 20 * time.Second
	return tr
}

// files reads every file under dir except .git folders, symlinks as
// "-> target", for comparing a workspace with an export.
func files(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

func equalFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestTrackerCommits: edits, a new file and a deletion across three
// commits; each commit holds the work tree of its moment (checked by
// exporting it), carries its trailers, and an unchanged work tree makes
// no commit.
func TestTrackerCommits(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	tr := w.tracker()
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first, made, err := tr.Commit(ctx, "initializer", map[string]string{"Agentctl-Session": "s1", "Agentctl-Seq": "2"}, when)
	if err != nil || !made {
		t.Fatalf("first commit: %s %v %v", first, made, err)
	}
	snap1 := files(t, w.ws)
	if again, made, err := tr.Commit(ctx, "nothing", nil, when); err != nil || made || again != first {
		t.Fatalf("commit of an unchanged work tree = %s, %v, %v; want %s and no commit", again, made, err, first)
	}
	w.write(filepath.Join(w.ws, "a.txt"), "edited\n")
	w.write(filepath.Join(w.ws, "d", "new.txt"), "new\n")
	os.Remove(filepath.Join(w.ws, "b.txt"))
	changes, err := tr.Changes(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	want := []gitsafe.Change{{"M", "a.txt"}, {"D", "b.txt"}, {"A", "d/new.txt"}}
	if len(changes) != len(want) {
		t.Fatalf("changes = %v, want %v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Errorf("change %d = %v, want %v", i, changes[i], want[i])
		}
	}
	second, made, err := tr.Commit(ctx, "call c1", map[string]string{"Agentctl-Session": "s1", "Agentctl-Seq": "7"}, when.Add(time.Second))
	if err != nil || !made || second == first {
		t.Fatalf("second commit: %s %v %v", second, made, err)
	}
	snap2 := files(t, w.ws)
	log, err := tr.Log(ctx, 10)
	if err != nil || len(log) != 2 || log[0].SHA != second || log[1].SHA != first {
		t.Fatalf("log = %+v, %v", log, err)
	}
	if log[0].Trailers["Agentctl-Seq"] != "7" || log[0].Trailers["Agentctl-Session"] != "s1" || log[0].Subject != "call c1" {
		t.Errorf("newest commit = %+v", log[0])
	}
	for _, c := range []struct {
		id   string
		want map[string]string
	}{{first, snap1}, {second, snap2}} {
		dst := filepath.Join(t.TempDir(), "x")
		if err := tr.Export(ctx, c.id, dst); err != nil {
			t.Fatal(err)
		}
		if got := files(t, dst); !equalFiles(got, c.want) {
			t.Errorf("export of %s = %v, want %v", c.id, got, c.want)
		}
	}
	// The same tree, message and time give the same id (a resumed run's
	// commit is comparable).
	tr2, _ := gitsafe.OpenTracker(filepath.Join(t.TempDir(), "g2"), w.ws, "agentctl/s1")
	if err := tr.Restore(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := files(t, w.ws); !equalFiles(got, snap1) {
		t.Errorf("restore of %s = %v, want %v", first, got, snap1)
	}
	if id, _, err := tr2.Commit(ctx, "initializer", map[string]string{"Agentctl-Session": "s1", "Agentctl-Seq": "2"}, when); err != nil || id != first {
		t.Errorf("the same commit in another folder = %s, %v; want %s", id, err, first)
	}
}

// TestTrackerAttacks: what an agent can plant in its workspace to make a
// git that records it run a program, read outside the workspace, or leave
// something out of the record. Each row shows the attack works on plain
// git committing in the workspace (control), then commits with a Tracker:
// no marker file, no outside content in any exported commit, and the
// export equals the work tree byte for byte (every file recorded as it
// is).
func TestTrackerAttacks(t *testing.T) {
	rows := []struct {
		name  string
		plant func(w *world)
		quiet bool // no control: plain git does not run or leak for it, it only hides or converts
	}{
		{name: "filter clean", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "* filter=pwn\n")
			w.config("filter.pwn.clean", w.evil, "filter.pwn.required", "true")
		}},
		{name: "filter process", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "* filter=pwn\n")
			w.config("filter.pwn.process", w.evil)
		}},
		{name: "fsmonitor", plant: func(w *world) { w.config("core.fsmonitor", w.evil) }},
		{name: "hooks", plant: func(w *world) {
			for _, h := range hooks {
				p := filepath.Join(w.ws, ".git", "hooks", h)
				w.write(p, "#!/bin/sh\necho "+h+" >> "+filepath.Join(w.out, "marker-"+h)+"\n")
				os.Chmod(p, 0o755)
			}
		}},
		{name: "include.path", plant: func(w *world) {
			w.write(filepath.Join(w.out, "evil.cfg"), "[filter \"pwn\"]\n\tclean = "+w.evil+"\n")
			w.write(filepath.Join(w.ws, ".gitattributes"), "* filter=pwn\n")
			w.config("include.path", filepath.Join(w.out, "evil.cfg"))
		}},
		{name: ".git a symlink to a repository outside", plant: func(w *world) {
			os.RemoveAll(filepath.Join(w.ws, ".git"))
			os.Symlink(filepath.Join(w.other, ".git"), filepath.Join(w.ws, ".git"))
		}},
		{name: "core.worktree outside", plant: func(w *world) { w.config("core.worktree", w.hidden) }},
		{name: "a symlink to the key", plant: func(w *world) {
			os.Symlink(filepath.Join(w.hidden, "id_rsa"), filepath.Join(w.ws, "key"))
		}, quiet: true},
		{name: ".gitignore hides everything", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitignore"), "*\n")
			w.write(filepath.Join(w.ws, "hidden.txt"), "not hidden from the record\n")
		}, quiet: true},
		{name: "eol conversion", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "* text eol=lf\n")
			w.write(filepath.Join(w.ws, "crlf.txt"), "a\r\nb\r\n")
		}, quiet: true},
		{name: "untracked nested repository with its own fsmonitor", plant: func(w *world) {
			sub := filepath.Join(w.ws, "nested")
			w.write(filepath.Join(sub, "s.txt"), "s\n")
			w.git(sub, "init", "-q")
			w.git(sub, "add", ".")
			w.git(sub, "commit", "-qm", "s")
			w.git(sub, "config", "core.fsmonitor", w.evil)
		}, quiet: true},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ctx := context.Background()
			if !row.quiet {
				c := newWorld(t)
				row.plant(c)
				c.naiveCommit()
				leaked := strings.Contains(c.git(c.other, "log", "--all", "--format=%s"), "naive") ||
					strings.Contains(c.git(c.ws, "log", "--all", "-p"), hiddenKey)
				if len(c.ran()) == 0 && !leaked {
					t.Fatalf("control: plain git ran nothing and wrote nothing outside; the attack is not real")
				}
			}
			w := newWorld(t)
			tr := w.tracker()
			if _, _, err := tr.Commit(ctx, "initializer", nil, time.Now()); err != nil {
				t.Fatal(err)
			}
			row.plant(w)
			w.write(filepath.Join(w.ws, "a.txt"), "the agent's edit\n")
			id, _, err := tr.Commit(ctx, "after", nil, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if m := w.ran(); len(m) > 0 {
				t.Errorf("a planted program ran: %v", m)
			}
			dst := filepath.Join(t.TempDir(), "x")
			if err := tr.Export(ctx, id, dst); err != nil {
				t.Fatal(err)
			}
			got, want := files(t, dst), files(t, w.ws)
			if row.name == "untracked nested repository with its own fsmonitor" {
				delete(want, filepath.Join("nested", "s.txt")) // left out on purpose, see Tracker
			}
			if !equalFiles(got, want) {
				t.Errorf("the commit holds %q, the work tree %q", got, want)
			}
			for name, body := range got {
				if strings.Contains(body, hiddenKey) || strings.Contains(body, hiddenOther) {
					t.Errorf("outside content in the record at %s", name)
				}
			}
			if s := w.git(w.other, "log", "--all", "--format=%s"); s != "other" {
				t.Errorf("the repository outside changed: %q", s)
			}
		})
	}
}

// naiveCommit is what a tool that trusts the workspace's repository
// would do: plain git add and commit in it.
func (w *world) naiveCommit() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-qm", "naive"}} {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = w.ws
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.out, "GIT_CONFIG_NOSYSTEM=1"}
		cmd.Run()
	}
}

// TestTrackerInsideWorkspace: a git folder the agent could reach is
// refused.
func TestTrackerInsideWorkspace(t *testing.T) {
	w := newWorld(t)
	for _, dir := range []string{filepath.Join(w.ws, "g"), w.ws} {
		if _, err := gitsafe.OpenTracker(dir, w.ws, "b"); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
			t.Errorf("OpenTracker(%s) = %v, want a refusal", dir, err)
		}
	}
}

// TestTrackerStaleLock: a git killed while it held the index lock leaves
// index.lock behind; the next Tracker (the resumed run, which holds the
// session lease) removes it instead of failing every commit.
func TestTrackerStaleLock(t *testing.T) {
	w := newWorld(t)
	tr := w.tracker()
	if _, _, err := tr.Commit(context.Background(), "one", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tr.Dir(), "index.lock"), nil, 0o600)
	w.write(filepath.Join(w.ws, "a.txt"), "two\n")
	if _, _, err := tr.Commit(context.Background(), "two", nil, time.Now()); err == nil {
		t.Fatal("the lock does not block git: the test cannot tell")
	}
	if _, made, err := w.tracker().Commit(context.Background(), "two", nil, time.Now()); err != nil || !made {
		t.Errorf("commit after reopening = %v, %v", made, err)
	}
}

// bigWorkspace writes n small files in 100 folders.
func bigWorkspace(b testing.TB, ws string, n int) {
	for i := range n {
		p := filepath.Join(ws, "d"+strconv.Itoa(i%100), "f"+strconv.Itoa(i)+".go")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("package p // "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTrackerManyFiles: a 10,000-file workspace is committed whole, and a
// later commit after three edits changes exactly those three paths.
func TestTrackerManyFiles(t *testing.T) {
	w := newWorld(t)
	bigWorkspace(t, w.ws, 10000)
	tr := w.tracker()
	ctx := context.Background()
	first, _, err := tr.Commit(ctx, "init", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w.write(filepath.Join(w.ws, "d"+strconv.Itoa(i), "f"+strconv.Itoa(i)+".go"), "changed\n")
	}
	second, _, err := tr.Commit(ctx, "edit", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	changes, err := tr.Diff(ctx, first, second)
	if err != nil || len(changes) != 3 {
		t.Errorf("changes = %v, %v; want the 3 edits", changes, err)
	}
	var out bytes.Buffer
	cmd := exec.Command("git", "--git-dir", tr.Dir(), "ls-tree", "-r", "--name-only", first)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil || strings.Count(out.String(), "\n") < 10000 {
		t.Errorf("the first commit has %d paths, %v", strings.Count(out.String(), "\n"), err)
	}
}

// TestTrackerHandedOver: a home from elsewhere holds the run's git folder,
// its config armed (fsmonitor, a filter every path uses, an include of
// more), its info/attributes naming the filter, an alternate outside and
// hooks. Opening it rewrites what could run a program or lead outside;
// a commit runs nothing.
func TestTrackerHandedOver(t *testing.T) {
	w := newWorld(t)
	tr := w.tracker()
	if _, _, err := tr.Commit(context.Background(), "one", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	dir := tr.Dir()
	w.write(filepath.Join(dir, "config"), "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "+w.evil+"\n[filter \"pwn\"]\n\tclean = "+w.evil+"\n\trequired = true\n")
	w.write(filepath.Join(dir, "info", "attributes"), "* filter=pwn\n")
	w.write(filepath.Join(dir, "objects", "info", "alternates"), filepath.Join(w.other, ".git", "objects")+"\n")
	for _, h := range hooks {
		w.write(filepath.Join(dir, "hooks", h), "#!/bin/sh\necho "+h+" >> "+filepath.Join(w.out, "marker-"+h)+"\n")
		os.Chmod(filepath.Join(dir, "hooks", h), 0o755)
	}
	// Control: plain git with that folder runs the planted filter.
	cmd := exec.Command("git", "--git-dir", dir, "--work-tree", w.ws, "add", "a.txt")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.out, "GIT_CONFIG_NOSYSTEM=1"}
	cmd.Run()
	if len(w.ran()) == 0 {
		t.Fatal("control: plain git ran nothing; the attack is not real")
	}
	for _, m := range w.ran() {
		os.Remove(m)
	}
	w.write(filepath.Join(w.ws, "a.txt"), "two\n")
	if _, made, err := w.tracker().Commit(context.Background(), "two", nil, time.Now()); err != nil || !made {
		t.Fatalf("commit: %v %v", made, err)
	}
	if m := w.ran(); len(m) > 0 {
		t.Errorf("a planted program ran: %v", m)
	}
}

// TestTrackerSeed: a fork's Tracker starts at another's commit with its
// files, keeps working when the other folder is gone, and commits on.
func TestTrackerSeed(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	tr := w.tracker()
	id, _, err := tr.Commit(ctx, "one", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := files(t, w.ws)
	w.write(filepath.Join(w.ws, "a.txt"), "later\n")
	if _, _, err := tr.Commit(ctx, "two", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "fork")
	os.MkdirAll(ws, 0o755)
	fork, err := gitsafe.OpenTracker(filepath.Join(t.TempDir(), "forkgit"), ws, "agentctl/fork")
	if err != nil {
		t.Fatal(err)
	}
	if err := fork.Seed(ctx, tr.Dir(), id); err != nil {
		t.Fatal(err)
	}
	if got := files(t, ws); !equalFiles(got, want) {
		t.Errorf("the fork's workspace = %v, want %v", got, want)
	}
	os.RemoveAll(tr.Dir())
	if tip, _ := fork.Tip(ctx); tip != id {
		t.Errorf("the fork's tip = %s, want %s", tip, id)
	}
	if ch, err := fork.Changes(ctx, id); err != nil || len(ch) != 0 {
		t.Errorf("the fork's workspace differs from %s: %v %v", id, ch, err)
	}
	w.write(filepath.Join(ws, "new.txt"), "n\n")
	if _, made, err := fork.Commit(ctx, "fork edit", nil, time.Now()); err != nil || !made {
		t.Errorf("commit in the fork: %v %v", made, err)
	}
}

// TestTrackerCommitPaths: staging only the named path records its change
// and its removal, and leaves other changes to the next full commit.
func TestTrackerCommitPaths(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	tr := w.tracker()
	first, _, err := tr.Commit(ctx, "one", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w.write(filepath.Join(w.ws, "a.txt"), "named\n")
	w.write(filepath.Join(w.ws, "other.txt"), "not named\n")
	second, made, err := tr.CommitPaths(ctx, []string{"a.txt"}, "a", nil, time.Now())
	if err != nil || !made {
		t.Fatal(made, err)
	}
	if ch, _ := tr.Diff(ctx, first, second); len(ch) != 1 || ch[0].Path != "a.txt" {
		t.Errorf("CommitPaths(a.txt) changed %v", ch)
	}
	os.Remove(filepath.Join(w.ws, "a.txt"))
	third, _, err := tr.CommitPaths(ctx, []string{"a.txt"}, "rm a", nil, time.Now())
	if ch, _ := tr.Diff(ctx, second, third); err != nil || len(ch) != 1 || ch[0] != (gitsafe.Change{Status: "D", Path: "a.txt"}) {
		t.Errorf("CommitPaths of a removed file: %v %v", ch, err)
	}
	fourth, _, _ := tr.Commit(ctx, "all", nil, time.Now())
	if ch, _ := tr.Diff(ctx, third, fourth); len(ch) != 1 || ch[0].Path != "other.txt" {
		t.Errorf("the full commit after it changed %v", ch)
	}
}

// TestTrackerReadOnlyDiff: a reader next to the live writer diffs the
// work tree without touching the writer's index or locks, and refuses a
// folder that is not as a Tracker writes it.
func TestTrackerReadOnlyDiff(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	tr := w.tracker()
	base, _, err := tr.Commit(ctx, "one", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w.write(filepath.Join(w.ws, "a.txt"), "after\n")
	w.write(filepath.Join(w.ws, "new.txt"), "new\n")
	os.WriteFile(filepath.Join(tr.Dir(), "index.lock"), nil, 0o600) // the writer is mid-command
	before, _ := os.ReadFile(filepath.Join(tr.Dir(), "index"))
	ro, err := gitsafe.OpenTrackerReadOnly(tr.Dir(), w.ws, "agentctl/s1")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ro.DiffWorkTree(ctx, base, 0, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+after", "+++ b/new.txt", "+new"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the diff lacks %q:\n%s", want, b.String())
		}
	}
	if after, _ := os.ReadFile(filepath.Join(tr.Dir(), "index")); !bytes.Equal(before, after) {
		t.Error("the reader changed the writer's index")
	}
	if _, err := os.Stat(filepath.Join(tr.Dir(), "index.lock")); err != nil {
		t.Error("the reader removed the writer's lock")
	}
	w.write(filepath.Join(tr.Dir(), "config"), "[core]\n\tfsmonitor = "+w.evil+"\n")
	var refused *gitsafe.RefusedError
	if _, err := gitsafe.OpenTrackerReadOnly(tr.Dir(), w.ws, "agentctl/s1"); !errors.As(err, &refused) {
		t.Errorf("read-only open of an armed folder: %v, want a refusal", err)
	}
}
