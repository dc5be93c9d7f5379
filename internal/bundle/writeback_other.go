//go:build !linux || arm || ppc64 || ppc64le

package bundle

import "github.com/agentctl/agentctl/internal/vfs"

// writebackFile is the bundle's temporary file as it is.
type writebackFile struct{ vfs.File }

func newWritebackFile(f vfs.File) *writebackFile { return &writebackFile{f} }
