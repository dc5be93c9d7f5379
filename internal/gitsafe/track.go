package gitsafe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Tracker records a workspace as git history in a git folder that
// agentctl owns and keeps OUTSIDE the workspace (the runner puts it at
// sessions/<id>/git). Nothing of the workspace's own .git is read or
// written: git never tracks a path named .git, so an agent that arms
// .git/config or hooks, or replaces .git with a symlink, changes nothing
// git sees, and it cannot rewrite the recorded history because it cannot
// reach the folder. The workspace is only the work tree.
//
// What the workspace still holds for git is neutralised like Repo's:
// hooks, fsmonitor and every config outside the private folder are off;
// the private info/attributes unsets text, eol, filter, ident and
// working-tree-encoding for every path, overriding any .gitattributes in
// the tree, so a file's bytes are committed as they are; .gitignore files
// in the tree are not read (untracked files are listed without exclude
// rules and added with --force), so an agent cannot hide a file from the
// record by ignoring it. An untracked folder holding its own repository
// (a nested .git) is left out, as Repo's diff leaves it out: adding it
// would read that repository, wherever its .git leads.
//
// A Tracker's methods must not be called concurrently, and only one
// Tracker may write a folder at a time (the session's lease ensures it).
type Tracker struct {
	dir    string // the private git folder, absolute
	ws     string // the work tree, absolute, symlinks resolved
	branch string // refs/heads/<branch>

	// The branch's tip and its tree once looked up: this Tracker is the
	// only writer, so they change only through its own commits.
	tip, tipTree string
	known        bool

	extra []string // more environment for every git command

	// Timeout bounds each git command; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Commit is one commit of a Tracker's branch, as Log reports it.
type Commit struct {
	SHA      string            `json:"sha"`
	Subject  string            `json:"subject"`
	Trailers map[string]string `json:"trailers,omitempty"`
}

// Change is a path that differs between two states of the workspace:
// Status is A (added), M (modified), D (deleted) or T (type changed).
type Change struct {
	Status string `json:"status"`
	Path   string `json:"path"`
}

// Identity is the author and committer of every Tracker commit.
const (
	IdentityName  = "agentctl"
	IdentityEmail = "agentctl@localhost"
)

// trackAttributes overrides every .gitattributes of the tree (the private
// info/attributes has the highest precedence): no conversion, filter or
// keyword expansion touches a file's bytes on add or checkout.
const trackAttributes = "* -text -eol -filter -ident -working-tree-encoding -export-subst\n"

// OpenTracker opens (creating it when missing) the private git folder dir
// for the work tree ws, on the branch named branch. dir must not be
// inside ws. A lock file left by a git that was killed (index.lock, a
// ref's .lock) is removed: the caller holds the session's lease, so no
// other git can be writing.
func OpenTracker(dir, ws, branch string) (*Tracker, error) {
	if !validRef("refs/heads/" + branch) {
		return nil, fmt.Errorf("gitsafe: %q is not a branch name", branch)
	}
	absWS, err := filepath.Abs(ws)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	realWS, err := filepath.EvalSymlinks(absWS)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: workspace: %w", err)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	if err := os.MkdirAll(absDir, 0o700); err != nil {
		return nil, fmt.Errorf("gitsafe: create the git folder: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(absDir)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: git folder: %w", err)
	}
	if rel, err := filepath.Rel(realWS, realDir); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return nil, fmt.Errorf("gitsafe: the git folder %s is inside the workspace %s, where the agent could write it; put it outside", realDir, realWS)
	}
	t := &Tracker{dir: realDir, ws: realWS, branch: branch}
	if _, err := os.Stat(filepath.Join(realDir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if err := t.init(); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	for _, lock := range []string{"index.lock", "HEAD.lock", filepath.Join("refs", "heads", filepath.FromSlash(branch)+".lock")} {
		os.Remove(filepath.Join(realDir, lock))
	}
	if err := t.harden(); err != nil {
		return nil, err
	}
	return t, nil
}

// trackConfig is the whole config of a Tracker's folder.
const trackConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"

// harden rewrites what in the private folder could make git run a
// program or read elsewhere, each time it is opened: a home handed over
// from elsewhere (a CI artifact) is not trusted, its git folders
// included. The config and info/attributes are written anew, and
// alternates, commondir and gitdir files are removed; hooks never run
// (core.hooksPath=/dev/null on every command).
func (t *Tracker) harden() error {
	if err := os.MkdirAll(filepath.Join(t.dir, "info"), 0o700); err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(t.dir, "home"), 0o700); err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	for name, body := range map[string]string{"config": trackConfig, filepath.Join("info", "attributes"): trackAttributes} {
		p := filepath.Join(t.dir, name)
		os.Remove(p) // a symlink planted there is replaced, not followed
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			return fmt.Errorf("gitsafe: %w", err)
		}
	}
	for _, name := range []string{filepath.Join("objects", "info", "alternates"), "commondir", "gitdir", filepath.Join("info", "grafts"), "shallow"} {
		if err := os.Remove(filepath.Join(t.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("gitsafe: %w", err)
		}
	}
	return nil
}

