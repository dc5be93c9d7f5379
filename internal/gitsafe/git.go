package gitsafe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Repo is a workspace's repository opened for git through a private git
// folder (see the package doc). Close removes the folder.
type Repo struct {
	l       *layout
	head    string // HEAD's commit id, "" when unborn
	hashLen int    // 20 or 32 once known, else 0
	tmp     string // private: git/ is GIT_DIR, home/ is HOME
	gitDir  string // tmp/git
	objects string // the workspace's object folder, absolute, checked
	shallow []byte

	// Timeout bounds each git command; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput caps what DiffWorkTree writes; 0 means DefaultMaxOutput.
	MaxOutput int64
}

// DefaultTimeout bounds one git command. The whole diff of a workspace
// with 2,000 untracked files takes 0.18 s here (BenchmarkUntracked); a
// workspace whose git takes minutes is not worth holding a bundle for.
const DefaultTimeout = 5 * time.Minute

// DefaultMaxOutput caps a diff: past it the diff ends with a line saying
// it was cut (the workspace archive has every file anyway).
const DefaultMaxOutput = 256 << 20

// maxUntracked caps the NUL-separated names of untracked files, about
// four million of them.
const maxUntracked = 256 << 20

// maxIndex caps the index read into memory: 1 GiB is an index of about
// ten million paths.
const maxIndex = 1 << 30

