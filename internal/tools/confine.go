package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symlinks followed while resolving one path, as the
// kernel's own limit does (ELOOP).
const maxLinks = 40

// Confine resolves the path p inside the workspace root and returns the
// resolved absolute path.
//
// p is cleaned and joined under root; an absolute p is accepted only if it
// lies inside root. Symlinks are then resolved with filepath.EvalSymlinks.
// For a path that does not exist yet the nearest existing parent is resolved
// and the rest appended, and a dangling symlink on the way is followed to its
// target, so that a write through it cannot land outside. Anything that
// resolves outside root (itself resolved) is refused with an error wrapping
// ErrEscape that names p.
//
// Confine checks a path at one moment. The built-ins also do the I/O through
// an os.Root opened at the resolved root, so a component swapped for a
// symlink after the check still cannot lead outside.
func Confine(root, p string) (string, error) {
	_, resolved, err := confine(root, p)
	return resolved, err
}

// Resolve is Confine that returns the resolved path relative to the
// resolved workspace root, slash-separated ("." for the root): the name
// that rules about workspace paths (approvals) are matched against, the
// same one a file tool acts on.
func Resolve(root, p string) (string, error) {
	rroot, resolved, err := confine(root, p)
	if err != nil {
		return "", err
	}
	return relTo(rroot, resolved), nil
}

// confine is Confine that also returns the resolved root.
func confine(root, p string) (resolvedRoot, resolved string, err error) {
	if !filepath.IsAbs(root) {
		return "", "", fmt.Errorf("confine %s: workspace %q is not absolute", p, root)
	}
	root = filepath.Clean(root)
	rroot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", "", fmt.Errorf("confine %s: resolve workspace: %w", p, err)
	}
	escape := fmt.Errorf("%w: %s", ErrEscape, p)

	var joined string
	if filepath.IsAbs(p) {
		joined = filepath.Clean(p)
		if !within(root, joined) && !within(rroot, joined) {
			return "", "", escape
		}
	} else {
		joined = filepath.Join(rroot, p)
		if !within(rroot, joined) {
			return "", "", escape
		}
	}
	links := 0
	resolved, err = resolve(joined, &links)
	if err != nil {
		return "", "", fmt.Errorf("confine %s: %w", p, err)
	}
	if !within(rroot, resolved) {
		return "", "", escape
	}
	return rroot, resolved, nil
}

// resolve returns the clean absolute path p with every symlink resolved,
// whether or not p exists. Dangling symlinks are followed to their targets.
func resolve(p string, links *int) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	dir, base := filepath.Dir(p), filepath.Base(p)
	if dir == p {
		return p, nil
	}
	rdir, err := resolve(dir, links)
	if err != nil {
		return "", err
	}
	q := filepath.Join(rdir, base)
	fi, err := os.Lstat(q)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return q, nil
	case err != nil:
		return "", err
	case fi.Mode()&fs.ModeSymlink == 0:
		// Created since EvalSymlinks looked; rdir holds no symlinks.
		return q, nil
	}
	// A dangling symlink: follow it as open(2) with O_CREAT would.
	*links++
	if *links > maxLinks {
		return "", &fs.PathError{Op: "resolve", Path: q, Err: syscall.ELOOP}
	}
	target, err := os.Readlink(q)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(rdir, target)
	}
	return resolve(filepath.Clean(target), links)
}

// within reports whether the clean absolute path p is root or lies under it.
func within(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// relTo returns the resolved path p relative to the resolved root, as the
// slash-separated name os.Root and io/fs expect ("." for the root itself).
func relTo(rroot, p string) string {
	rel, err := filepath.Rel(rroot, p)
	if err != nil {
		// Unreachable: confine checked that p lies within rroot.
		return "."
	}
	return filepath.ToSlash(rel)
}
