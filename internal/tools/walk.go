package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// maxNotes caps the notes a walk adds to its output.
const maxNotes = 20

// walker walks a target for list_files and grep: in lexical order, without
// following symlinks, skipping .git, and leaving out hidden folders and
// files with a note instead of descending into them. Each directory is
// opened with the same check as target.open that the descriptor is the
// directory its path names, so a folder swapped for a link into the home
// mid-walk is not listed.
type walker struct {
	t     *target
	notes []string
	more  int // notes left out past maxNotes
}

// walk calls fn for the target and everything under it. fn gets the
// slash-separated workspace-relative name and the type bits; it returns
// fs.SkipDir to not descend into a directory, fs.SkipAll to stop, or
// another error to fail the walk. An unreadable directory below the
// target is left out; the walk stops with ctx's error when ctx is done.
func (w *walker) walk(ctx context.Context, fn func(name string, typ fs.FileMode) error) error {
	fi, err := w.t.root.Lstat(w.t.rel)
	if err != nil {
		return err
	}
	err = w.visit(ctx, w.t.rel, fi.Mode().Type(), fn, true)
	if errors.Is(err, fs.SkipAll) || errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

func (w *walker) visit(ctx context.Context, name string, typ fs.FileMode, fn func(string, fs.FileMode) error, top bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fn(name, typ); err != nil || !typ.IsDir() {
		return err
	}
	d, err := w.t.openDir(name)
	if err != nil {
		if top {
			return err
		}
		return nil
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil && top {
		return err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		child := path.Join(name, e.Name())
		if e.Name() == ".git" {
			continue
		}
		if w.t.hide.skip(child) {
			if e.IsDir() {
				child += "/"
			}
			w.note("hidden from the tools, left out: " + child)
			continue
		}
		err := w.visit(ctx, child, e.Type(), fn, false)
		if errors.Is(err, fs.SkipDir) {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// note records a line for the end of the output.
func (w *walker) note(s string) {
	if len(w.notes) == maxNotes {
		w.more++
		return
	}
	w.notes = append(w.notes, s)
}

// writeNotes appends the notes, sorted, one "[...]" line each.
func (w *walker) writeNotes(b *strings.Builder) {
	slices.Sort(w.notes)
	for _, n := range w.notes {
		fmt.Fprintf(b, "[%s]\n", n)
	}
	if w.more > 0 {
		fmt.Fprintf(b, "[... and %d more notes]\n", w.more)
	}
}
