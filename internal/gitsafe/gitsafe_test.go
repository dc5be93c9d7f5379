package gitsafe_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/gitsafe"
)

const (
	hiddenKey   = "HIDDEN-KEY-a1b2c3"   // in a folder next to the workspace
	hiddenOther = "HIDDEN-OTHER-d4e5f6" // committed in a repository next to it
)

// world is a workspace with a repository (a.txt and b.txt committed, a.txt
// then changed, c.txt untracked) and, outside it, what an attack reaches
// for: a hidden folder with a key, another repository, and evil.sh, which
// records each run in a marker file and passes its input through.
type world struct {
	t       testing.TB
	ws      string
	out     string // outside the workspace
	hidden  string // out/hidden, holding id_rsa
	other   string // out/other, a repository with secret.txt
	evil    string // out/evil.sh
	markers string // glob of the marker files evil.sh writes
}

func newWorld(t testing.TB) *world {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	w := &world{t: t, ws: filepath.Join(dir, "ws"), out: filepath.Join(dir, "out")}
	w.hidden = filepath.Join(w.out, "hidden")
	w.other = filepath.Join(w.out, "other")
	w.evil = filepath.Join(w.out, "evil.sh")
	w.markers = filepath.Join(w.out, "marker*")
	w.write(filepath.Join(w.hidden, "id_rsa"), hiddenKey+"\n")
	w.write(w.evil, "#!/bin/sh\necho \"$0 $*\" >> "+filepath.Join(w.out, "marker")+"\nexec cat \"$@\"\n")
	os.Chmod(w.evil, 0o755)
	w.write(filepath.Join(w.other, "secret.txt"), hiddenOther+"\n")
	w.git(w.other, "init", "-q")
	w.git(w.other, "add", ".")
	w.git(w.other, "commit", "-qm", "other")
	w.write(filepath.Join(w.ws, "a.txt"), "one\n")
	w.write(filepath.Join(w.ws, "b.txt"), "two\n")
	w.git(w.ws, "init", "-q")
	w.git(w.ws, "add", ".")
	w.git(w.ws, "commit", "-qm", "init")
	w.write(filepath.Join(w.ws, "a.txt"), "one changed\n")
	w.write(filepath.Join(w.ws, "c.txt"), "three\n")
	return w
}

func (w *world) write(p, body string) {
	w.t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// git runs the test's own git in dir, with an environment of its own.
func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.out, "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (w *world) config(kv ...string) {
	w.t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		w.git(w.ws, "config", kv[i], kv[i+1])
	}
}

func (w *world) ran() []string {
	m, _ := filepath.Glob(w.markers)
	return m
}

// naive is the diff agentctl made before this package, minus its few -c
// flags: plain git in the workspace, with agentctl's environment, as any
// tool that trusts a repository would run it. Each attack must show with
// it (its command runs, or outside content is in the diff), so that the
// attack is real and the test of the safe diff can fail.
func (w *world) naive() string {
	w.t.Helper()
	index := filepath.Join(w.t.TempDir(), "index")
	if b, err := os.ReadFile(filepath.Join(w.ws, ".git", "index")); err == nil {
		os.WriteFile(index, b, 0o600)
	}
	run := func(stdin string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", w.ws}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "HOME="+w.out, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
		cmd.Stdin = strings.NewReader(stdin)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	untracked := run("", "ls-files", "--others", "--exclude-standard", "-z")
	var out strings.Builder
	if untracked != "" && !strings.Contains(untracked, "fatal:") {
		out.WriteString(run(untracked, "add", "--intent-to-add", "--pathspec-from-file=-", "--pathspec-file-nul"))
	}
	out.WriteString(run("", "diff", "--binary", "HEAD", "--"))
	out.WriteString(run("", "status"))
	// An unchanged file is not checked out again: age it first.
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(w.ws, "b.txt"), old, old)
	out.WriteString(run("", "checkout-index", "-f", "--", "b.txt"))
	return out.String()
}

// safe is the diff through this package: Open, the root commit, and
// DiffWorkTree.
func (w *world) safe() (string, error) {
	r, err := gitsafe.Open(w.ws)
	if err != nil {
		return "", err
	}
	defer r.Close()
	r.Timeout = 20 * time.Second
	base := r.RootCommit(context.Background())
	if base == "" {
		return "", errors.New("no root commit")
	}
	var b bytes.Buffer
	err = r.DiffWorkTree(context.Background(), base, &b)
	return b.String(), err
}

// hooks are the names git runs hooks under (githooks(5)); post-index-change
// is the one an add -N triggers, and planting all of them covers any other.
var hooks = []string{"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
	"pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction",
	"push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman",
	"p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit", "post-index-change"}

