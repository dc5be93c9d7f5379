//go:build !linux

package redact

import "io/fs"

// statKey without the change time and inode, which this system's stat
// does not give portably: a write that keeps size and modification time
// goes unseen until the next change.
func statKey(fi fs.FileInfo, err error) fileKey {
	if err != nil {
		return fileKey{}
	}
	return fileKey{ok: true, mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
