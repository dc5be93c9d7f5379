package redact

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Live is the Redactor of a folder whose .env files may change while it is
// used: a run's workspace, where the agent can write a .env at any turn.
// Redactor re-reads the files only when their stat information changed,
// so that asking before every recorded event costs a few stat calls.
type Live struct {
	dir  string
	base []Secret

	mu    sync.Mutex
	red   *Redactor
	err   error
	dirK  fileKey   // dir when names was listed
	names []string  // its .env* entries then
	keys  []fileKey // their lstat and stat when red was built, two a name
	tmp   []fileKey
}

// NewLive returns a Live for the .env files of dir, with base (the
// environment's secrets, say) known besides.
func NewLive(dir string, base ...Secret) *Live {
	return &Live{dir: dir, base: base}
}

// Redactor returns the Redactor of the secrets as they are now, and the
// error of reading them (see FromDotEnv) when a .env file could not be
// read: its values are then not redacted, and the caller should say so.
func (l *Live) Redactor() (*Redactor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fresh := l.red == nil
	if dk := statKey(os.Lstat(l.dir)); fresh || dk != l.dirK {
		// An entry was added, removed or renamed: list them again.
		l.dirK, l.names, fresh = dk, dotEnvNames(l.dir), true
	}
	l.tmp = l.tmp[:0]
	for _, n := range l.names {
		p := filepath.Join(l.dir, n)
		l.tmp = append(l.tmp, statKey(os.Lstat(p)), statKey(os.Stat(p)))
	}
	if !fresh && slices.Equal(l.tmp, l.keys) {
		return l.red, l.err
	}
	l.keys, l.tmp = l.tmp, l.keys
	secrets, err := FromDotEnv(l.dir)
	l.red, l.err = New(append(append([]Secret(nil), l.base...), secrets...)...), err
	return l.red, l.err
}

// dotEnvNames lists the .env* entries of dir.
func dotEnvNames(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".env") {
			out = append(out, e.Name())
		}
	}
	return out
}

// fileKey is what a stat says about a file's identity and content: equal
// keys mean the file was not written, replaced or renamed in between (the
// change time cannot be set by its owner, unlike the modification time).
type fileKey struct {
	ok           bool
	mode         fs.FileMode
	size         int64
	mtime, ctime int64
	dev, ino     uint64
}
