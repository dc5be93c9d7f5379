//go:build unix

package bundle

import (
	"io"
	"io/fs"
	"syscall"
)

// copyFile writes n bytes of the file at path, from offset off, to w
// through buf. It uses the system calls directly: os.Open also sets the
// descriptor non-blocking and tries to register it with the network
// poller, three more system calls per file that a workspace of 16,000
// files pays for in time. A link is not followed (O_NOFOLLOW): the walk saw
// a regular file there. The file growing is not an error; only the n bytes
// are read.
func copyFile(w io.Writer, path string, off, n int64, buf []byte) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	for n > 0 {
		b := buf[:min(int64(len(buf)), n)]
		k, err := syscall.Pread(fd, b, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			return &fs.PathError{Op: "read", Path: path, Err: errShrank}
		}
		off += int64(k)
		n -= int64(k)
		if _, err := w.Write(b[:k]); err != nil {
			return err
		}
	}
	return nil
}
