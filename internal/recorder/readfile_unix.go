//go:build unix

package recorder

import (
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/agentctl/agentctl/internal/vfs"
)

// rawFile reads a log with plain system calls: os.Open would also try to
// register the file with the runtime's poller (a failing epoll_ctl for a
// regular file) and build an *os.File, which costs replay verify a few
// percent when it reads a thousand small logs.
type rawFile struct{ fd int }

// openSized opens path for reading and returns its size now. Anything but
// a regular file is refused (vfs.ErrNotRegular): a named pipe placed in a
// home is opened without waiting for a writer (O_NONBLOCK) and never read.
func openSized(path string) (*rawFile, int64, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		fi, err := os.Lstat(path) // for the file's kind only
		mode := fs.ModeIrregular
		if err == nil {
			mode = fi.Mode()
		}
		return nil, 0, &vfs.NotRegularError{Path: path, Mode: mode}
	}
	return &rawFile{fd: fd}, st.Size, nil
}

func (f *rawFile) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(f.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f *rawFile) close() { syscall.Close(f.fd) }
