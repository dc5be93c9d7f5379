package approval

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// maxPreviewFile bounds the workspace file a write's diff reads.
const maxPreviewFile = 256 << 10

// maxDiffLines bounds each side of a diff: past it the preview shows the
// new text whole instead of a diff (the work is quadratic in lines).
const maxDiffLines = 2000

// Line is one line of a diff: Op is ' ' (kept), '-' or '+'.
type Line struct {
	Op   string
	Text string
}

// Preview is what a waiting call would do, for a human to judge: the
// command it runs, or the diff it makes to a workspace file.
type Preview struct {
	// Command is a bash call's command, else the call's arguments.
	Command string
	// Path and Diff are a write_file's or edit_file's file and change;
	// Note says what the diff is against.
	Path string
	Diff []Line
	Note string
}

// PreviewOf previews call c of session id. The file a write replaces is
// read from the session's own workspace, through an os.Root so a path in
// the arguments cannot leave it.
func PreviewOf(st recorder.Store, id string, c *session.Call) Preview {
	p := Preview{Command: Command(c)}
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
		Old     *string `json:"old"`
		New     *string `json:"new"`
	}
	if json.Unmarshal(c.Args, &a) != nil || a.Path == "" {
		return p
	}
	switch {
	case c.Tool == "write_file" && a.Content != nil:
		old, note := workspaceFile(st, id, a.Path)
		p.Path, p.Diff, p.Note = a.Path, Diff(old, *a.Content), note
	case c.Tool == "edit_file" && a.Old != nil && a.New != nil:
		p.Path, p.Diff, p.Note = a.Path, Diff(*a.Old, *a.New), "the edit replaces the old text with the new"
	}
	return p
}

func workspaceFile(st recorder.Store, id, rel string) (string, string) {
	hdr, err := st.Header(id)
	if err != nil {
		return "", "against nothing: " + err.Error()
	}
	dir, err := st.Workspace(id, hdr, "")
	if err != nil {
		return "", "against nothing: " + err.Error()
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", "against nothing: the workspace is not here"
	}
	defer root.Close()
	f, err := root.Open(strings.TrimPrefix(rel, "/"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", "a new file"
	}
	if err != nil {
		return "", "against nothing: " + err.Error()
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPreviewFile+1))
	if err != nil {
		return "", "against nothing: " + err.Error()
	}
	if len(b) > maxPreviewFile {
		return "", "against nothing: the file is over 256 KiB"
	}
	return string(b), "against the file in the session's workspace now"
}

// Diff is the line diff from a to b (longest common subsequence).
func Diff(a, b string) []Line {
	x, y := splitLines(a), splitLines(b)
	if len(x) > maxDiffLines || len(y) > maxDiffLines {
		out := make([]Line, 0, len(y))
		for _, l := range y {
			out = append(out, Line{Op: "+", Text: l})
		}
		return out
	}
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []Line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			out = append(out, Line{Op: " ", Text: x[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, Line{Op: "-", Text: x[i]})
			i++
		default:
			out = append(out, Line{Op: "+", Text: y[j]})
			j++
		}
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