// Seed starts a new Tracker's branch at commit id of another Tracker's
// folder, from (a fork of a session at the event that recorded id), and
// writes id's files into the work tree, which must be empty. The objects
// are copied (through a temporary alternate and git repack), so the new
// history does not depend on the other folder staying.
func (t *Tracker) Seed(ctx context.Context, from, id string) error {
	if !ValidID(id) {
		return fmt.Errorf("gitsafe: %.80q is not an object id", id)
	}
	if ents, err := os.ReadDir(t.ws); err != nil || len(ents) > 0 {
		return fmt.Errorf("gitsafe: seed %s: the work tree %s is not an empty folder", short(id), t.ws)
	}
	src, err := filepath.Abs(filepath.Join(from, "objects"))
	if err != nil || strings.ContainsAny(src, "\n\r") {
		return fmt.Errorf("gitsafe: seed from %s: bad object folder", from)
	}
	alt := filepath.Join(t.dir, "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(alt), 0o700); err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	if err := os.WriteFile(alt, []byte(src+"\n"), 0o600); err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	defer os.Remove(alt)
	if !t.HasCommit(ctx, id) {
		return fmt.Errorf("gitsafe: seed: %s is not a commit of %s", short(id), from)
	}
	t.known = false
	if err := t.run(ctx, nil, io.Discard, "update-ref", "-m", "agentctl seed", "refs/heads/"+t.branch, id); err != nil {
		return err
	}
	if err := t.run(ctx, nil, io.Discard, "repack", "-a", "-d", "-q"); err != nil {
		return err
	}
	if err := os.Remove(alt); err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	if !t.HasCommit(ctx, id) {
		return fmt.Errorf("gitsafe: seed: the copy of %s is incomplete", short(id))
	}
	if err := t.run(ctx, nil, io.Discard, "read-tree", "--end-of-options", id); err != nil {
		return err
	}
	return t.run(ctx, nil, io.Discard, "checkout-index", "--all", "--force", "-u")
}

func short(id string) string { return id[:min(len(id), 12)] }

// OpenTrackerReadOnly opens an existing Tracker folder for a reader that
// may run next to the live writer (a bundle of a running session):
// nothing in it is removed or rewritten, so a folder whose config or
// attributes are not the ones a Tracker writes, or that names an
// alternate, commondir or gitdir, is refused instead of repaired. Use
// only DiffWorkTree, Diff, Log, Tip and HasCommit on it.
func OpenTrackerReadOnly(dir, ws, branch string) (*Tracker, error) {
	if !validRef("refs/heads/" + branch) {
		return nil, fmt.Errorf("gitsafe: %q is not a branch name", branch)
	}
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: workspace: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: git folder: %w", err)
	}
	if realWS, err = filepath.Abs(realWS); err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	if realDir, err = filepath.Abs(realDir); err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	for name, want := range map[string]string{"config": trackConfig, filepath.Join("info", "attributes"): trackAttributes} {
		fi, err := os.Lstat(filepath.Join(realDir, name))
		if err != nil || !fi.Mode().IsRegular() {
			return nil, refuse("the run's git folder %s: %s is missing or not a file", realDir, name)
		}
		if b, err := os.ReadFile(filepath.Join(realDir, name)); err != nil || string(b) != want {
			return nil, refuse("the run's git folder %s: %s is not the one agentctl writes", realDir, name)
		}
	}
	for _, name := range []string{filepath.Join("objects", "info", "alternates"), "commondir", "gitdir", filepath.Join("info", "grafts")} {
		if _, err := os.Lstat(filepath.Join(realDir, name)); err == nil {
			return nil, refuse("the run's git folder %s has %s, which agentctl never writes", realDir, name)
		}
	}
	return &Tracker{dir: realDir, ws: realWS, branch: branch}, nil
}

