package bundle

import (
	"encoding/json"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/internal/session"
)

// maxProgress caps one progress file copied into a bundle.
const maxProgress = 16 << 20

// progressNames are the progress files a bundle of the session takes from
// its workspace: the usual names (progressFiles) and those the recorded
// spec lists under progress. The header was written elsewhere, perhaps,
// so a name that is not a clean relative path inside the workspace (or
// goes through .git) is dropped, never followed.
func progressNames(hdr session.Event) []string {
	names := slices.Clone(progressFiles)
	var sp struct {
		Progress []string `json:"progress"`
	}
	if json.Unmarshal(hdr.Spec, &sp) != nil {
		return names
	}
	for _, n := range sp.Progress {
		if safeProgressName(n) && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

func safeProgressName(n string) bool {
	if n == "" || len(n) > 1024 || path.IsAbs(n) || path.Clean(n) != n || n == "." || n == ".." ||
		strings.HasPrefix(n, "../") || strings.ContainsAny(n, "\\\x00\n") {
		return false
	}
	for _, c := range strings.Split(n, "/") {
		if strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}

// readProgress reads one progress file through an os.Root of the
// workspace, so that no symlink (of the file or of a folder on its path)
// leads the read outside; only a regular file of at most maxProgress
// bytes is taken.
func readProgress(root *os.Root, name string) ([]byte, bool) {
	fi, err := root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxProgress {
		return nil, false
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProgress+1))
	if err != nil || len(b) > maxProgress {
		return nil, false
	}
	return b, true
}
