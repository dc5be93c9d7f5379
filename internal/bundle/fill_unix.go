//go:build unix

package bundle

import (
	"io/fs"
	"syscall"
)

// fdReader is an io.ReaderAt over a descriptor opened as copyFile opens
// one (O_NOFOLLOW, no poller registration).
type fdReader struct {
	fd   int
	path string
}

func openReaderAt(path string) (*fdReader, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return &fdReader{fd: fd, path: path}, nil
	}
}

func (f *fdReader) ReadAt(b []byte, off int64) (int, error) {
	for {
		n, err := syscall.Pread(f.fd, b, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: f.path, Err: err}
		}
		return n, nil // a short read is retried by the caller; 0 means the end
	}
}

func (f *fdReader) Close() error { return syscall.Close(f.fd) }
