package bundle

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/vfs"
)

// Temp names. A bundle writes its file under
// tempFilePrefix+<pid>"-"<name>".tmp-N" beside it, and its intermediate
// members under TempDir/tempDirPrefix+<pid>"-N", each locked (lockFd)
// until it is renamed or removed. A bundle killed
// (kill -9, an OOM kill) leaves them; the next bundle that writes to the
// same folder, or uses the same TempDir, removes those no live bundle
// holds, so the user never cleans up after a killed bundle by hand.
const (
	tempFilePrefix = ".agentctl-bundle-"
	tempDirPrefix  = "agentctl-bundle-"
)

// tempPrefix is the start of the name of a temp of this process.
func tempPrefix(prefix string) string { return prefix + strconv.Itoa(os.Getpid()) + "-" }

// removeStale removes the entries of dir that are a bundle's temps (their
// name starts with prefix and the pid of their maker, and isDir says
// whether they are folders) which belong to no live bundle (stale).
// Failures are ignored: what is left is only garbage, and the next bundle
// tries again.
func removeStale(fsys vfs.FS, dir, prefix string, isDir bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() != isDir || (!isDir && !e.Type().IsRegular()) {
			continue
		}
		digits, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(digits)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if p := filepath.Join(dir, e.Name()); stale(p, pid) {
			fsys.RemoveAll(p)
		}
	}
}