// DiffWorkTree writes `git diff --binary base` of the work tree as it is
// now, every file included (as Commit stages it), to w, cut past max
// bytes with a line saying so. It stages into a copy of the private
// index, so it can run next to the live writer; the blobs it writes go to
// the private object folder, where concurrent writes are safe.
func (t *Tracker) DiffWorkTree(ctx context.Context, base string, max int64, w io.Writer) error {
	if !ValidID(base) {
		return fmt.Errorf("gitsafe: diff base %.80q is not an object id", base)
	}
	tmp, err := os.MkdirTemp("", "agentctl-diff-*")
	if err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	if b, err := os.ReadFile(filepath.Join(t.dir, "index")); err == nil {
		if err := os.WriteFile(index, b, 0o600); err != nil {
			return fmt.Errorf("gitsafe: %w", err)
		}
	}
	other := *t
	other.extra = []string{"GIT_INDEX_FILE=" + index}
	tree, err := other.stage(ctx)
	if err != nil {
		return err
	}
	if max <= 0 {
		max = DefaultMaxOutput
	}
	err = other.run(ctx, nil, &capWriter{w: w, n: max}, "diff-tree", "-p", "-r", "--binary", "--no-ext-diff", "--no-textconv", "--no-color", "--end-of-options", base, tree)
	if errors.Is(err, errCut) {
		_, err = fmt.Fprintf(w, "\n# [the diff is cut here: it is longer than %d bytes]\n", max)
	}
	return err
}

// init creates the private folder: git init without templates (no sample
// hooks), HEAD on the branch; harden then writes config and attributes.
func (t *Tracker) init() error {
	if err := os.MkdirAll(filepath.Join(t.dir, "home"), 0o700); err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	return t.run(context.Background(), nil, io.Discard, "init", "-q", "--template=", "--initial-branch="+t.branch)
}

// Dir is the private git folder.
func (t *Tracker) Dir() string { return t.dir }

// Branch is the branch the Tracker commits to.
func (t *Tracker) Branch() string { return t.branch }

// Tip is the branch's last commit, "" before the first.
func (t *Tracker) Tip(ctx context.Context) (string, error) {
	var out bytes.Buffer
	err := t.run(ctx, nil, &capWriter{w: &out, n: 1 << 10}, "for-each-ref", "--format=%(objectname)", "refs/heads/"+t.branch)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(out.String())
	if id != "" && !ValidID(id) {
		return "", fmt.Errorf("gitsafe: branch %s points at %.80q", t.branch, id)
	}
	return id, nil
}

// stage makes the private index hold the work tree as it is now (every
// file, ignore rules of the tree not applied, nested repositories left
// out) and returns the id of its tree.
func (t *Tracker) stage(ctx context.Context) (string, error) {
	if err := t.run(ctx, nil, io.Discard, "add", "--update", "--force"); err != nil {
		return "", err
	}
	files, err := untrackedFiles(ctx, t.run)
	if err != nil {
		return "", err
	}
	if files.Len() > 0 {
		if err := t.run(ctx, files, io.Discard, "add", "--force", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return "", err
		}
	}
	return t.writeTree(ctx)
}

// writeTree writes the private index as a tree and returns its id.
func (t *Tracker) writeTree(ctx context.Context) (string, error) {
	var out bytes.Buffer
	if err := t.run(ctx, nil, &capWriter{w: &out, n: 1 << 10}, "write-tree"); err != nil {
		return "", err
	}
	tree := strings.TrimSpace(out.String())
	if !ValidID(tree) {
		return "", fmt.Errorf("gitsafe: write-tree printed %.80q", tree)
	}
	return tree, nil
}

// Commit records the work tree as a commit on the branch when it differs
// from the tip (or there is no tip yet: the first commit is made even for
// an empty work tree, so a run always has a base), and returns the tip
// afterwards and whether a commit was made. The message is subject, a
// blank line and the trailers ("Key: value" lines, sorted by key); when
// is the author and committer date, so the same work tree, message and
// time give the same id.
func (t *Tracker) Commit(ctx context.Context, subject string, trailers map[string]string, when time.Time) (string, bool, error) {
	return t.commit(ctx, t.stage, subject, trailers, when)
}

// CommitPaths is Commit when the caller knows the only paths that can
// have changed (a built-in file tool's one file): only they are staged,
// which spares a scan of the whole work tree. Should staging them fail (a
// path inside a nested repository), the whole work tree is staged.
func (t *Tracker) CommitPaths(ctx context.Context, paths []string, subject string, trailers map[string]string, when time.Time) (string, bool, error) {
	stage := func(ctx context.Context) (string, error) {
		var list bytes.Buffer
		for _, p := range paths {
			if p == "" || strings.ContainsRune(p, 0) {
				return t.stage(ctx)
			}
			list.WriteString(p)
			list.WriteByte(0)
		}
		if err := t.run(ctx, &list, io.Discard, "add", "--all", "--force", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return t.stage(ctx)
		}
		return t.writeTree(ctx)
	}
	return t.commit(ctx, stage, subject, trailers, when)
}

