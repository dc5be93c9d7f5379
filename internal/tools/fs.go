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

	"github.com/agentctl/agentctl/internal/vfs"
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

func runReadFile(ctx context.Context, t *builtin, call Call) Result {
	var a struct {
		Path string `json:"path"`
	}
	if err := t.decode(call.Args, &a); err != nil {
		return failed(err)
	}
	tg, err := resolveTarget(call, a.Path)
	if err != nil {
		return failed(err)
	}
	defer tg.Close()
	f, _, err := tg.open("read", tg.rel, os.O_RDONLY, MaxFileSize)
	if err != nil {
		return failed(err)
	}
	defer f.Close()
	buf := newCapBuffer(call.maxOutput())
	n, err := io.Copy(buf, io.LimitReader(ctxReader{ctx, f}, MaxFileSize+1))
	if err != nil {
		return failed(fmt.Errorf("read %s: %w", tg.rel, err))
	}
	if n > MaxFileSize {
		return failed(tooBig("read", tg.rel, -1))
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
	tg, err := resolveTarget(call, a.Path)
	if err != nil {
		return failed(err)
	}
	defer tg.Close()
	if dir := path.Dir(tg.rel); dir != "." {
		if err := tg.root.MkdirAll(dir, 0o755); err != nil {
			return failed(err)
		}
	}
	f, _, err := tg.open("write", tg.rel, os.O_WRONLY|os.O_CREATE, 0)
	if err != nil {
		return failed(err)
	}
	if err := ctx.Err(); err != nil {
		f.Close()
		return failed(err)
	}
	if err := replaceContent(f, []byte(a.Content)); err != nil {
		return failed(fmt.Errorf("write %s: %w", tg.rel, err))
	}
	return ok(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), tg.rel), false)
}

// replaceContent makes data the whole content of the open file f, and
// closes it.
func replaceContent(f *os.File, data []byte) error {
	err := f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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
	tg, err := resolveTarget(call, a.Path)
	if err != nil {
		return failed(err)
	}
	defer tg.Close()
	f, _, err := tg.open("edit", tg.rel, os.O_RDWR, MaxFileSize)
	if err != nil {
		return failed(err)
	}
	data, err := readAll(ctx, f, "edit", tg.rel)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		f.Close()
		return failed(err)
	}
	content := string(data)
	if n := strings.Count(content, a.Old); n != 1 {
		f.Close()
		return failed(fmt.Errorf("edit %s: old text occurs %d times, want exactly 1", tg.rel, n))
	}
	content = strings.Replace(content, a.Old, a.New, 1)
	if err := replaceContent(f, []byte(content)); err != nil {
		return failed(fmt.Errorf("edit %s: %w", tg.rel, err))
	}
	return ok(fmt.Sprintf("edited %s", tg.rel), false)
}

func runListFiles(ctx context.Context, t *builtin, call Call) Result {
	var a struct {
		Path string `json:"path"`
	}
	if err := t.decode(call.Args, &a); err != nil {
		return failed(err)
	}
	tg, err := resolveTarget(call, cmp.Or(a.Path, "."))
	if err != nil {
		return failed(err)
	}
	defer tg.Close()
	var entries []string
	truncated := false
	w := walker{t: tg}
	err = w.walk(ctx, func(name string, typ fs.FileMode) error {
		if name == tg.rel && typ.IsDir() {
			return nil
		}
		if len(entries) == maxListEntries {
			truncated = true
			return fs.SkipAll
		}
		if typ.IsDir() {
			name += "/"
		}
		entries = append(entries, name)
		return nil
	})
	if err != nil {
		return failed(err)
	}
	var b strings.Builder
	if len(entries) == 0 {
		b.WriteString("(empty directory)\n")
	}
	slices.Sort(entries)
	for _, e := range entries {
		b.WriteString(e + "\n")
	}
	if truncated {
		fmt.Fprintf(&b, "[... listing stopped at %d entries; list a subdirectory ...]\n", maxListEntries)
	}
	w.writeNotes(&b)
	return ok(b.String(), truncated)
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
	tg, err := resolveTarget(call, cmp.Or(a.Path, "."))
	if err != nil {
		return failed(err)
	}
	defer tg.Close()
	var matches []grepMatch
	truncated := false
	w := walker{t: tg}
	err = w.walk(ctx, func(name string, typ fs.FileMode) error {
		switch {
		case typ.IsDir():
			return nil
		case typ&fs.ModeSymlink != 0:
			// Symlinks are not followed: their targets are searched where
			// they live, and a link out of the workspace is never read.
			return nil
		case !typ.IsRegular():
			w.note(fmt.Sprintf("skipped %s: not a regular file (%s)", name, vfs.Kind(typ)))
			return nil
		}
		found, more, err := grepFile(ctx, tg, name, re, maxGrepMatches-len(matches))
		var fe *fileError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &fe) && (errors.Is(err, ErrTooBig) || errors.Is(err, ErrNotRegular)):
			w.note("skipped " + name + ": " + fe.msg[:cmp.Or(strings.Index(fe.msg, ";"), len(fe.msg))])
			return nil
		case err != nil:
			return nil // an unreadable file is skipped, as grep -s does
		}
		matches = append(matches, found...)
		if more {
			truncated = true
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return failed(err)
	}
	var b strings.Builder
	if len(matches) == 0 {
		b.WriteString("(no matches)\n")
	}
	slices.SortFunc(matches, func(x, y grepMatch) int {
		return cmp.Or(strings.Compare(x.file, y.file), cmp.Compare(x.line, y.line))
	})
	for _, m := range matches {
		fmt.Fprintf(&b, "%s:%d: %s\n", m.file, m.line, m.text)
	}
	if truncated {
		fmt.Fprintf(&b, "[... stopped at %d matches; narrow the pattern or path ...]\n", maxGrepMatches)
	}
	w.writeNotes(&b)
	return ok(b.String(), truncated)
}

// grepFile returns up to limit matching lines of the text file name. more
// reports that there were further matches. Binary files have no matches;
// files that are not regular or are over MaxFileSize are refused with the
// errors of target.open.
func grepFile(ctx context.Context, tg *target, name string, re *regexp.Regexp, limit int) (found []grepMatch, more bool, err error) {
	f, _, err := tg.open("grep", name, os.O_RDONLY, MaxFileSize)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.LimitReader(ctxReader{ctx, f}, MaxFileSize), 64<<10)
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