// TestAttacks: one row per way a workspace's repository (or agentctl's
// environment) can make git run a command or read outside the workspace.
// Each row plants its attack, shows it works against plain git (the
// marker file appears or outside content is in the output), then makes
// the safe diff: the marker file must not exist and no outside content may
// be in the diff; the workspace's own change is in it, unless the row's
// layout is refused, with a message that says why.
func TestAttacks(t *testing.T) {
	rows := []struct {
		name    string
		plant   func(w *world)
		env     func(w *world) map[string]string // agentctl's own environment
		refused string                           // the refusal's text, "" when the diff is made
		quiet   bool                             // plain git itself refuses it: no control
	}{
		{name: "filter clean", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "* filter=pwn\n")
			w.config("filter.pwn.clean", w.evil, "filter.pwn.required", "true")
		}},
		{name: "filter smudge", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "* filter=pwn\n")
			w.config("filter.pwn.smudge", w.evil)
		}},
		{name: "filter process", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "* filter=pwn\n")
			w.config("filter.pwn.process", w.evil)
		}},
		{name: "textconv", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "*.txt diff=pwn\n")
			w.config("diff.pwn.textconv", w.evil)
		}},
		{name: "diff driver command", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "*.txt diff=pwn\n")
			w.config("diff.pwn.command", w.evil)
		}},
		{name: "diff.external", plant: func(w *world) { w.config("diff.external", w.evil) }},
		{name: "fsmonitor", plant: func(w *world) { w.config("core.fsmonitor", w.evil) }},
		{name: "hooks", plant: func(w *world) {
			for _, dir := range []string{filepath.Join(w.ws, ".git", "hooks"), filepath.Join(w.ws, "myhooks")} {
				for _, h := range hooks {
					w.write(filepath.Join(dir, h), "#!/bin/sh\necho "+h+" >> "+filepath.Join(w.out, "marker-"+h)+"\n")
					os.Chmod(filepath.Join(dir, h), 0o755)
				}
			}
			w.config("core.hooksPath", filepath.Join(w.ws, "myhooks"))
		}},
		{name: "core.worktree", plant: func(w *world) { w.config("core.worktree", w.hidden) }},
		{name: "core.sshCommand with a promisor remote", plant: func(w *world) {
			// A blob of the base is missing, so git would fetch it lazily.
			id := w.git(w.ws, "rev-parse", "HEAD:a.txt")
			os.Remove(filepath.Join(w.ws, ".git", "objects", id[:2], id[2:]))
			w.config("core.repositoryformatversion", "1", "extensions.partialClone", "origin",
				"remote.origin.url", "ssh://example.invalid/x", "remote.origin.promisor", "true",
				"core.sshCommand", w.evil)
		}, refused: "git diff"}, // the blob is missing, and nothing fetches it
		{name: "include.path", plant: func(w *world) {
			w.write(filepath.Join(w.out, "evil.cfg"), "[filter \"pwn\"]\n\tclean = "+w.evil+"\n")
			w.write(filepath.Join(w.ws, ".gitattributes"), "* filter=pwn\n")
			w.config("include.path", filepath.Join(w.out, "evil.cfg"))
		}},
		{name: "submodule with its own filter", plant: func(w *world) {
			sub := filepath.Join(w.ws, "sub")
			w.write(filepath.Join(sub, "s.txt"), "s\n")
			w.git(sub, "init", "-q")
			w.git(sub, "add", ".")
			w.git(sub, "commit", "-qm", "s")
			w.git(w.ws, "add", "sub")
			w.write(filepath.Join(sub, ".gitattributes"), "* filter=pwn\n")
			w.git(sub, "config", "filter.pwn.clean", w.evil)
			w.write(filepath.Join(sub, "s.txt"), "t\n")
		}},
		{name: "untracked nested repository with its own fsmonitor", plant: func(w *world) {
			sub := filepath.Join(w.ws, "nested")
			w.write(filepath.Join(sub, "s.txt"), "s\n")
			w.git(sub, "init", "-q")
			w.git(sub, "add", ".")
			w.git(sub, "commit", "-qm", "s")
			w.git(sub, "config", "core.fsmonitor", w.evil)
			w.write(filepath.Join(sub, "s.txt"), "t\n")
		}},
		{name: ".git as a file with gitdir: outside", plant: func(w *world) {
			os.RemoveAll(filepath.Join(w.ws, ".git"))
			w.write(filepath.Join(w.ws, ".git"), "gitdir: "+filepath.Join(w.other, ".git")+"\n")
		}, refused: "outside the workspace"},
		{name: ".git a symlink to a folder outside", plant: func(w *world) {
			os.RemoveAll(filepath.Join(w.ws, ".git"))
			os.Symlink(filepath.Join(w.other, ".git"), filepath.Join(w.ws, ".git"))
		}, refused: "outside the workspace"},
		{name: "commondir outside", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".git", "commondir"), filepath.Join(w.other, ".git")+"\n")
		}, refused: "outside the workspace"},
		{name: "alternates outside", plant: func(w *world) {
			os.RemoveAll(w.ws)
			w.git(w.out, "clone", "-q", "--shared", w.other, w.ws)
			w.write(filepath.Join(w.ws, "secret.txt"), "mine\n")
		}, refused: "outside the workspace"},
		{name: "symlinked .git/objects", plant: func(w *world) {
			os.RemoveAll(w.ws)
			w.git(w.out, "clone", "-q", "--no-local", w.other, w.ws)
			os.RemoveAll(filepath.Join(w.ws, ".git", "objects"))
			os.Symlink(filepath.Join(w.other, ".git", "objects"), filepath.Join(w.ws, ".git", "objects"))
			w.write(filepath.Join(w.ws, "secret.txt"), "mine\n")
		}, refused: "outside the workspace"},
		{name: "symlink inside .git/objects", plant: func(w *world) {
			os.RemoveAll(w.ws)
			w.git(w.out, "clone", "-q", "--no-local", w.other, w.ws)
			pack := filepath.Join(w.ws, ".git", "objects", "pack")
			os.RemoveAll(pack)
			w.git(w.other, "repack", "-qa")
			os.Symlink(filepath.Join(w.other, ".git", "objects", "pack"), pack)
			w.write(filepath.Join(w.ws, "secret.txt"), "mine\n")
		}, refused: "is a symlink"},
		{name: "index path with ..", plant: func(w *world) {
			rel, _ := filepath.Rel(w.ws, filepath.Join(w.hidden, "id_rsa"))
			writeIndex(w.t, filepath.Join(w.ws, ".git", "index"), rel)
		}, refused: `has the path "../out/hidden/id_rsa", which has a ".." component`},
		{name: "index path through a .git folder", plant: func(w *world) {
			os.MkdirAll(filepath.Join(w.ws, "sub", ".git"), 0o755)
			os.Symlink(w.hidden, filepath.Join(w.ws, "sub", ".git", "k"))
			writeIndex(w.t, filepath.Join(w.ws, ".git", "index"), "sub/.git/k/id_rsa")
		}, refused: "goes through a .git folder", quiet: true},
		{name: "tracked path through a symlinked folder", plant: func(w *world) {
			w.write(filepath.Join(w.ws, "d", "id_rsa"), "mine\n")
			w.git(w.ws, "add", "d")
			w.git(w.ws, "commit", "-qm", "d")
			os.RemoveAll(filepath.Join(w.ws, "d"))
			os.Symlink(w.hidden, filepath.Join(w.ws, "d"))
		}, quiet: true}, // git itself does not follow it
		{name: "HEAD naming a path outside", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".git", "HEAD"), "ref: refs/../../../out/other/.git/HEAD\n")
		}, refused: "not a ref name", quiet: true},
		{name: "refs a symlink to outside", plant: func(w *world) {
			refs := filepath.Join(w.ws, ".git", "refs")
			os.RemoveAll(refs)
			os.Remove(filepath.Join(w.ws, ".git", "packed-refs"))
			os.Symlink(filepath.Join(w.other, ".git", "refs"), refs)
		}, refused: "refs/heads/", quiet: true},
		{name: "GIT_DIR and GIT_WORK_TREE in agentctl's environment", env: func(w *world) map[string]string {
			return map[string]string{"GIT_DIR": filepath.Join(w.other, ".git"), "GIT_WORK_TREE": w.hidden}
		}},
		{name: "GIT_CONFIG_COUNT and GIT_EXTERNAL_DIFF in agentctl's environment", plant: func(w *world) {
			w.write(filepath.Join(w.ws, ".gitattributes"), "* filter=pwn\n")
		}, env: func(w *world) map[string]string {
			return map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "filter.pwn.clean",
				"GIT_CONFIG_VALUE_0": w.evil, "GIT_EXTERNAL_DIFF": w.evil}
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t)
			if row.plant != nil {
				row.plant(w)
			}
			if row.env != nil {
				for k, v := range row.env(w) {
					t.Setenv(k, v)
				}
			}
			// The attack is real: plain git runs it or shows outside content.
			out := w.naive()
			leaked := func(s string) bool { return strings.Contains(s, hiddenKey) || strings.Contains(s, hiddenOther) }
			if !row.quiet && len(w.ran()) == 0 && !leaked(out) {
				t.Fatalf("plain git neither ran the planted command nor showed outside content; the row tests nothing:\n%s", out)
			}
			for _, m := range w.ran() {
				os.Remove(m)
			}
			diff, err := w.safe()
			if m := w.ran(); len(m) > 0 {
				b, _ := os.ReadFile(m[0])
				t.Errorf("the planted command ran: %v: %s", m, b)
			}
			if leaked(diff) || (err != nil && leaked(err.Error())) {
				t.Errorf("outside content in the diff:\n%s\n(err %v)", diff, err)
			}
			if row.refused != "" {
				if err == nil || !strings.Contains(err.Error(), row.refused) {
					t.Errorf("err = %v, want one saying %q; diff:\n%s", err, row.refused, diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("safe diff: %v", err)
			}
			for _, s := range []string{"+one changed", "+three"} {
				if !strings.Contains(diff, s) {
					t.Errorf("the diff lacks the workspace's own change %q:\n%s", s, diff)
				}
			}
		})
	}
}

