//go:build unix

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func goldenTree(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{
		"a.txt":         "alpha\nbeta\n",
		"a-b.txt":       "x\n",
		"bin.dat":       "beta\x00\n",
		"empty/":        "",
		".git/config":   "beta\n",
		"sub/b.txt":     "beta gamma\r\nbeta\n",
		"sub/deep/c.go": "package c\n// beta\n",
		"link":          "->sub",
	})
	return ws
}

func TestListFiles(t *testing.T) {
	ws := goldenTree(t)
	tests := []struct {
		path string
		want string
	}{
		{".", "a-b.txt\na.txt\nbin.dat\nempty/\nlink\nsub/\nsub/b.txt\nsub/deep/\nsub/deep/c.go\n"},
		{"", "a-b.txt\na.txt\nbin.dat\nempty/\nlink\nsub/\nsub/b.txt\nsub/deep/\nsub/deep/c.go\n"},
		{"sub/", "sub/b.txt\nsub/deep/\nsub/deep/c.go\n"},
		{"link", "sub/b.txt\nsub/deep/\nsub/deep/c.go\n"},
		{"empty", "(empty directory)\n"},
		{"a.txt", "a.txt\n"},
	}
	for _, tt := range tests {
		args := map[string]string{}
		if tt.path != "" {
			args["path"] = tt.path
		}
		got := run(t, NameListFiles, ws, args)
		if got.Status != statusOK || got.Output != tt.want {
			t.Errorf("list_files(%q) = %+v, want output\n%s", tt.path, got, tt.want)
		}
	}
	if got := run(t, NameListFiles, ws, map[string]string{"path": "missing"}); got.Status != statusError || !strings.Contains(got.Error, "no such file") {
		t.Errorf("list_files(missing) = %+v, want a not-found error", got)
	}
}

func TestGrep(t *testing.T) {
	ws := goldenTree(t)
	tests := []struct {
		pattern, path string
		want          string
	}{
		{"beta", ".", "a.txt:2: beta\nsub/b.txt:1: beta gamma\nsub/b.txt:2: beta\nsub/deep/c.go:2: // beta\n"},
		{"beta", "", "a.txt:2: beta\nsub/b.txt:1: beta gamma\nsub/b.txt:2: beta\nsub/deep/c.go:2: // beta\n"},
		{"^beta$", "sub", "sub/b.txt:2: beta\n"},
		{`gam+a`, "link", "sub/b.txt:1: beta gamma\n"},
		{"alpha|package", "", "a.txt:1: alpha\nsub/deep/c.go:1: package c\n"},
		{"beta", "sub/deep/c.go", "sub/deep/c.go:2: // beta\n"},
		{"nothing-here", ".", "(no matches)\n"},
	}
	for _, tt := range tests {
		args := map[string]string{"pattern": tt.pattern}
		if tt.path != "" {
			args["path"] = tt.path
		}
		got := run(t, NameGrep, ws, args)
		if got.Status != statusOK || got.Output != tt.want {
			t.Errorf("grep(%q, %q) = %+v, want output\n%s", tt.pattern, tt.path, got, tt.want)
		}
	}
	got := run(t, NameGrep, ws, map[string]string{"pattern": "a("})
	if got.Status != statusError || !strings.HasPrefix(got.Error, "invalid pattern: ") {
		t.Errorf("grep(a() = %+v, want an invalid pattern error", got)
	}
}

func TestGrepCap(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"many.txt": strings.Repeat("hit\n", maxGrepMatches+10)})
	got := run(t, NameGrep, ws, map[string]string{"pattern": "hit"})
	lines := strings.Split(strings.TrimSuffix(got.Output, "\n"), "\n")
	if got.Status != statusOK || !got.Truncated || len(lines) != maxGrepMatches+1 || !strings.HasPrefix(lines[maxGrepMatches], "[... stopped at") {
		t.Errorf("grep over %d matches: status %s, truncated %v, %d lines, last %q; want ok, truncated, %d lines and a note",
			maxGrepMatches+10, got.Status, got.Truncated, len(lines), lines[len(lines)-1], maxGrepMatches+1)
	}
}

