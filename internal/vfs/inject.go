package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// OpKind is a kind of filesystem operation.
type OpKind int

// The operations an Injector sees. Reads are counted too: a writer that
// reads its own file back (OpenWriter's check, a copy) must fail cleanly
// when that read fails.
const (
	OpOpen     OpKind = iota // OpenFile of an existing file
	OpCreate                 // OpenFile with O_CREATE
	OpRead                   // File.Read, File.ReadAt
	OpWrite                  // File.Write, File.WriteAt
	OpSync                   // File.Sync
	OpTruncate               // File.Truncate
	OpClose                  // File.Close
	OpStat                   // FS.Lstat, File.Stat
	OpMkdir                  // FS.Mkdir, FS.MkdirAll
	OpRename                 // FS.Rename
	OpLink                   // FS.Link
	OpRemove                 // FS.Remove, FS.RemoveAll
	OpSyncDir                // FS.SyncDir
)

var opNames = [...]string{"open", "create", "read", "write", "sync", "truncate", "close", "stat", "mkdir", "rename", "link", "remove", "syncdir"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return fmt.Sprintf("op%d", int(k))
}

// Op is one operation: its kind and the path it is on (for rename and
// link, the new path is Path2).
type Op struct {
	Kind  OpKind
	Path  string
	Path2 string
}

func (o Op) String() string {
	if o.Path2 != "" {
		return fmt.Sprintf("%s %s %s", o.Kind, o.Path, o.Path2)
	}
	return fmt.Sprintf("%s %s", o.Kind, o.Path)
}

// Mode is what an Injector does at the operation it fails.
type Mode int

const (
	// ModeError fails the operation, which does nothing (a write writes
	// nothing); later operations succeed.
	ModeError Mode = iota
	// ModeShort is ModeError, except that a write writes the first half of
	// its bytes before it fails (a short write: ENOSPC, EIO mid-way).
	ModeShort
	// ModeCrash fails the operation and every later one: the process is
	// dead from there on. Clone a CrashFS below to see what survives.
	ModeCrash
)

func (m Mode) String() string {
	switch m {
	case ModeError:
		return "error"
	case ModeShort:
		return "short"
	case ModeCrash:
		return "crash"
	}
	return fmt.Sprintf("mode%d", int(m))
}

// ErrInjected is matched (errors.Is) by every error an Injector makes.
var ErrInjected = errors.New("injected fault")

// Fault is the error of an injected failure, wrapped in an *fs.PathError
// or *os.LinkError that names the operation and its path.
type Fault struct {
	Index int // the operation's index, counting from 0
	Mode  Mode
}

func (f *Fault) Error() string {
	if f.Mode == ModeCrash {
		return fmt.Sprintf("injected crash at operation %d", f.Index)
	}
	return fmt.Sprintf("injected fault at operation %d", f.Index)
}

// Is makes a Fault match ErrInjected.
func (f *Fault) Is(target error) bool { return target == ErrInjected }

// Injector counts the operations of an FS made by Inject and fails the one
// with index At (counting from 0) as Mode says. At < 0 fails nothing: a run
// with it counts the operations a sweep must cover. It is safe for
// concurrent use.
type Injector struct {
	At   int
	Mode Mode

	mu     sync.Mutex
	n      int
	ops    []Op
	fired  *Op
	failed []Op
}

// Count returns the number of operations seen.
func (in *Injector) Count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.n
}

// Ops returns the operations seen, in order.
func (in *Injector) Ops() []Op {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Op(nil), in.ops...)
}

// Failed returns the operations that were failed: the one at At, and
// after a crash every later one.
func (in *Injector) Failed() []Op {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Op(nil), in.failed...)
}

// Fired returns the operation that was failed, if one was.
func (in *Injector) Fired() (Op, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.fired == nil {
		return Op{}, false
	}
	return *in.fired, true
}

// check counts op and returns the fault to inject, or nil.
func (in *Injector) check(op Op) *Fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	i := in.n
	in.n++
	in.ops = append(in.ops, op)
	if in.At < 0 {
		return nil
	}
	if i == in.At || (in.Mode == ModeCrash && i > in.At) {
		if in.fired == nil {
			in.fired = &op
		}
		in.failed = append(in.failed, op)
		return &Fault{Index: i, Mode: in.Mode}
	}
	return nil
}

// Inject returns an FS that does what base does, except that every
// operation is first counted by in, which may fail it.
func Inject(base FS, in *Injector) FS { return &injectFS{base: base, in: in} }

type injectFS struct {
	base FS
	in   *Injector
}

func pathErr(op Op, f *Fault) error {
	return &fs.PathError{Op: op.Kind.String(), Path: op.Path, Err: f}
}