// writeIndex writes a version 2 index holding one entry, path, for the
// empty blob: an index no git command would write, as a hostile agent can.
func writeIndex(t testing.TB, file, path string) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(1))
	start := b.Len()
	b.Write(make([]byte, 24))                                     // ctime, mtime, dev, ino
	binary.Write(&b, binary.BigEndian, uint32(0o100644))          // mode
	b.Write(make([]byte, 12))                                     // uid, gid, size
	b.Write(hexID(t, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")) // the empty blob
	binary.Write(&b, binary.BigEndian, uint16(len(path)))
	b.WriteString(path)
	b.Write(make([]byte, 8-(b.Len()-start)%8))
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func hexID(t testing.TB, s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			if c >= 'a' {
				v |= byte(c-'a') + 10
			} else {
				v |= byte(c - '0')
			}
		}
		b[i] = v
	}
	return b
}

// TestHead: HEAD read without git, as git rev-parse HEAD reads it, for a
// branch (loose and packed), a detached HEAD, an unborn branch and a
// SHA-256 repository; anything that is not a ref name or an object id is
// refused, and so is a refs folder outside the workspace.
func TestHead(t *testing.T) {
	w := newWorld(t)
	id := w.git(w.ws, "rev-parse", "HEAD")
	check := func(name, want, wantErr string) {
		t.Helper()
		got, err := gitsafe.Head(w.ws)
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("%s: Head = %q, %v; want an error saying %q", name, got, err, wantErr)
			}
			return
		}
		if err != nil || got != want {
			t.Errorf("%s: Head = %q, %v; want %q", name, got, err, want)
		}
	}
	check("loose branch", id, "")
	w.git(w.ws, "pack-refs", "--all")
	check("packed branch", id, "")
	w.git(w.ws, "checkout", "-q", "--detach")
	check("detached", id, "")
	w.git(w.ws, "checkout", "-q", "--orphan", "fresh")
	check("unborn", "", "")
	head := filepath.Join(w.ws, ".git", "HEAD")
	for _, bad := range []string{"--output=/tmp/x\n", "ref: refs/heads/a..b\n", "ref: /etc/passwd\n", "ref: HEAD\n",
		"ref: refs/heads/x y\n", strings.ToUpper(id) + "\n", id[:39] + "\n"} {
		os.WriteFile(head, []byte(bad), 0o644)
		check(strings.TrimSpace(bad), "", "refused")
	}
	os.WriteFile(head, []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(w.ws, ".git", "refs", "heads", "main"), []byte("ref: refs/heads/main\n"), 0o644)
	check("a ref naming itself", "", "chain")
	os.Remove(filepath.Join(w.ws, ".git", "refs", "heads", "main"))
	os.RemoveAll(filepath.Join(w.ws, ".git", "refs"))
	os.Symlink(filepath.Join(w.other, ".git", "refs"), filepath.Join(w.ws, ".git", "refs"))
	check("refs outside", "", "refused")
	if _, err := gitsafe.Head(w.hidden); !errors.Is(err, gitsafe.ErrNoRepo) {
		t.Errorf("Head of a folder without .git: %v, want ErrNoRepo", err)
	}

	s := filepath.Join(t.TempDir(), "s")
	w.write(filepath.Join(s, "f"), "x\n")
	w.git(s, "init", "-q", "--object-format=sha256")
	w.git(s, "add", ".")
	w.git(s, "commit", "-qm", "s")
	id256 := w.git(s, "rev-parse", "HEAD")
	w.ws = s
	check("sha256", id256, "")
	w.write(filepath.Join(s, "f"), "y\n")
	if diff, err := w.safe(); err != nil || !strings.Contains(diff, "+y") {
		t.Errorf("sha256 diff = %s, %v", diff, err)
	}
}

