package gitsafe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoRepo is returned by Open and Head when the workspace has no .git.
var ErrNoRepo = errors.New("gitsafe: the workspace is not a git repository (no .git)")

// RefusedError says why a workspace's repository was not handed to git:
// following it would read outside the workspace, or it is not something
// this package can check.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "refused: " + e.Reason + "; git was not run" }

func refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// layout is where a workspace's repository lives, every path checked to
// resolve inside the workspace.
type layout struct {
	ws     string   // the workspace, absolute, symlinks resolved
	root   *os.Root // ws; Go reads go through it and cannot leave it
	gitDir string   // the git folder, relative to ws ("." for ws itself)
	common string   // the common git folder (a linked worktree's main one), relative to ws
}

// maxSmall caps files read whole that are a line or so in git (HEAD, a
// loose ref, .git as a file, commondir).
const maxSmall = 4 << 10

// locate finds ws's git folder: .git as a folder, a symlink to one, or a
// file saying "gitdir: <path>", and a commondir file in it. Each must
// resolve inside ws.
func locate(ws string) (*layout, error) {
	abs, err := filepath.Abs(ws)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: workspace: %w", err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("gitsafe: workspace: %w", err)
	}
	l := &layout{ws: real, root: root}
	ok := false
	defer func() {
		if !ok {
			root.Close()
		}
	}()
	fi, err := root.Lstat(".git")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoRepo
	}
	if err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	switch {
	case fi.IsDir():
		l.gitDir = ".git"
	case fi.Mode()&fs.ModeSymlink != 0:
		if l.gitDir, err = l.inside(filepath.Join(real, ".git"), ".git (a symlink)"); err != nil {
			return nil, err
		}
	case fi.Mode().IsRegular():
		b, err := l.readSmall(".git")
		if err != nil {
			return nil, err
		}
		p, found := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
		if !found || p == "" || strings.ContainsAny(p, "\n\x00") {
			return nil, refuse(".git is a file that does not say \"gitdir: <path>\"")
		}
		what := ".git's gitdir: " + p
		if !filepath.IsAbs(p) {
			p = filepath.Join(real, p)
		}
		if l.gitDir, err = l.inside(p, what); err != nil {
			return nil, err
		}
	default:
		return nil, refuse(".git is neither a folder, a symlink nor a file (%v)", fi.Mode().Type())
	}
	if fi, err := l.root.Stat(l.gitDir); err != nil || !fi.IsDir() {
		return nil, refuse("the git folder %s is not a folder", l.show(l.gitDir))
	}
	l.common = l.gitDir
	if b, err := l.readSmall(filepath.Join(l.gitDir, "commondir")); err == nil {
		p := strings.TrimRight(string(b), "\r\n")
		if p == "" || strings.ContainsAny(p, "\n\x00") {
			return nil, refuse("%s is not one path", l.show(filepath.Join(l.gitDir, "commondir")))
		}
		what := l.show(filepath.Join(l.gitDir, "commondir")) + "'s " + p
		if !filepath.IsAbs(p) {
			p = filepath.Join(real, l.gitDir, p)
		}
		if l.common, err = l.inside(p, what); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ok = true
	return l, nil
}

// inside resolves p's symlinks and returns it relative to the workspace,
// or refuses (naming what as what pointed there) when it is outside or
// does not exist.
func (l *layout) inside(p, what string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", refuse("%s does not resolve: %v", what, err)
	}
	rel, err := filepath.Rel(l.ws, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", refuse("%s leads to %s, outside the workspace %s", what, real, l.ws)
	}
	return rel, nil
}

// show is a workspace-relative path as a message shows it.
func (l *layout) show(rel string) string { return filepath.ToSlash(rel) }

// readSmall reads a regular file of at most maxSmall bytes inside the
// workspace.
func (l *layout) readSmall(rel string) ([]byte, error) {
	return l.read(rel, maxSmall)
}

