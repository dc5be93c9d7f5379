//go:build !linux || arm || ppc64 || ppc64le

package cli

import "os"

// writebackFile is the bundle's temporary file as it is.
type writebackFile struct{ *os.File }

func newWritebackFile(f *os.File) *writebackFile { return &writebackFile{f} }