// TestIDs: only full object ids reach git as revisions; a checkpoint's
// SHA from a home handed over could be anything.
func TestIDs(t *testing.T) {
	w := newWorld(t)
	r, err := gitsafe.Open(w.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if !r.HasCommit(ctx, r.Head()) || r.RootCommit(ctx) != r.Head() {
		t.Errorf("HasCommit(HEAD) = false or RootCommit %q != HEAD %q", r.RootCommit(ctx), r.Head())
	}
	out := filepath.Join(w.out, "written")
	for _, bad := range []string{"--output=" + out, "HEAD", "HEAD~0", r.Head()[:12], strings.Repeat("0", 40)} {
		if r.HasCommit(ctx, bad) {
			t.Errorf("HasCommit(%q) = true", bad)
		}
		if err := r.DiffWorkTree(ctx, bad, &bytes.Buffer{}); err == nil && bad != strings.Repeat("0", 40) {
			t.Errorf("DiffWorkTree(%q) made a diff", bad)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("an id written as an option made git write %s", out)
	}
}

// TestShallow: a shallow clone (CI checkouts are) diffs against its
// shallow root.
func TestShallow(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.other, "more.txt"), "more\n")
	w.git(w.other, "add", ".")
	w.git(w.other, "commit", "-qm", "more")
	s := filepath.Join(t.TempDir(), "s")
	w.git(w.out, "clone", "-q", "--depth=1", "file://"+w.other, s)
	w.write(filepath.Join(s, "more.txt"), "changed\n")
	w.ws = s
	diff, err := w.safe()
	if err != nil || !strings.Contains(diff, "+changed") {
		t.Errorf("shallow diff = %s, %v", diff, err)
	}
}

