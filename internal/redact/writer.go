package redact

import (
	"bytes"
	"errors"
	"io"
	"regexp"
)

// maxLine is how much of a line without a newline a Writer holds before
// it redacts and passes on all but the last overlap bytes.
const (
	maxLine = 64 << 10
	overlap = 8 << 10
)

// Writer returns a writer that redacts what is written to it line by line
// before passing it to w. A PEM private key block is replaced as a whole.
// Close flushes the last partial line (and, in a key block with no end,
// drops the rest); it does not close w.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	return &writer{r: r, w: w}
}

type writer struct {
	r     *Redactor
	w     io.Writer
	buf   []byte
	inKey bool
	err   error
}

var (
	beginKey = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
	endKey   = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
)

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	start := 0
	// Whole lines are redacted in one batch, unless a key block is open
	// or starts in them.
	if last := bytes.LastIndexByte(w.buf, '\n'); last >= 0 && !w.inKey && !bytes.Contains(w.buf[:last+1], []byte("-----BEGIN")) {
		w.emit(w.r.String(string(w.buf[:last+1])))
		start = last + 1
	}
	for {
		i := bytes.IndexByte(w.buf[start:], '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[start : start+i+1]))
		start += i + 1
	}
	w.buf = append(w.buf[:0], w.buf[start:]...)
	if len(w.buf) > maxLine && !w.inKey {
		s := w.r.String(string(w.buf))
		if cut := len(s) - overlap; cut > 0 {
			w.emit(s[:cut])
			w.buf = append(w.buf[:0], s[cut:]...)
		} else {
			w.buf = append(w.buf[:0], s...)
		}
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

func (w *writer) line(line string) {
	if w.inKey {
		if loc := endKey.FindStringIndex(line); loc != nil {
			w.inKey = false
			w.line(line[loc[1]:])
		}
		return
	}
	if loc := beginKey.FindStringIndex(line); loc != nil && endKey.FindStringIndex(line[loc[1]:]) == nil {
		w.emit(w.r.String(line[:loc[0]]) + Marker("private_key"))
		w.inKey = true
		return
	}
	w.emit(w.r.String(line))
}

func (w *writer) emit(s string) {
	if w.err == nil && s != "" {
		_, w.err = io.WriteString(w.w, s)
	}
}

func (w *writer) Close() error {
	if len(w.buf) > 0 && !w.inKey {
		w.emit(w.r.String(string(w.buf)))
	}
	w.buf = nil
	return w.err
}

// fillContext is the least text CopyFill reads on each side of what it
// writes: a secret that crosses the edge of a piece is found whole as long
// as it is shorter (private key blocks and JWTs are a few KiB; known
// values longer than it widen it).
const (
	fillContext = 16 << 10
	fillChunk   = 128 << 10
)

// Filler copies pieces of files with every secret overwritten as Fill
// does, length for length. It holds its buffers; it is not safe for
// concurrent use.
type Filler struct {
	r        *Redactor
	buf, out []byte
}

// NewFiller returns a Filler of r's secrets.
func (r *Redactor) NewFiller() *Filler { return &Filler{r: r} }

// ErrShortFile is returned by CopyFill when src ends before off+n.
var ErrShortFile = errors.New("redact: the file is shorter than the piece to copy")

// CopyFill writes src[off:off+n] to w with every secret overwritten. It
// reads src from up to the context before off to up to the context after
// off+n (size is src's length), in chunks, so that a secret across either
// end, or across chunks, is overwritten just as in a read of the whole
// file; memory stays a few hundred KiB whatever n.
func (f *Filler) CopyFill(w io.Writer, src io.ReaderAt, off, n, size int64) error {
	ctx := int64(max(fillContext, f.r.MaxValue()+1))
	if need := int(2*ctx + fillChunk); cap(f.buf) < need {
		f.buf, f.out = make([]byte, need), make([]byte, need)
	}
	buf := f.buf[:cap(f.buf)]
	stop := off + n
	last := min(size, stop+ctx) // the end of what is read
	base := max(0, off-ctx)     // src offset of buf[0]
	have := 0                   // bytes of buf filled
	at := off                   // the next byte to write
	for at < stop {
		for have < len(buf) && base+int64(have) < last {
			want := min(int64(len(buf)-have), last-base-int64(have))
			k, err := src.ReadAt(buf[have:have+int(want)], base+int64(have))
			have += k
			if err == io.EOF || (err == nil && k == 0) {
				last = base + int64(have) // shrank: what there is is all
				break
			}
			if err != nil {
				return err
			}
		}
		end := base + int64(have)
		if end < stop && end == last {
			return ErrShortFile
		}
		// Write up to ctx before the end of what was read, unless that
		// is the end of the text: a secret across it is seen next time.
		until := min(stop, end)
		if end < last {
			until = min(stop, end-ctx)
		}
		part := buf[at-base : until-base]
		if sp := f.r.index().spans(buf[:have]); len(sp) == 0 {
			if _, err := w.Write(part); err != nil {
				return err
			}
		} else {
			o := f.out[:len(part)]
			copy(o, part)
			for _, x := range sp {
				s, e := base+int64(x.start), base+int64(x.end)
				if e <= at || s >= until {
					continue
				}
				fill := FillText(x.name, x.end-x.start)
				lo, hi := max(s, at), min(e, until)
				copy(o[lo-at:hi-at], fill[lo-s:hi-s])
			}
			if _, err := w.Write(o); err != nil {
				return err
			}
		}
		at = until
		// Keep ctx before the next byte to write, and what follows it.
		keep := max(base, at-ctx)
		copy(buf, buf[keep-base:have])
		have -= int(keep - base)
		base = keep
	}
	return nil
}
