package tools

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
)

const (
	// maxListEntries caps the entries list_files returns.
	maxListEntries = 2000
	// maxGrepMatches caps the lines grep returns.
	maxGrepMatches = 500
	// maxGrepFileSize is the largest file grep reads; bigger ones are skipped.
	maxGrepFileSize = 16 << 20
	// maxGrepLine caps the text of one matching line as shown.
	maxGrepLine = 400
	// binarySniff is how many leading bytes are checked for NUL to decide a
	// file is binary, as git and grep do.
	binarySniff = 8000
)

// workspacePath confines p and opens an os.Root at the resolved workspace
// root. All I/O goes through the Root with the returned slash-separated
// relative name, so a component swapped for a symlink after the check is
// still refused by the kernel-backed Root, not followed outside.
func workspacePath(workspace, p string) (*os.Root, string, error) {
	rroot, resolved, err := confine(workspace, p)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(rroot)
	if err != nil {
		return nil, "", err
	}
	return root, relTo(rroot, resolved), nil
}

func runReadFile(ctx context.Context, t *builtin, call Call) Result {
	var a struct {
		Path string `json:"path"`
	}
	if err := t.decode(call.Args, &a); err != nil {
		return failed(err)
	}
	root, rel, err := workspacePath(call.Workspace, a.Path)
	if err != nil {
		return failed(err)
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return failed(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return failed(err)
	}
	if fi.IsDir() {
		return failed(fmt.Errorf("read %s: is a directory (use list_files)", rel))
	}
	buf := newCapBuffer(call.maxOutput())
	if _, err := io.Copy(buf, f); err != nil {
		return failed(fmt.Errorf("read %s: %w", rel, err))
	}
	out, truncated := buf.Result()
	return ok(out, truncated)
}

func runWriteFile(ctx context.Context, t *builtin, call Call) Result {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := t.decode(call.Args, &a); err != nil {
		return failed(err)
	}
	root, rel, err := workspacePath(call.Workspace, a.Path)
	if err != nil {
		return failed(err)
	}
	defer root.Close()
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return failed(err)
		}
	}
	if err := root.WriteFile(rel, []byte(a.Content), 0o644); err != nil {
		return failed(err)
	}
	return ok(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), rel), false)
}

func runEditFile(ctx context.Context, t *builtin, call Call) Result {
	var a struct {
		Path string `json:"path"`
		Old  string `json:"old"`
		New  string `json:"new"`
	}
	if err := t.decode(call.Args, &a); err != nil {
		return failed(err)
	}
	root, rel, err := workspacePath(call.Workspace, a.Path)
	if err != nil {
		return failed(err)
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if err != nil {
		return failed(err)
	}
	content := string(data)
	if n := strings.Count(content, a.Old); n != 1 {
		return failed(fmt.Errorf("edit %s: old text occurs %d times, want exactly 1", rel, n))
	}
	content = strings.Replace(content, a.Old, a.New, 1)
	if err := root.WriteFile(rel, []byte(content), 0o644); err != nil {
		return failed(err)
	}
	return ok(fmt.Sprintf("edited %s", rel), false)
}

func runListFiles(ctx context.Context, t *builtin, call Call) Result {
	var a struct {
		Path string `json:"path"`
	}
	if err := t.decode(call.Args, &a); err != nil {
		return failed(err)
	}
	root, rel, err := workspacePath(call.Workspace, cmp.Or(a.Path, "."))
	if err != nil {
		return failed(err)
	}
	defer root.Close()
	fsys := root.FS()
	var entries []string
	truncated := false
	err = fs.WalkDir(fsys, rel, func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if name == rel {
				return err
			}
			return nil // an unreadable subdirectory is left out
		}
		if d.Name() == ".git" && name != rel {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if name == rel && d.IsDir() {
			return nil
		}
		if len(entries) == maxListEntries {
			truncated = true
			return fs.SkipAll
		}
		if d.IsDir() {
			name += "/"
		}
		entries = append(entries, name)
		return nil
	})
	if ctx.Err() != nil {
		return Result{Status: statusCancelled, Error: "cancelled"}
	}
	if err != nil {
		return failed(err)
	}
	if len(entries) == 0 {
		return ok("(empty directory)\n", false)
	}
	slices.Sort(entries)
	out := strings.Join(entries, "\n") + "\n"
	if truncated {
		out += fmt.Sprintf("[... listing stopped at %d entries; list a subdirectory ...]\n", maxListEntries)
	}
	return ok(out, truncated)
}

type grepMatch struct {
	file string
	line int
	text string
}

func runGrep(ctx context.Context, t *builtin, call Call) Result {
	var a struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
	}
	if err := t.decode(call.Args, &a); err != nil {
		return failed(err)
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return failed(fmt.Errorf("invalid pattern: %w", err))
	}
	root, rel, err := workspacePath(call.Workspace, cmp.Or(a.Path, "."))
	if err != nil {
		return failed(err)
	}
	defer root.Close()
	fsys := root.FS()
	var matches []grepMatch
	truncated := false
	err = fs.WalkDir(fsys, rel, func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if name == rel {
				return err
			}
			return nil
		}
		if d.Name() == ".git" && name != rel {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		// Symlinks are not followed: their targets are listed or searched
		// where they live, and a link out of the workspace is never read.
		if !d.Type().IsRegular() {
			return nil
		}
		found, more, err := grepFile(fsys, name, re, maxGrepMatches-len(matches))
		if err != nil {
			return nil // an unreadable file is skipped, as grep -s does
		}
		matches = append(matches, found...)
		if more {
			truncated = true
			return fs.SkipAll
		}
		return nil
	})
	if ctx.Err() != nil {
		return Result{Status: statusCancelled, Error: "cancelled"}
	}
	if err != nil {
		return failed(err)
	}
	if len(matches) == 0 {
		return ok("(no matches)\n", false)
	}
	slices.SortFunc(matches, func(x, y grepMatch) int {
		return cmp.Or(strings.Compare(x.file, y.file), cmp.Compare(x.line, y.line))
	})
	var b strings.Builder
	for _, m := range matches {
		fmt.Fprintf(&b, "%s:%d: %s\n", m.file, m.line, m.text)
	}
	if truncated {
		fmt.Fprintf(&b, "[... stopped at %d matches; narrow the pattern or path ...]\n", maxGrepMatches)
	}
	return ok(b.String(), truncated)
}

// grepFile returns up to limit matching lines of the text file name. more
// reports that there were further matches. Binary and oversized files have
// no matches.
func grepFile(fsys fs.FS, name string, re *regexp.Regexp, limit int) (found []grepMatch, more bool, err error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if fi.Size() > maxGrepFileSize {
		return nil, false, nil
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(binarySniff)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, false, err
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return nil, false, nil
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !re.Match(line) {
			continue
		}
		if len(found) == limit {
			return found, true, nil
		}
		text := strings.TrimRight(string(line), "\r")
		if len(text) > maxGrepLine {
			text = text[:maxGrepLine] + " [...]"
		}
		found = append(found, grepMatch{file: name, line: n, text: text})
	}
	// A line longer than the scanner's buffer ends the file's search.
	return found, false, nil
}
