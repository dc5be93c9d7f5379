package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// SyncDir fsyncs the folder dir on the real filesystem: OS.SyncDir, for
// writers that do not go through an FS.
func SyncDir(dir string) error { return OS.SyncDir(dir) }

// WriteFileAtomic replaces path on the real filesystem with a file holding
// data: see WriteFileAtomicFS.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return WriteFileAtomicFS(OS, path, data, perm, false)
}

// WriteFileAtomicFS replaces path on fsys with a file holding data and
// mode perm (before the umask), through an AtomicFile: a temp file beside
// path is written, fsync'd, closed, renamed over path, and the folder
// fsync'd. On failure path is untouched and the temp file is removed; after
// a power cut path is its old content or all of data. noSync skips both
// fsyncs (benchmarks and tests: the writers' NoSync options).
func WriteFileAtomicFS(fsys FS, path string, data []byte, perm fs.FileMode, noSync bool) error {
	a, err := CreateAtomic(fsys, path, perm, noSync)
	if err != nil {
		return err
	}
	defer a.Abort()
	if _, err := a.Write(data); err != nil {
		return err
	}
	return a.Commit()
}

// AtomicFile is a new version of a file that is written in full before it
// replaces the old one: what is written goes to a temp file in the same
// folder, named ".tmp-<name>-<random>", and Commit renames it over the
// path. It is for writers that stream what they write; WriteFileAtomicFS
// is the one call for bytes in hand.
//
//	a, err := vfs.CreateAtomic(vfs.OS, path, 0o644, false)
//	if err != nil { ... }
//	defer a.Abort() // a no-op once Commit has run
//	if err := render(a); err != nil { return err }
//	return a.Commit()
//
// Write and the other File methods are the temp file's (Fd and Stat
// included); only Commit and Abort close it. An AtomicFile is not safe for
// concurrent use.
type AtomicFile struct {
	File   // the temp file
	fsys   FS
	path   string
	noSync bool
	done   bool
	direct bool // CreateOutput's device or FIFO: written in place
}

// errAtomicDone is Commit's error after Commit or Abort.
var errAtomicDone = errors.New("vfs: atomic file already committed or aborted")

// CreateAtomic starts a new version of path on fsys: a temp file in path's
// folder, made with perm (before the umask). noSync makes Commit skip its
// fsyncs.
func CreateAtomic(fsys FS, path string, perm fs.FileMode, noSync bool) (*AtomicFile, error) {
	f, err := createTemp(fsys, filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*", perm)
	if err != nil {
		return nil, err
	}
	return &AtomicFile{File: f, fsys: fsys, path: path, noSync: noSync}, nil
}

// Commit makes what was written the file at path: it fsyncs the temp file,
// closes it, renames it over path and fsyncs the folder. It returns the
// first failure, which is the filesystem's own error (naming its path).
// A failure before the rename removes the temp file and leaves path as it
// was; a failed folder fsync leaves path new but not yet durable.
func (a *AtomicFile) Commit() error {
	if a.done {
		return errAtomicDone
	}
	a.done = true
	if a.direct {
		return a.File.Close()
	}
	tmp := a.File.Name()
	var err error
	if !a.noSync {
		err = a.File.Sync()
	}
	if cerr := a.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = a.fsys.Rename(tmp, a.path)
	}
	if err != nil {
		a.fsys.Remove(tmp)
		return err
	}
	if a.noSync {
		return nil
	}
	return a.fsys.SyncDir(filepath.Dir(a.path))
}

// Abort closes and removes the temp file, leaving path as it was. After
// Commit, or a first Abort, it does nothing.
func (a *AtomicFile) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.File.Close()
	if !a.direct {
		a.fsys.Remove(a.File.Name())
	}
}
