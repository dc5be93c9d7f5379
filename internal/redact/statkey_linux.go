package redact

import (
	"io/fs"
	"syscall"
)

func statKey(fi fs.FileInfo, err error) fileKey {
	if err != nil {
		return fileKey{}
	}
	k := fileKey{ok: true, mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.ctime = st.Ctim.Nano()
		k.dev, k.ino = uint64(st.Dev), st.Ino
	}
	return k
}
