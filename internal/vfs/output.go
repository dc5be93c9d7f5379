package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// CreateOutput starts writing a command's output file at path (view's
// page, a bundle, eval's --junit and --json, a --summary). A path that does
// not exist, or is a regular file, gets a new version through an
// AtomicFile, renamed over it by Commit, so a failure leaves it as it was.
//
// A path that exists and is something else is never replaced: renaming a
// temp file over a device turns it into a regular file (as root,
// `view -o /dev/null` made /dev/null a file holding the page, and every
// program that writes to it or reads it as an empty config broke). A
// character device (/dev/null, /dev/stdout, a terminal) or a FIFO is
// written into directly, as a shell's redirection would: Commit closes it
// and Abort leaves what was written. A folder, a socket or a block device
// is refused. A symbolic link is followed to what it names.
func CreateOutput(fsys FS, path string, perm fs.FileMode, noSync bool) (*AtomicFile, error) {
	return CreateOutputPattern(fsys, path, ".tmp-"+filepath.Base(path)+"-*", perm, noSync)
}

// CreateOutputPattern is CreateOutput naming the temp file by pattern (as
// os.CreateTemp does), for a writer that finds its own leftovers by name.
func CreateOutputPattern(fsys FS, path, pattern string, perm fs.FileMode, noSync bool) (*AtomicFile, error) {
	// Stat follows a symbolic link: what matters is what a write reaches.
	// Readers (and this look) stay on package os; see the package doc.
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		f, err := createTemp(fsys, filepath.Dir(path), pattern, perm)
		if err != nil {
			return nil, err
		}
		return &AtomicFile{File: f, fsys: fsys, path: path, noSync: noSync}, nil
	}
	switch t := fi.Mode().Type(); {
	case t&fs.ModeCharDevice != 0, t&fs.ModeNamedPipe != 0:
		// No O_CREATE (it exists) and no O_TRUNC (a device has no
		// length; a FIFO is read as it is written).
		f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &AtomicFile{File: f, fsys: fsys, path: path, direct: true}, nil
	case t&fs.ModeDir != 0:
		return nil, fmt.Errorf("%s is a folder: give the path of a file to write", path)
	default:
		return nil, fmt.Errorf("%s exists and is not a regular file (%s): it is not replaced; give another path", path, fi.Mode().Type())
	}
}

// Direct reports whether a is written straight into its path (a device or
// a FIFO that CreateOutput would not replace): there is no temp file,
// nothing to fsync and nothing Abort can take back.
func (a *AtomicFile) Direct() bool { return a.direct }

// CountWriter counts what is written through it to W: the size of an
// output that may be a FIFO or a device (CreateOutput), whose stat says
// nothing of what it was given.
type CountWriter struct {
	W io.Writer
	N int64
}

func (c *CountWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}
