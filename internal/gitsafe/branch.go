package gitsafe

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// Branch returns the branch HEAD names in the workspace ws (main for
// ref: refs/heads/main), "" when HEAD is detached, by reading HEAD in Go;
// git is not run. Errors are Head's.
func Branch(ws string) (string, error) {
	l, err := locate(ws)
	if err != nil {
		return "", err
	}
	defer l.root.Close()
	b, err := l.readSmall(filepath.Join(l.gitDir, "HEAD"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", refuse("%s has no HEAD", l.show(l.gitDir))
		}
		return "", err
	}
	name, sym := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "ref: ")
	if !sym {
		return "", nil
	}
	if !validRef(name) {
		return "", refuse("HEAD names %.80q, which is not a ref name", name)
	}
	return strings.TrimPrefix(name, "refs/heads/"), nil
}
