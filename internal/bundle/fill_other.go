//go:build !unix

package bundle

import "os"

func openReaderAt(path string) (*os.File, error) { return os.Open(path) }