// read reads a regular file of at most max bytes inside the workspace.
// Not-exist errors are returned as they are (errors.Is fs.ErrNotExist);
// anything else that is wrong is a refusal.
func (l *layout) read(rel string, max int64) ([]byte, error) {
	f, err := l.root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, refuse("%s: %v", l.show(rel), err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gitsafe: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, refuse("%s is not a regular file", l.show(rel))
	}
	if fi.Size() > max {
		return nil, refuse("%s is %d bytes, more than the %d this package reads", l.show(rel), fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("gitsafe: %s: %w", l.show(rel), err)
	}
	if int64(len(b)) > max {
		return nil, refuse("%s grew past %d bytes while read", l.show(rel), max)
	}
	return b, nil
}

// maxRefDepth bounds a chain of symbolic refs, as git's own limit does.
const maxRefDepth = 5

// head resolves HEAD to an object id, "" when the branch it names has no
// commit yet.
func (l *layout) head() (string, error) {
	b, err := l.readSmall(filepath.Join(l.gitDir, "HEAD"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", refuse("%s has no HEAD", l.show(l.gitDir))
		}
		return "", err
	}
	v := strings.TrimRight(string(b), "\r\n")
	for range maxRefDepth {
		name, sym := strings.CutPrefix(v, "ref: ")
		if !sym {
			if !ValidID(v) {
				return "", refuse("HEAD resolves to %.80q, which is not an object id", v)
			}
			return v, nil
		}
		if !validRef(name) {
			return "", refuse("HEAD names %.80q, which is not a ref name", name)
		}
		if v, err = l.ref(name); err != nil || v == "" {
			return "", err
		}
	}
	return "", refuse("HEAD is a chain of more than %d symbolic refs", maxRefDepth)
}

// ref reads a ref's value: its loose file's content, else its id in
// packed-refs, else "" (the ref does not exist).
func (l *layout) ref(name string) (string, error) {
	dir := l.common
	for _, p := range []string{"refs/worktree/", "refs/bisect/", "refs/rewritten/"} {
		if strings.HasPrefix(name, p) {
			dir = l.gitDir // per-worktree refs
		}
	}
	b, err := l.readSmall(filepath.Join(dir, filepath.FromSlash(name)))
	if err == nil {
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	var re *RefusedError
	if errors.As(err, &re) {
		// A folder where a ref file would be (refs/heads/main/x exists
		// and refs/heads/main does not, as a file): no such loose ref.
		if fi, serr := l.root.Stat(filepath.Join(dir, filepath.FromSlash(name))); serr != nil || !fi.IsDir() {
			return "", err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	f, err := l.root.Open(filepath.Join(l.common, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", refuse("packed-refs: %v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", refuse("packed-refs is not a regular file")
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 4096)
	want := []byte(" " + name)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		if id, ok := bytes.CutSuffix(line, want); ok {
			if !ValidID(string(id)) {
				return "", refuse("packed-refs gives %s as %.80q, which is not an object id", name, id)
			}
			return string(id), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", refuse("packed-refs: %v", err)
	}
	return "", nil
}

// ValidID reports whether s is a full object id as git writes it: 40
// (SHA-1) or 64 (SHA-256) lower-case hex digits. Only such strings are
// ever passed to git as revisions, so none can be read as an option.
func ValidID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validRef reports whether name is a ref name git would accept under
// refs/ (git check-ref-format's rules), so that it is also a path that
// stays inside the git folder.
func validRef(name string) bool {
	if !strings.HasPrefix(name, "refs/") || len(name) > 1024 || strings.Contains(name, "..") ||
		strings.Contains(name, "@{") || strings.HasSuffix(name, ".") {
		return false
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if comp == "" || comp[0] == '.' || strings.HasSuffix(comp, ".lock") {
			return false
		}
	}
	return true
}

// maxAltDepth is git's own limit on alternates naming alternates.
const maxAltDepth = 5

// checkObjects checks the object folder rel (relative to the workspace,
// resolved) and, recursively, every folder its info/alternates names: each
// must resolve inside the workspace, and nothing under it may be a symlink
// or other than a file or a folder. seen holds the folders checked.
func (l *layout) checkObjects(rel string, depth int, seen map[string]bool) error {
	if depth > maxAltDepth {
		return refuse("alternates nest deeper than %d", maxAltDepth)
	}
	if seen[rel] {
		return nil
	}
	seen[rel] = true
	err := filepath.WalkDir(filepath.Join(l.ws, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return refuse("the object folder %s: %v", l.show(rel), err)
		}
		if t := d.Type(); t&fs.ModeSymlink != 0 {
			return refuse("%s is a symlink; git never makes one in an object folder", p)
		} else if !t.IsDir() && !t.IsRegular() {
			return refuse("%s is a %v, not a file", p, t)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b, err := l.read(filepath.Join(rel, "info", "alternates"), 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			return refuse("%s/info/alternates has a quoted path, which this package does not read", l.show(rel))
		}
		p := line
		if !filepath.IsAbs(p) {
			p = filepath.Join(l.ws, rel, p)
		}
		alt, err := l.inside(p, l.show(rel)+"/info/alternates' "+line)
		if err != nil {
			return err
		}
		if err := l.checkObjects(alt, depth+1, seen); err != nil {
			return err
		}
	}
	return nil
}

// shallow returns the common git folder's shallow file when it exists and
// every line is an object id, nil when there is none.
func (l *layout) shallow() ([]byte, error) {
	b, err := l.read(filepath.Join(l.common, "shallow"), 64<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if !ValidID(line) {
			return nil, refuse("shallow has %.80q, which is not an object id", line)
		}
	}
	return b, nil
}

// Head returns the id of the commit HEAD names in the workspace ws, ""
// when HEAD names a branch with no commit yet, by reading HEAD, the loose
// ref and packed-refs in Go; git is not run. It fails with ErrNoRepo when
// ws has no .git, and with a *RefusedError when the git folder resolves
// outside ws or what it holds is not a valid ref or id. A repository
// whose refs are in a reftable has no loose or packed ref, so its HEAD
// reads as "".
func Head(ws string) (string, error) {
	l, err := locate(ws)
	if err != nil {
		return "", err
	}
	defer l.root.Close()
	return l.head()
}