// head is the branch's tip and its tree, looked up once.
func (t *Tracker) head(ctx context.Context) (string, string, error) {
	if t.known {
		return t.tip, t.tipTree, nil
	}
	tip, err := t.Tip(ctx)
	if err != nil {
		return "", "", err
	}
	tree := ""
	if tip != "" {
		var out bytes.Buffer
		if err := t.run(ctx, nil, &capWriter{w: &out, n: 1 << 10}, "rev-parse", "--verify", "--end-of-options", tip+"^{tree}"); err != nil {
			return "", "", err
		}
		tree = strings.TrimSpace(out.String())
	}
	t.tip, t.tipTree, t.known = tip, tree, true
	return tip, tree, nil
}

func (t *Tracker) commit(ctx context.Context, stage func(context.Context) (string, error), subject string, trailers map[string]string, when time.Time) (string, bool, error) {
	tip, tipTree, err := t.head(ctx)
	if err != nil {
		return "", false, err
	}
	tree, err := stage(ctx)
	if err != nil {
		return "", false, err
	}
	if tip != "" && tree == tipTree {
		return tip, false, nil
	}
	msg := strings.TrimSpace(strings.ReplaceAll(subject, "\n", " ")) + "\n"
	if len(trailers) > 0 {
		keys := make([]string, 0, len(trailers))
		for k := range trailers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		msg += "\n"
		for _, k := range keys {
			msg += k + ": " + strings.ReplaceAll(trailers[k], "\n", " ") + "\n"
		}
	}
	args := []string{"commit-tree", tree}
	if tip != "" {
		args = append(args, "-p", tip)
	}
	var out bytes.Buffer
	date := fmt.Sprintf("%d +0000", when.Unix())
	if err := t.runEnv(ctx, []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, strings.NewReader(msg), &capWriter{w: &out, n: 1 << 10}, args...); err != nil {
		return "", false, err
	}
	id := strings.TrimSpace(out.String())
	if !ValidID(id) {
		return "", false, fmt.Errorf("gitsafe: commit-tree printed %.80q", id)
	}
	// The old value makes the update fail if someone moved the branch.
	old := tip
	if old == "" {
		old = strings.Repeat("0", len(id))
	}
	if err := t.run(ctx, nil, io.Discard, "update-ref", "-m", "agentctl", "refs/heads/"+t.branch, id, old); err != nil {
		t.known = false
		return "", false, err
	}
	t.tip, t.tipTree, t.known = id, tree, true
	return id, true, nil
}

// Changes lists the paths in which the work tree differs from commit id,
// sorted. It stages the work tree in the private index, which a Commit
// does anyway.
func (t *Tracker) Changes(ctx context.Context, id string) ([]Change, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("gitsafe: %.80q is not an object id", id)
	}
	tree, err := t.stage(ctx)
	if err != nil {
		return nil, err
	}
	return t.Diff(ctx, id, tree)
}

