package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is matched (errors.Is) by the error of OpenRegular for a
// path that is not a regular file.
var ErrNotRegular = errors.New("vfs: not a regular file")

// NotRegularError is OpenRegular's error for a path that is a named pipe,
// a device, a socket or a folder.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file; only regular files are read", e.Path, Kind(e.Mode))
}

func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// OpenRegular opens path for reading when it is a regular file. A reader of
// files that someone else may have placed (a home, a folder to import)
// opens them with it: opening a named pipe for reading waits for a writer,
// and reading a device may never end, past any signal. The open does not
// block (O_NONBLOCK) and the check is of the opened file (fstat), so a
// pipe swapped in after a check of the path cannot block either. For a
// regular file O_NONBLOCK changes nothing.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}

// Kind names the type of a file that is not a regular file.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "folder"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "irregular file"
}

// ReadRegular is os.ReadFile of a regular file only (see OpenRegular).
func ReadRegular(path string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
