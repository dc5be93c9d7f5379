//go:build !unix

package recorder

import (
	"os"

	"github.com/agentctl/agentctl/internal/vfs"
)

type rawFile struct{ *os.File }

func openSized(path string) (*rawFile, int64, error) {
	f, err := vfs.OpenRegular(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return &rawFile{f}, fi.Size(), nil
}

func (f *rawFile) close() { f.File.Close() }