// Diff lists the paths that differ between two commits or trees.
func (t *Tracker) Diff(ctx context.Context, from, to string) ([]Change, error) {
	if !ValidID(from) || !ValidID(to) {
		return nil, fmt.Errorf("gitsafe: diff of %.80q and %.80q: not object ids", from, to)
	}
	var out bytes.Buffer
	if err := t.run(ctx, nil, &capWriter{w: &out, n: maxUntracked}, "diff-tree", "-r", "-z", "--no-renames", "--name-status", "--end-of-options", from, to); err != nil {
		return nil, err
	}
	f := strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00")
	var changes []Change
	for i := 0; i+1 < len(f); i += 2 {
		changes = append(changes, Change{Status: f[i], Path: f[i+1]})
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

// HasCommit reports whether id is a commit of the private repository.
func (t *Tracker) HasCommit(ctx context.Context, id string) bool {
	return ValidID(id) && t.run(ctx, nil, io.Discard, "cat-file", "-e", id+"^{commit}") == nil
}

// Log lists the branch's commits, newest first, at most max of them.
func (t *Tracker) Log(ctx context.Context, max int) ([]Commit, error) {
	tip, err := t.Tip(ctx)
	if err != nil || tip == "" {
		return nil, err
	}
	var out bytes.Buffer
	if err := t.run(ctx, nil, &capWriter{w: &out, n: 64 << 20}, "log", fmt.Sprintf("--max-count=%d", max),
		"--format=%H%x00%s%x00%(trailers:only,unfold)%x00", "--end-of-options", tip); err != nil {
		return nil, err
	}
	f := strings.Split(out.String(), "\x00")
	var log []Commit
	for i := 0; i+2 < len(f); i += 3 {
		c := Commit{SHA: strings.TrimSpace(f[i]), Subject: f[i+1], Trailers: map[string]string{}}
		for line := range strings.SplitSeq(f[i+2], "\n") {
			if k, v, ok := strings.Cut(line, ": "); ok {
				c.Trailers[k] = v
			}
		}
		log = append(log, c)
	}
	return log, nil
}

// Export writes the files of commit id into dst, which must be an empty
// or missing folder outside the private git folder: a fork's workspace.
// Paths come from trees this package committed (git refuses .git and ..
// components when it adds them); symlinks are written as symlinks.
func (t *Tracker) Export(ctx context.Context, id, dst string) error {
	if !ValidID(id) {
		return fmt.Errorf("gitsafe: %.80q is not an object id", id)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	if ents, err := os.ReadDir(dst); err != nil || len(ents) > 0 {
		return fmt.Errorf("gitsafe: export %s: %s is not an empty folder", id, dst)
	}
	absDst, err := filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	tmp, err := os.MkdirTemp("", "agentctl-export-*")
	if err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	defer os.RemoveAll(tmp)
	other := *t
	other.ws = absDst
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if err := other.runEnv(ctx, env, nil, io.Discard, "read-tree", "--end-of-options", id); err != nil {
		return err
	}
	return other.runEnv(ctx, env, nil, io.Discard, "checkout-index", "--all", "--force")
}

// Restore makes the work tree hold exactly commit id: files the commit
// has are written back, files it lacks are removed (nested repositories
// and .git are left alone). Resume uses it only when the user asks to
// drop what differs.
func (t *Tracker) Restore(ctx context.Context, id string) error {
	changes, err := t.Changes(ctx, id)
	if err != nil {
		return err
	}
	if err := t.run(ctx, nil, io.Discard, "read-tree", "--end-of-options", id); err != nil {
		return err
	}
	for _, c := range changes {
		if c.Status == "A" { // in the work tree, not in the commit
			if err := os.Remove(filepath.Join(t.ws, filepath.FromSlash(c.Path))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("gitsafe: restore %s: %w", id, err)
			}
		}
	}
	return t.run(ctx, nil, io.Discard, "checkout-index", "--all", "--force")
}

// env is the whole environment of git for the Tracker: like Repo's, with
// the private folder as GIT_DIR and a fixed identity.
func (t *Tracker) env() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(t.dir, "home"),
		"LC_ALL=C",
		"GIT_DIR=" + t.dir,
		"GIT_WORK_TREE=" + t.ws,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_PROTOCOL_FROM_USER=0",
		"GIT_LITERAL_PATHSPECS=1",
		"GIT_AUTHOR_NAME=" + IdentityName, "GIT_AUTHOR_EMAIL=" + IdentityEmail,
		"GIT_COMMITTER_NAME=" + IdentityName, "GIT_COMMITTER_EMAIL=" + IdentityEmail,
	}
}

func (t *Tracker) run(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) error {
	return t.runEnv(ctx, nil, stdin, stdout, args...)
}

// runEnv runs git with args, the Tracker's environment plus extra.
func (t *Tracker) runEnv(ctx context.Context, extra []string, stdin io.Reader, stdout io.Writer, args ...string) error {
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, configArgs...), args...)...)
	cmd.Env = append(append(t.env(), t.extra...), extra...)
	cmd.Dir = t.dir
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &capWriter{w: &stderr, n: 16 << 10, quiet: true}
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if cw, ok := stdout.(*capWriter); ok && cw.cut {
		return fmt.Errorf("git %s: %w", args[0], errCut)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("git %s: timed out after %v", args[0], timeout)
		}
		return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// ValidRef reports whether name is a ref name git accepts and this
// package writes (refs/heads/..., no .., no control characters).
func ValidRef(name string) bool { return validRef(name) }

// RunBranch is the branch agentctl tracks session id's workspace on, in
// the session's git folder: what the runner writes and bundle reads.
func RunBranch(id string) string {
	b := "agentctl/" + id
	if !ValidRef("refs/heads/" + b) {
		return "agentctl/run"
	}
	return b
}
