package gitsafe

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
)

// cleanIndex checks a git index (versions 2 to 4, see git's
// Documentation/gitformat-index.txt) and returns it rewritten with its
// header and entries only, under a fresh checksum. Every entry must have
// a file, executable, symlink or submodule mode and a path git itself
// would accept: git diff reads a tracked path relative to the work tree
// as it is written in the index, ../ and all. Extensions are dropped (the
// untracked cache and fsmonitor data would steer git's view of the work
// tree; the cache tree is only a speed-up); a split or sparse index, whose
// entries live elsewhere, is refused. hashLen is 20 (SHA-1) or 32
// (SHA-256).
func cleanIndex(b []byte, hashLen int) ([]byte, error) {
	bad := func(format string, args ...any) error {
		return refuse("the index "+format, args...)
	}
	if len(b) < 12+hashLen || string(b[:4]) != "DIRC" {
		return nil, bad("is not a git index (no DIRC header)")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, bad("has version %d; only 2, 3 and 4 exist", version)
	}
	count := binary.BigEndian.Uint32(b[8:12])
	body := b[:len(b)-hashLen] // the entries and extensions
	fixed := 40 + hashLen + 2  // stat data, id, flags
	off := 12
	var prev string
	starts := make([]int, 0, min(count, 1<<20))
	for i := uint32(0); i < count; i++ {
		start := off
		starts = append(starts, start)
		if off+fixed > len(body) {
			return nil, bad("ends inside entry %d of %d", i+1, count)
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+fixed-2 : off+fixed])
		off += fixed
		if flags&0x4000 != 0 { // extended flags
			if version < 3 {
				return nil, bad("entry %d has extended flags in a version 2 index", i+1)
			}
			off += 2
		}
		var name string
		if version == 4 {
			strip, n := varint(body[min(off, len(body)):])
			if n == 0 || strip > uint64(len(prev)) {
				return nil, bad("entry %d has a bad path prefix", i+1)
			}
			off += n
			end := bytes.IndexByte(body[min(off, len(body)):], 0)
			if end < 0 {
				return nil, bad("ends inside the path of entry %d", i+1)
			}
			name = prev[:len(prev)-int(strip)] + string(body[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(body[min(off, len(body)):], 0)
			if end < 0 {
				return nil, bad("ends inside the path of entry %d", i+1)
			}
			name = string(body[off : off+end])
			// The entry is padded with 1 to 8 NULs to a multiple of 8.
			off = start + (off-start+end+8)&^7
			if off > len(body) {
				return nil, bad("ends inside entry %d", i+1)
			}
		}
		if n := int(flags & 0xfff); n != 0xfff && n != len(name) {
			return nil, bad("entry %d says its path has %d bytes and it has %d", i+1, n, len(name))
		}
		switch mode {
		case 0o100644, 0o100755, 0o120000, 0o160000:
		case 0o040000:
			return nil, bad("is sparse (entry %q is a folder); a sparse index is not supported", name)
		default:
			return nil, bad("entry %q has mode %o, which git never writes", name, mode)
		}
		if why := badPath(name); why != "" {
			return nil, bad("has the path %q, %s", name, why)
		}
		prev = name
	}
	for ext := off; ext+8 <= len(body); {
		sig := string(body[ext : ext+4])
		switch sig {
		case "link":
			return nil, bad("is split (its entries are in a shared index); a split index is not supported")
		case "sdir":
			return nil, bad("is sparse; a sparse index is not supported")
		}
		ext += 8 + int(binary.BigEndian.Uint32(body[ext+4:ext+8]))
	}
	out := make([]byte, off, off+hashLen)
	copy(out, b[:off])
	for _, e := range starts {
		clear(out[e : e+24])    // ctime, mtime, dev, ino
		clear(out[e+28 : e+40]) // uid, gid, size (the mode at 24 stays)
	}
	if hashLen == 32 {
		sum := sha256.Sum256(out)
		return append(out, sum[:]...), nil
	}
	sum := sha1.Sum(out)
	return append(out, sum[:]...), nil
}

// varint decodes the offset varint of a version 4 index path (git's
// decode_varint), returning the value and the bytes it took, 0 when b
// ends first or it overflows.
func varint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	n := 1
	for c&128 != 0 {
		if n >= len(b) || n > 9 {
			return 0, 0
		}
		v++
		c = b[n]
		n++
		v = v<<7 + uint64(c&127)
	}
	return v, n
}

// badPath says why name is not a path git would put in an index, "" when
// it is one: relative, no empty, "." or ".." component, no .git.
func badPath(name string) string {
	if name == "" {
		return "which is empty"
	}
	if name[0] == '/' {
		return "which is absolute"
	}
	for _, c := range strings.Split(name, "/") {
		switch {
		case c == "":
			return "which has an empty component"
		case c == "." || c == "..":
			return fmt.Sprintf("which has a %q component", c)
		case strings.EqualFold(c, ".git"):
			return "which goes through a .git folder"
		}
	}
	return ""
}
