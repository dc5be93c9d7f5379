package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/agentctl/agentctl/internal/session"
)

// Caps on what the progress files put in the log and the window: a
// feature list the agent let grow must not fill the context.
const (
	progressFileCap  = 16 << 10
	progressTotalCap = 64 << 10
)

// ProgressHeading opens the user message that shows the progress files.
const ProgressHeading = "The progress files as they are now (agentctl shows them on resume and after a compaction):"

// showProgress appends the user message that shows the spec's progress
// files as they are in the workspace now: a user_message whose attrs name
// them ({"progress": [...]}), projected like any user message, redacted
// at the recorder like every string. Each file is read through an
// os.Root of the workspace (a symlink cannot lead it outside), must be a
// regular file, and is cut at progressFileCap; all of them at
// progressTotalCap. A missing file is said to be missing.
func (r *run) showProgress() error {
	r.progressDue = false
	names := r.cfg.Spec.Progress
	if len(names) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(ProgressHeading)
	left := progressTotalCap
	for _, name := range names {
		body := readProgress(r.ws, name, min(progressFileCap, max(left, 0)))
		left -= len(body)
		fmt.Fprintf(&b, "\n\n== %s ==\n%s", name, body)
	}
	attrs, _ := json.Marshal(map[string][]string{"progress": names})
	return r.append(session.Event{Kind: session.KindUserMessage, Text: b.String(), Attrs: attrs})
}

// readProgress is the text of one progress file, or a line saying why
// there is none.
func readProgress(ws, name string, limit int) string {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "(not readable: " + err.Error() + ")"
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "(missing: the file does not exist yet)"
	}
	if err != nil {
		return "(not readable: " + err.Error() + ")"
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "(not shown: not a regular file)"
	}
	buf, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "(not readable: " + err.Error() + ")"
	}
	if len(buf) > limit {
		return string(buf[:limit]) + fmt.Sprintf("\n[cut: the file has %d bytes; %d are shown]", fi.Size(), limit)
	}
	return string(buf)
}
