package bundle

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentctl/agentctl/internal/redact"
)

// Redaction of the members. A bundle leaves the machine, so every member
// is redacted with what is known when it is made: the token formats, the
// secret-looking variables of the environment agentctl bundle runs in,
// and the values of the workspace's .env files. The secrets of the
// environment the session ran in are not known here unless it is the same
// one; the log and the artifacts were redacted with them when written.
//
//   - events (and so events.jsonl, events.parquet, last_state.json,
//     trace.json, tool_calls.csv) are redacted again field by field;
//   - checkpoints.jsonl, artifacts, progress files and workspace.diff line
//     by line; a binary patch in the diff, whose content git encodes, is
//     decoded and withheld when it holds a secret (a delta always);
//   - every file of workspace.tar.zst: .env* files with markers, others
//     overwritten length for length (redact.Filler) so that file sizes,
//     and the tar headers written before the content, stay true.
//
// Not found: a secret in a compressed file (.git/objects, a zip) or
// otherwise encoded.

// redactor is the Redactor of session id's members.
func (b *builder) redactor(id, ws string, wsOK bool) *redact.Redactor {
	secrets := redact.FromEnv(os.Environ())
	if wsOK {
		more, err := redact.FromDotEnv(ws)
		if err != nil {
			fmt.Fprintf(b.opts.Warn, "agentctl: warning: session %s: %v\n", id, err)
		}
		secrets = append(secrets, more...)
	}
	return redact.New(secrets...)
}

// redactedFile adds the file at p as member name, redacted line by line,
// through a temporary file.
func (b *builder) redactedFile(name, p string, red *redact.Redactor) error {
	return b.temp(name, func(w io.Writer) error {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rw := red.Writer(w)
		if _, err := io.Copy(rw, f); err != nil {
			return err
		}
		return rw.Close()
	})
}

// fillFile is the workspace archive's copy of a piece of a regular file
// (see wsWorker.entry): copyFile with every secret overwritten.
func (wk *wsWorker) fillFile(w io.Writer, e *wsEntry) error {
	f, err := openReaderAt(e.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if wk.filler == nil {
		wk.filler = wk.red.NewFiller()
	}
	err = wk.filler.CopyFill(w, f, e.off, e.n, e.hdr.Size)
	if err == redact.ErrShortFile {
		return fmt.Errorf("%s: %w", e.path, errShrank)
	}
	return err
}

// redactWriter passes w through r's line redaction, binary patches
// included (see lineRedactor).
func redactWriter(r *redact.Redactor, w io.Writer) io.Writer {
	return &lineRedactor{r: r, w: w}
}

// lineRedactor redacts a diff line by line; flush ends it (gitDiff calls
// it). The lines of a "GIT binary patch" are held until the patch ends
// (up to maxBinaryPatch bytes), decoded, and written as they are when the
// decoded content holds no secret, else replaced by a note (deltas
// always: see binaryPatchContent).
type lineRedactor struct {
	r      *redact.Redactor
	w      io.Writer
	buf    []byte
	binary []byte // the binary patch being held, from its first line
	over   bool   // the patch passed maxBinaryPatch: it is withheld
}

// maxBinaryPatch is the most of a binary patch held to be checked; a
// larger one is withheld whole.
const maxBinaryPatch = 16 << 20

const binaryPatchWithheld = "(binary patch withheld by agentctl bundle: its content holds a secret, or was too large to check; the file is in workspace.tar.zst, redacted)\n"

func (l *lineRedactor) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	start := 0
	for {
		i := bytes.IndexByte(l.buf[start:], '\n')
		if i < 0 {
			break
		}
		if err := l.line(l.buf[start : start+i+1]); err != nil {
			return 0, err
		}
		start += i + 1
	}
	l.buf = append(l.buf[:0], l.buf[start:]...)
	if len(l.buf) > 1<<20 && l.binary == nil { // a very long line: pass it on in pieces
		if _, err := io.WriteString(l.w, l.r.String(string(l.buf))); err != nil {
			return 0, err
		}
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func (l *lineRedactor) line(b []byte) error {
	if l.binary != nil {
		if !bytes.HasPrefix(b, []byte("diff --git ")) {
			if len(l.binary)+len(b) > maxBinaryPatch {
				l.over, l.binary = true, l.binary[:1]
			} else if !l.over {
				l.binary = append(l.binary, b...)
			}
			return nil
		}
		if err := l.endBinary(); err != nil {
			return err
		}
	}
	if string(b) == "GIT binary patch\n" {
		l.binary = append([]byte(nil), b...)
		return nil
	}
	_, err := io.WriteString(l.w, l.r.String(string(b)))
	return err
}

// endBinary writes the held binary patch, or the note in its place.
func (l *lineRedactor) endBinary() error {
	patch := l.binary
	l.binary = nil
	over := l.over
	l.over = false
	if !over {
		if content, ok := binaryPatchContent(patch); ok && !l.r.Holds(content) {
			_, err := l.w.Write(patch)
			return err
		}
	}
	_, err := io.WriteString(l.w, binaryPatchWithheld)
	return err
}

func (l *lineRedactor) flush() error {
	if len(l.buf) > 0 {
		if err := l.line(l.buf); err != nil {
			return err
		}
		l.buf = l.buf[:0]
	}
	if l.binary != nil {
		return l.endBinary()
	}
	return nil
}

// binaryPatchContent decodes the blocks of a git binary patch ("literal N"
// or "delta N", base85 lines, an empty line) and returns the literals'
// bytes. ok is false when the patch cannot be decoded, or has a delta: a
// delta inserts new bytes between copies of the old file's, and a secret
// that begins like old content is split by a copy, out of sight without
// the old blob (which would take running git on the agent's repository
// again), so a delta is never judged clean.
func binaryPatchContent(patch []byte) ([]byte, bool) {
	sc := bufio.NewScanner(bytes.NewReader(patch))
	sc.Buffer(nil, maxBinaryPatch)
	sc.Scan() // GIT binary patch
	var out []byte
	for sc.Scan() {
		if kind, _, _ := strings.Cut(sc.Text(), " "); kind != "literal" {
			return nil, false
		}
		var z []byte
		for sc.Scan() && sc.Text() != "" {
			line := sc.Text()
			n := 0
			switch c := line[0]; {
			case c >= 'A' && c <= 'Z':
				n = int(c-'A') + 1
			case c >= 'a' && c <= 'z':
				n = int(c-'a') + 27
			default:
				return nil, false
			}
			d, ok := base85(line[1:])
			if !ok || len(d) < n {
				return nil, false
			}
			z = append(z, d[:n]...)
		}
		zr, err := zlib.NewReader(bytes.NewReader(z))
		if err != nil {
			return nil, false
		}
		data, err := io.ReadAll(io.LimitReader(zr, 4*maxBinaryPatch))
		if err != nil {
			return nil, false
		}
		out = append(out, data...)
	}
	return out, true
}

const base85Chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// base85 decodes git's base85 (5 characters for 4 bytes).
func base85(s string) ([]byte, bool) {
	if len(s)%5 != 0 {
		return nil, false
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for _, c := range []byte(s[i : i+5]) {
			k := strings.IndexByte(base85Chars, c)
			if k < 0 {
				return nil, false
			}
			v = v*85 + uint64(k)
		}
		if v > 0xffffffff {
			return nil, false
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, true
}