// Open checks the repository of the workspace ws and builds the private
// git folder that git will use instead of the workspace's own. It fails
// with ErrNoRepo when ws has no .git and with a *RefusedError when the
// repository leads outside ws (a gitdir: link, commondir, alternates or a
// symlink in the object folder) or holds what is not a ref or an object
// id where one must be.
func Open(ws string) (*Repo, error) {
	l, err := locate(ws)
	if err != nil {
		return nil, err
	}
	r := &Repo{l: l}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	if r.head, err = l.head(); err != nil {
		return nil, err
	}
	objects, err := l.inside(filepath.Join(l.ws, l.common, "objects"), "the object folder "+l.show(filepath.Join(l.common, "objects")))
	if err != nil {
		return nil, err
	}
	if err := l.checkObjects(objects, 0, map[string]bool{}); err != nil {
		return nil, err
	}
	r.objects = filepath.Join(l.ws, objects)
	if strings.ContainsAny(r.objects, "\n\r") {
		return nil, refuse("the object folder's path %q has a line break, which an alternates file cannot hold", r.objects)
	}
	if r.shallow, err = l.shallow(); err != nil {
		return nil, err
	}
	if r.tmp, err = os.MkdirTemp("", "agentctl-git-*"); err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	r.gitDir = filepath.Join(r.tmp, "git")
	for _, d := range []string{"home", "git/refs", "git/objects/info"} {
		if err := os.MkdirAll(filepath.Join(r.tmp, d), 0o700); err != nil {
			return nil, fmt.Errorf("gitsafe: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(r.gitDir, "objects", "info", "alternates"), []byte(r.objects+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	if r.shallow != nil {
		if err := os.WriteFile(filepath.Join(r.gitDir, "shallow"), r.shallow, 0o600); err != nil {
			return nil, fmt.Errorf("gitsafe: %w", err)
		}
	}
	head := "ref: refs/heads/unborn\n"
	if r.head != "" {
		head = r.head + "\n"
	}
	if err := os.WriteFile(filepath.Join(r.gitDir, "HEAD"), []byte(head), 0o600); err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	if r.head != "" {
		if err := r.setFormat(r.head); err != nil {
			return nil, err
		}
	}
	ok = true
	return r, nil
}

// Close removes the private git folder.
func (r *Repo) Close() error {
	r.l.root.Close()
	if r.tmp == "" {
		return nil
	}
	return os.RemoveAll(r.tmp)
}

// Head is the id of the workspace's HEAD commit, "" when it has none.
func (r *Repo) Head() string { return r.head }

// setFormat writes the private config for the object format of id (its
// length says which) the first time, and refuses an id of the other
// format after that.
func (r *Repo) setFormat(id string) error {
	n := len(id) / 2
	if r.hashLen != 0 {
		if n != r.hashLen {
			return fmt.Errorf("gitsafe: %s is not an id of this repository's object format", id)
		}
		return nil
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
	if n == 32 {
		config = "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n\tobjectformat = sha256\n"
	}
	if err := os.WriteFile(filepath.Join(r.gitDir, "config"), []byte(config), 0o600); err != nil {
		return fmt.Errorf("gitsafe: %w", err)
	}
	r.hashLen = n
	return nil
}

// HasCommit reports whether id is a full object id of a commit in the
// repository.
func (r *Repo) HasCommit(ctx context.Context, id string) bool {
	if !ValidID(id) || r.setFormat(id) != nil {
		return false
	}
	return r.run(ctx, nil, io.Discard, "cat-file", "-e", id+"^{commit}") == nil
}

// RootCommit is the first commit of HEAD's history (the last one
// `git rev-list --max-parents=0 HEAD` prints), "" when there is none.
func (r *Repo) RootCommit(ctx context.Context) string {
	if r.head == "" {
		return ""
	}
	var out bytes.Buffer
	if r.run(ctx, nil, &capWriter{w: &out, n: 1 << 20}, "rev-list", "--max-parents=0", r.head) != nil {
		return ""
	}
	f := strings.Fields(out.String())
	if len(f) == 0 || !ValidID(f[len(f)-1]) {
		return ""
	}
	return f[len(f)-1]
}

// DiffWorkTree writes `git diff --binary base` of the work tree to w,
// files that are untracked and not ignored included as new files: they are
// marked intent-to-add in the private copy of the index (the workspace's
// own index is never written), so one git diff covers them all. Untracked
// nested repositories are left out, and submodules are ignored. Past
// MaxOutput bytes the diff is cut with a line saying so.
func (r *Repo) DiffWorkTree(ctx context.Context, base string, w io.Writer) error {
	if !ValidID(base) {
		return fmt.Errorf("gitsafe: diff base %.80q is not an object id", base)
	}
	if err := r.setFormat(base); err != nil {
		return err
	}
	index := filepath.Join(r.gitDir, "index")
	os.Remove(index)
	b, err := r.l.read(filepath.Join(r.l.gitDir, "index"), maxIndex)
	if err == nil {
		if b, err = cleanIndex(b, r.hashLen); err != nil {
			return err
		}
		if err := os.WriteFile(index, b, 0o600); err != nil {
			return fmt.Errorf("gitsafe: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	files, err := untrackedFiles(ctx, r.run, "--exclude-standard")
	if err != nil {
		return err
	}
	if files.Len() > 0 {
		if err := r.run(ctx, files, io.Discard, "add", "--intent-to-add", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
	}
	max := r.MaxOutput
	if max <= 0 {
		max = DefaultMaxOutput
	}
	err = r.run(ctx, nil, &capWriter{w: w, n: max}, "diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all", "--no-color", "--binary", base, "--")
	if errors.Is(err, errCut) {
		_, err = fmt.Fprintf(w, "\n# [the diff is cut here: it is longer than %d bytes]\n", max)
	}
	return err
}

// configArgs hold in this git and in any git it starts (they travel in
// GIT_CONFIG_PARAMETERS): nothing runs a hook or an fsmonitor, reads an
// attributes or excludes file outside the tree, recurses into a submodule
// or trusts an untracked cache. The private config names no filter,
// textconv or diff driver, so the ones a .gitattributes names do not exist.
var configArgs = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.attributesFile=/dev/null",
	"-c", "core.excludesFile=/dev/null",
	"-c", "core.untrackedCache=false",
	"-c", "core.splitIndex=false",
	"-c", "core.sshCommand=false",
	"-c", "core.pager=cat",
	"-c", "core.quotepath=off",
	"-c", "diff.external=",
	"-c", "diff.ignoreSubmodules=all",
	"-c", "submodule.recurse=false",
	"-c", "protocol.allow=never",
	"-c", "color.ui=false",
}

// env is the whole environment of git: nothing of the caller's but PATH.
func (r *Repo) env() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(r.tmp, "home"),
		"LC_ALL=C",
		"GIT_DIR=" + r.gitDir,
		"GIT_WORK_TREE=" + r.l.ws,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_PROTOCOL_FROM_USER=0",
		"GIT_LITERAL_PATHSPECS=1", // an untracked file named "*" or ":(top)" is just a name
	}
}

// run runs git with args in the private git folder's environment.
func (r *Repo) run(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) error {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, configArgs...), args...)...)
	cmd.Env = r.env()
	cmd.Dir = r.tmp
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &capWriter{w: &stderr, n: 16 << 10, quiet: true}
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if cw, ok := stdout.(*capWriter); ok && cw.cut {
		return fmt.Errorf("git %s: %w", args[0], errCut) // stopped by the cap on purpose
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("git %s: timed out after %v", args[0], timeout)
		}
		return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// errCut stops git's output once a capWriter is full.
var errCut = errors.New("output cap reached")

// capWriter passes the first n bytes to w and then fails, which closes
// git's pipe and stops it; a quiet one drops the rest instead.
type capWriter struct {
	w     io.Writer
	n     int64
	quiet bool
	cut   bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > c.n {
		k, _ := c.w.Write(p[:c.n])
		c.n, c.cut = 0, true
		if c.quiet {
			return len(p), nil
		}
		return k, errCut
	}
	k, err := c.w.Write(p)
	c.n -= int64(k)
	return k, err
}

// untrackedFiles lists the work tree's untracked files as NUL-terminated
// names for `git add --pathspec-from-file=- --pathspec-file-nul`, through
// run (a Repo's or a Tracker's git), with the ls-files options given. A
// name ending in / is a nested repository and is left out: adding it
// would read its HEAD, wherever its .git leads.
func untrackedFiles(ctx context.Context, run func(context.Context, io.Reader, io.Writer, ...string) error, opts ...string) (*bytes.Buffer, error) {
	var untracked bytes.Buffer
	args := append([]string{"ls-files", "--others"}, opts...)
	if err := run(ctx, nil, &capWriter{w: &untracked, n: maxUntracked}, append(args, "-z")...); err != nil {
		if errors.Is(err, errCut) {
			return nil, fmt.Errorf("gitsafe: the names of the untracked files take more than %d bytes", maxUntracked)
		}
		return nil, err
	}
	var files bytes.Buffer
	for name := range bytes.SplitSeq(untracked.Bytes(), []byte{0}) {
		if len(name) > 0 && name[len(name)-1] != '/' {
			files.Write(name)
			files.WriteByte(0)
		}
	}
	return &files, nil
}