// TestIndexUntouched: the workspace's index and object folder are not
// written by a diff that marks untracked files intent-to-add.
func TestIndexUntouched(t *testing.T) {
	w := newWorld(t)
	index := filepath.Join(w.ws, ".git", "index")
	before, _ := os.ReadFile(index)
	objects := w.git(w.ws, "count-objects")
	if _, err := w.safe(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(index); !bytes.Equal(before, after) {
		t.Error("the workspace's index changed")
	}
	if got := w.git(w.ws, "count-objects"); got != objects {
		t.Errorf("count-objects %q, was %q: the diff wrote to the workspace's object folder", got, objects)
	}
	if s := w.git(w.ws, "status", "--porcelain", "--", "c.txt"); s != "?? c.txt" {
		t.Errorf("status c.txt = %q, want it untracked", s)
	}
}

// TestCap: past MaxOutput the diff is cut with a line that says so.
func TestCap(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.ws, "big.txt"), strings.Repeat("a line of text\n", 10000))
	r, err := gitsafe.Open(w.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.MaxOutput = 4096
	var b bytes.Buffer
	if err := r.DiffWorkTree(context.Background(), r.Head(), &b); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 4096+200 || !strings.Contains(b.String(), "cut here") {
		t.Errorf("diff of %d bytes, ends %q", b.Len(), b.String()[max(0, b.Len()-100):])
	}
}

// BenchmarkUntracked: Open and DiffWorkTree of a workspace with 2,000
// untracked files (one git ls-files, one git add -N, one git diff).
func BenchmarkUntracked(b *testing.B) {
	w := newWorld(b)
	for i := range 2000 {
		w.write(filepath.Join(w.ws, "new", strconv.Itoa(i%10), "f"+strconv.Itoa(i)+".go"), "package main // file "+strconv.Itoa(i)+"\n")
	}
	for b.Loop() {
		diff, err := w.safe()
		if err != nil || strings.Count(diff, "new file mode") != 2001 {
			b.Fatalf("%d new files, %v", strings.Count(diff, "new file mode"), err)
		}
	}
}

// TestPathspecNames: untracked files are added by name, not as pathspecs:
// one named ":(exclude)c.txt" does not keep c.txt out of the diff, and
// one named "*" does not stand for every file.
func TestPathspecNames(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.ws, ":(exclude)c.txt"), "magic\n")
	w.write(filepath.Join(w.ws, "*"), "star\n")
	diff, err := w.safe()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"+++ b/c.txt", "+++ b/:(exclude)c.txt", "+++ b/*", "+three", "+magic", "+star"} {
		if !strings.Contains(diff, s) {
			t.Errorf("the diff lacks %q:\n%s", s, diff)
		}
	}
}