func TestReadFile(t *testing.T) {
	ws := goldenTree(t)
	if got := run(t, NameReadFile, ws, map[string]string{"path": "a.txt"}); got != (Result{Status: statusOK, Output: "alpha\nbeta\n"}) {
		t.Errorf("read_file(a.txt) = %+v", got)
	}
	if got := run(t, NameReadFile, ws, map[string]string{"path": "sub"}); got.Status != statusError || !strings.Contains(got.Error, "is a directory") {
		t.Errorf("read_file(sub) = %+v, want a directory error", got)
	}
	if got := run(t, NameReadFile, ws, map[string]string{"path": "nope.txt"}); got.Status != statusError || !strings.Contains(got.Error, "no such file") {
		t.Errorf("read_file(nope.txt) = %+v, want a not-found error", got)
	}
	writeTree(t, ws, map[string]string{"big.txt": "HEAD" + strings.Repeat("x", 1000) + "TAIL"})
	got := builtinTool(t, NameReadFile).Run(context.Background(), Call{Args: []byte(`{"path":"big.txt"}`), Workspace: ws, MaxOutput: 100})
	want := "HEAD" + strings.Repeat("x", 46) + "\n[... 908 bytes elided ...]\n" + strings.Repeat("x", 46) + "TAIL"
	if got.Status != statusOK || !got.Truncated || got.Output != want {
		t.Errorf("read_file(big.txt) with MaxOutput 100 = %+v, want truncated output %q", got, want)
	}
}

func TestWriteFile(t *testing.T) {
	ws := t.TempDir()
	got := run(t, NameWriteFile, ws, map[string]string{"path": "a/b/c.txt", "content": "hello\n"})
	if got != (Result{Status: statusOK, Output: "wrote 6 bytes to a/b/c.txt"}) {
		t.Errorf("write_file(a/b/c.txt) = %+v", got)
	}
	got = run(t, NameWriteFile, ws, map[string]string{"path": "a/b/c.txt", "content": ""})
	if got.Status != statusOK {
		t.Errorf("overwrite = %+v", got)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a/b/c.txt")); err != nil || len(b) != 0 {
		t.Errorf("a/b/c.txt = %q, %v; want empty after overwrite", b, err)
	}
	if got := run(t, NameWriteFile, ws, map[string]string{"path": "a/b", "content": "x"}); got.Status != statusError {
		t.Errorf("write_file over a directory = %+v, want an error", got)
	}
	if got := run(t, NameWriteFile, ws, map[string]string{"path": "a/b/c.txt/d", "content": "x"}); got.Status != statusError {
		t.Errorf("write_file under a file = %+v, want an error", got)
	}
}

func TestEditFile(t *testing.T) {
	const orig = "one two two three\n"
	tests := []struct {
		old, new  string
		wantErr   string
		wantAfter string
	}{
		{"one", "1", "", "1 two two three\n"},
		{"two two", "2", "", "one 2 three\n"},
		{"three\n", "", "", "one two two "},
		{"two", "2", "edit f.txt: old text occurs 2 times, want exactly 1", orig},
		{"four", "4", "edit f.txt: old text occurs 0 times, want exactly 1", orig},
		{"", "x", `invalid arguments for edit_file: at /old: minLength: got 0 characters, want at least 1`, orig},
	}
	for _, tt := range tests {
		ws := t.TempDir()
		writeTree(t, ws, map[string]string{"f.txt": orig})
		got := run(t, NameEditFile, ws, map[string]string{"path": "f.txt", "old": tt.old, "new": tt.new})
		if tt.wantErr == "" && got != (Result{Status: statusOK, Output: "edited f.txt"}) {
			t.Errorf("edit_file(%q -> %q) = %+v, want ok", tt.old, tt.new, got)
		}
		if tt.wantErr != "" && (got.Status != statusError || got.Error != tt.wantErr) {
			t.Errorf("edit_file(%q -> %q) = %+v, want error %q", tt.old, tt.new, got, tt.wantErr)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != tt.wantAfter {
			t.Errorf("after edit_file(%q -> %q): f.txt = %q, want %q", tt.old, tt.new, b, tt.wantAfter)
		}
	}
	ws := t.TempDir()
	if got := run(t, NameEditFile, ws, map[string]string{"path": "missing.txt", "old": "a", "new": "b"}); got.Status != statusError {
		t.Errorf("edit_file(missing.txt) = %+v, want an error", got)
	}
}

func TestCancelledBeforeRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range builtinNames {
		got := builtinTool(t, name).Run(ctx, Call{Args: []byte(`{}`), Workspace: t.TempDir()})
		if got.Status != statusCancelled {
			t.Errorf("%s with a cancelled ctx = %+v, want cancelled", name, got)
		}
	}
}
