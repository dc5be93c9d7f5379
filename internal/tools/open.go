package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/agentctl/agentctl/internal/vfs"
)

// MaxFileSize is the largest file read_file, edit_file and grep read: 16
// MiB. read_file and edit_file refuse a bigger one with ErrTooBig; grep
// skips it with a note. A file that grows past it while being read is
// refused the same way: reads are capped, not only checked by size first.
const MaxFileSize = 16 << 20

// target is one path argument of a file tool after it was confined,
// resolved and checked against the hide list, with the os.Root that all of
// the call's I/O goes through.
type target struct {
	arg   string   // as the model wrote it
	root  *os.Root // opened at rroot
	rroot string   // the resolved workspace root
	rel   string   // resolved, slash-separated, relative to rroot ("." for the root)
	hide  hidden
}

// resolveTarget confines the path argument p of call, refuses it when it
// resolves into a hidden path, asks call.Gate about the resolved relative
// path, and opens the Root. The caller closes the target.
func resolveTarget(call Call, p string) (*target, error) {
	rroot, resolved, err := confine(call.Workspace, p)
	if err != nil {
		return nil, err
	}
	hide := hiddenFor(call, rroot)
	if err := hide.check(p, resolved); err != nil {
		return nil, err
	}
	rel := relTo(rroot, resolved)
	if call.Gate != nil {
		if err := call.Gate(rel); err != nil {
			return nil, err
		}
	}
	root, err := os.OpenRoot(rroot)
	if err != nil {
		return nil, err
	}
	return &target{arg: p, root: root, rroot: rroot, rel: rel, hide: hide}, nil
}

func (t *target) Close() error { return t.root.Close() }

// abs is the absolute path of the slash-separated relative name.
func (t *target) abs(name string) string {
	return filepath.Join(t.rroot, filepath.FromSlash(name))
}

// open opens the relative name for op ("read", "write", "edit", "grep")
// with flag, refusing anything but a regular file, and, when limit > 0, a
// file over limit bytes.
//
// The file's type is checked with lstat before it is opened, so a device
// is never opened (opening some has effects), and the open itself uses
// O_NONBLOCK and O_NOCTTY, so a named pipe swapped in after the check does
// not block the harness and a terminal does not become its controlling
// one; fstat then checks the type again. O_CREATE opens with O_EXCL, so a
// symlink planted at a new name is not followed. Last, the path the kernel
// reports for the open descriptor must be the resolved path: a component
// swapped for a symlink after the path was resolved (into a hidden folder,
// say) is refused with ErrChanged, whatever the Root allowed.
func (t *target) open(op, name string, flag int, limit int64) (*os.File, fs.FileInfo, error) {
	before, err := t.root.Lstat(name)
	switch {
	case err == nil:
		if err := regular(op, name, before, limit); err != nil {
			return nil, nil, err
		}
		flag &^= os.O_CREATE
	case errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0:
		flag |= os.O_EXCL
	default:
		return nil, nil, err
	}
	f, err := t.root.OpenFile(name, flag|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENXIO) {
			// Created or made a pipe since the lstat.
			return nil, nil, changed(op, name)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = regular(op, name, fi, limit)
	}
	if err == nil && before != nil && !os.SameFile(before, fi) {
		err = changed(op, name)
	}
	if err == nil {
		err = openedAt(f, fi, t.abs(name), op, name)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// openDir opens the relative directory name for a walk, with the same
// check as open that the descriptor is the directory the path names.
func (t *target) openDir(name string) (*os.File, error) {
	f, err := t.root.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.IsDir() {
		err = changed("list", name)
	}
	if err == nil {
		err = openedAt(f, fi, t.abs(name), "list", name)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openedAt checks that the open file f is the one at the absolute path
// want, by the path /proc gives for its descriptor. Where /proc cannot be
// read it falls back to comparing f with an lstat of want.
func openedAt(f *os.File, fi fs.FileInfo, want, op, name string) error {
	var got string
	var rerr error
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if err := sc.Control(func(fd uintptr) {
		got, rerr = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
	}); err != nil {
		return err
	}
	if rerr == nil {
		if got != want {
			return changed(op, name)
		}
		return nil
	}
	now, err := os.Lstat(want)
	if err != nil || !os.SameFile(now, fi) {
		return changed(op, name)
	}
	return nil
}

// regular refuses fi unless it is a regular file of at most limit bytes
// (limit 0: any size).
func regular(op, name string, fi fs.FileInfo, limit int64) error {
	m := fi.Mode()
	if m.IsDir() {
		hint := ""
		if op == "read" {
			hint = " (use list_files)"
		}
		return &fileError{op: op, path: name, msg: "is a directory" + hint, kind: ErrNotRegular}
	}
	if !m.IsRegular() {
		return &fileError{op: op, path: name, kind: ErrNotRegular,
			msg: fmt.Sprintf("not a regular file (%s); the file tools read and write regular files only", vfs.Kind(m))}
	}
	if limit > 0 && fi.Size() > limit {
		return tooBig(op, name, fi.Size())
	}
	return nil
}

func tooBig(op, name string, size int64) error {
	what := "the file is " + humanSize(size)
	if size < 0 {
		what = "the file grew"
	}
	return &fileError{op: op, path: name, kind: ErrTooBig,
		msg: fmt.Sprintf("%s, over the read limit of %s; read a part of it with bash (head -c, tail -c, sed -n) where bash is offered", what, humanSize(MaxFileSize))}
}

func changed(op, name string) error {
	return &fileError{op: op, path: name, kind: ErrChanged,
		msg: "the path changed while the tool opened it (a file or folder on it was replaced); nothing was done, try again"}
}

// humanSize writes a byte count with one decimal in the largest binary
// unit that keeps it at least 1.
func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// readAll reads f whole, up to MaxFileSize: a file that grew past the
// limit since its size was checked is refused, not read on. The read stops
// with ctx.
func readAll(ctx context.Context, f *os.File, op, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, f}, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, name, err)
	}
	if len(data) > MaxFileSize {
		return nil, tooBig(op, name, -1)
	}
	return data, nil
}

// ctxReader is a reader that fails with ctx's error once ctx is done, so a
// long read stops between chunks.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
