// Package vfs is the filesystem seam of agentctl's writers: the session log
// (recorder), the history's Parquet files and MANIFEST (history) and the
// debug bundle (bundle) make every change to disk through an FS, so that a
// test can fail any one of those operations (Inject) or see what a power cut
// at any point would leave (CrashFS).
//
// The pattern is pebble's vfs, errorfs and crash-clone MemFS, cut down to
// what agentctl's writers use. OS is the real filesystem: its files are
// *os.File, so production pays one interface call per operation and
// nothing else.
//
// New files that replace old ones go through WriteFileAtomicFS (bytes in
// hand) or an AtomicFile (streamed): temp file beside the path, write,
// fsync, close, rename, fsync of the folder. SyncDir and WriteFileAtomic
// are the same on the real filesystem, for callers without an FS.
//
// Readers stay on package os (and the recorder's raw reads): a read cannot
// make a log or a history inconsistent, the fast replay path reads with
// raw syscalls, and a crash-clone is a real directory, so the real readers
// are what check it.
package vfs

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FS is what agentctl's writers do to a filesystem. Paths are OS paths.
type FS interface {
	// OpenFile is os.OpenFile.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Lstat is os.Lstat (a writer's existence checks).
	Lstat(name string) (fs.FileInfo, error)
	// Mkdir and MkdirAll are os.Mkdir and os.MkdirAll.
	Mkdir(name string, perm fs.FileMode) error
	MkdirAll(name string, perm fs.FileMode) error
	// Rename, Link, Remove and RemoveAll are their os namesakes.
	Rename(oldpath, newpath string) error
	Link(oldname, newname string) error
	Remove(name string) error
	RemoveAll(name string) error
	// SyncDir fsyncs the directory name, which makes the entries made or
	// removed in it (create, rename, link, remove) durable.
	SyncDir(name string) error
}

// File is an open file of an FS. *os.File is one.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	Name() string
	Stat() (fs.FileInfo, error)
	Sync() error
	Truncate(size int64) error
	// Fd is the OS descriptor, for hints such as sync_file_range; a File
	// of a test FS passes on its real file's.
	Fd() uintptr
}

// OS is the real filesystem.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File in a File would not be nil
	}
	return f, nil
}
func (osFS) Lstat(name string) (fs.FileInfo, error)       { return os.Lstat(name) }
func (osFS) Mkdir(name string, perm fs.FileMode) error    { return os.Mkdir(name, perm) }
func (osFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Link(oldname, newname string) error           { return os.Link(oldname, newname) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Or returns fsys, or OS if it is nil: the default of an options struct.
func Or(fsys FS) FS {
	if fsys == nil {
		return OS
	}
	return fsys
}

// Create is os.Create on fsys.
func Create(fsys FS, name string) (File, error) {
	return fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// CreateTemp is os.CreateTemp on fsys: a new file in dir whose name is
// pattern with its last "*" (or its end) replaced by a random string.
func CreateTemp(fsys FS, dir, pattern string) (File, error) {
	return createTemp(fsys, dir, pattern, 0o600)
}

// createTemp is CreateTemp with the file made with perm (before the umask).
func createTemp(fsys FS, dir, pattern string, perm fs.FileMode) (File, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	prefix, suffix := splitPattern(pattern)
	for range 1000 {
		name := filepath.Join(dir, prefix+random()+suffix)
		f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, pattern), Err: fs.ErrExist}
}

// MkdirTemp is os.MkdirTemp on fsys.
func MkdirTemp(fsys FS, dir, pattern string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	prefix, suffix := splitPattern(pattern)
	for range 1000 {
		name := filepath.Join(dir, prefix+random()+suffix)
		err := fsys.Mkdir(name, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", &fs.PathError{Op: "mkdirtemp", Path: filepath.Join(dir, pattern), Err: fs.ErrExist}
}

// MkdirAllSynced makes dir and its missing parents like MkdirAll, and then
// fsyncs the parent of every folder it made and the parent of dir, so that
// dir is still there after a power cut. (MkdirAll alone leaves a new
// folder's entry in its parent unsynced: a log created in a fresh home could
// lose its whole folder.)
func MkdirAllSynced(fsys FS, dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	var made []string // the folders that do not exist yet, deepest first
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fsys.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsys.MkdirAll(dir, perm); err != nil {
		return err
	}
	sync := map[string]bool{filepath.Dir(dir): true}
	for _, d := range made {
		sync[filepath.Dir(d)] = true
	}
	// Top down: a folder's entry is durable before the entries in it.
	return syncTopDown(fsys, sync)
}

// syncTopDown fsyncs the folders of set, shortest path first.
func syncTopDown(fsys FS, set map[string]bool) error {
	dirs := make([]string, 0, len(set))
	for d := range set {
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	for _, d := range dirs {
		if err := fsys.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func splitPattern(pattern string) (prefix, suffix string) {
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		return pattern[:i], pattern[i+1:]
	}
	return pattern, ""
}

func random() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