func (x *injectFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	op := Op{Kind: OpOpen, Path: name}
	if flag&os.O_CREATE != 0 {
		op.Kind = OpCreate
	}
	if f := x.in.check(op); f != nil {
		return nil, pathErr(op, f)
	}
	file, err := x.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &injectFile{File: file, in: x.in}, nil
}

func (x *injectFS) Lstat(name string) (fs.FileInfo, error) {
	op := Op{Kind: OpStat, Path: name}
	if f := x.in.check(op); f != nil {
		return nil, pathErr(op, f)
	}
	return x.base.Lstat(name)
}

func (x *injectFS) Mkdir(name string, perm fs.FileMode) error {
	op := Op{Kind: OpMkdir, Path: name}
	if f := x.in.check(op); f != nil {
		return pathErr(op, f)
	}
	return x.base.Mkdir(name, perm)
}

func (x *injectFS) MkdirAll(name string, perm fs.FileMode) error {
	op := Op{Kind: OpMkdir, Path: name}
	if f := x.in.check(op); f != nil {
		return pathErr(op, f)
	}
	return x.base.MkdirAll(name, perm)
}

func (x *injectFS) Rename(oldpath, newpath string) error {
	op := Op{Kind: OpRename, Path: oldpath, Path2: newpath}
	if f := x.in.check(op); f != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: f}
	}
	return x.base.Rename(oldpath, newpath)
}

func (x *injectFS) Link(oldname, newname string) error {
	op := Op{Kind: OpLink, Path: oldname, Path2: newname}
	if f := x.in.check(op); f != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: f}
	}
	return x.base.Link(oldname, newname)
}

func (x *injectFS) Remove(name string) error {
	op := Op{Kind: OpRemove, Path: name}
	if f := x.in.check(op); f != nil {
		return pathErr(op, f)
	}
	return x.base.Remove(name)
}

func (x *injectFS) RemoveAll(name string) error {
	op := Op{Kind: OpRemove, Path: name}
	if f := x.in.check(op); f != nil {
		return pathErr(op, f)
	}
	return x.base.RemoveAll(name)
}

func (x *injectFS) SyncDir(name string) error {
	op := Op{Kind: OpSyncDir, Path: name}
	if f := x.in.check(op); f != nil {
		return pathErr(op, f)
	}
	return x.base.SyncDir(name)
}

type injectFile struct {
	File
	in *Injector
}

func (f *injectFile) op(k OpKind) Op { return Op{Kind: k, Path: f.File.Name()} }

func (f *injectFile) Read(p []byte) (int, error) {
	op := f.op(OpRead)
	if ft := f.in.check(op); ft != nil {
		return 0, pathErr(op, ft)
	}
	return f.File.Read(p)
}

func (f *injectFile) ReadAt(p []byte, off int64) (int, error) {
	op := f.op(OpRead)
	if ft := f.in.check(op); ft != nil {
		return 0, pathErr(op, ft)
	}
	return f.File.ReadAt(p, off)
}

func (f *injectFile) Write(p []byte) (int, error) {
	op := f.op(OpWrite)
	if ft := f.in.check(op); ft != nil {
		n := 0
		if ft.Mode == ModeShort {
			n, _ = f.File.Write(p[:len(p)/2])
		}
		return n, pathErr(op, ft)
	}
	return f.File.Write(p)
}

func (f *injectFile) WriteAt(p []byte, off int64) (int, error) {
	op := f.op(OpWrite)
	if ft := f.in.check(op); ft != nil {
		n := 0
		if ft.Mode == ModeShort {
			n, _ = f.File.WriteAt(p[:len(p)/2], off)
		}
		return n, pathErr(op, ft)
	}
	return f.File.WriteAt(p, off)
}

func (f *injectFile) Sync() error {
	op := f.op(OpSync)
	if ft := f.in.check(op); ft != nil {
		return pathErr(op, ft)
	}
	return f.File.Sync()
}

func (f *injectFile) Truncate(size int64) error {
	op := f.op(OpTruncate)
	if ft := f.in.check(op); ft != nil {
		return pathErr(op, ft)
	}
	return f.File.Truncate(size)
}

func (f *injectFile) Stat() (fs.FileInfo, error) {
	op := f.op(OpStat)
	if ft := f.in.check(op); ft != nil {
		return nil, pathErr(op, ft)
	}
	return f.File.Stat()
}

// Close of a failed close still closes the real file (as a close that
// fails on a real filesystem has still released the descriptor), so a
// sweep leaks no descriptors.
func (f *injectFile) Close() error {
	op := f.op(OpClose)
	if ft := f.in.check(op); ft != nil {
		f.File.Close()
		return pathErr(op, ft)
	}
	return f.File.Close()
}
