//go:build !unix

package bundle

import (
	"io"
	"io/fs"
	"os"
)

// copyFile writes n bytes of the file at path, from offset off, to w
// through buf.
func copyFile(w io.Writer, path string, off, n int64, buf []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	k, err := io.CopyBuffer(w, io.NewSectionReader(f, off, n), buf)
	if err == nil && k != n {
		err = &fs.PathError{Op: "read", Path: path, Err: errShrank}
	}
	return err
}
