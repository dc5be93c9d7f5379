package recorder

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/failpoint"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// Options configure a Writer.
type Options struct {
	// Clock stamps events whose TS is zero; time.Now if nil.
	Clock func() time.Time
	// NoSync skips fsync. Only for benchmarks and tests: an acknowledged
	// event is then not durable.
	NoSync bool
	// Redact returns the Redactor for the events of one Create or Append,
	// asked again for each, so that it can follow secrets that appear
	// while the log is written (a run's workspace .env files: see
	// redact.Live). Every string of every event passes through it before
	// it is encoded (session.Event.MapStrings), and Append returns the
	// events as written, redacted. Nil means the secrets of this process's
	// environment (redact.FromEnv) and the token formats: no log is
	// written without redaction.
	Redact func() *redact.Redactor
	// FS is where the log is written: vfs.OS if nil. Tests inject faults
	// and crashes through it (see package vfs). The lease stays on the
	// real filesystem (it needs a real descriptor for flock, and a crash
	// releases it anyway), and so do readers (ReadFile, ScanFile).
	FS vfs.FS
}

func (o Options) fs() vfs.FS { return vfs.Or(o.FS) }

// Redactors is how o redacts (Redact, or the default of a nil Redact,
// built once), for a writer of another format that must redact as the
// logs are: the OTLP spool.
func (o Options) Redactors() func() *redact.Redactor { return o.redactor() }

// redactor returns o.Redact, or the default of a nil Redact, built once.
func (o Options) redactor() func() *redact.Redactor {
	if o.Redact != nil {
		return o.Redact
	}
	r := redact.New(redact.FromEnv(os.Environ())...)
	return func() *redact.Redactor { return r }
}

// redactAll redacts evs in place with one Redactor.
func redactAll(red func() *redact.Redactor, evs []session.Event) {
	r := red()
	for i := range evs {
		evs[i].MapStrings(r.String)
	}
}

func (o Options) now() time.Time {
	if o.Clock != nil {
		return o.Clock()
	}
	return time.Now()
}

// Writer appends events to one log. It is safe for concurrent use; see the
// package doc for group commit and the failed state.
type Writer struct {
	path   string
	f      vfs.File
	opts   Options
	red    func() *redact.Redactor
	header session.Event // the first event, as Create wrote it

	mu       sync.Mutex
	cond     sync.Cond // signalled when a flush ends
	lastSeq  int64     // last seq handed out (durable or queued)
	size     int64     // bytes of the log that are durable (and acknowledged)
	pending  []byte    // frames queued for batch curBatch
	spare    []byte    // a drained buffer to reuse
	curBatch uint64    // the batch pending belongs to
	done     uint64    // every batch <= done is durable
	flushing bool      // a leader is writing
	err      error     // sticky failure
	closed   bool
}

func newWriter(path string, f vfs.File, lastSeq, size int64, opts Options) *Writer {
	w := &Writer{path: path, f: f, opts: opts, red: opts.redactor(), lastSeq: lastSeq, size: size, curBatch: 1}
	w.cond.L = &w.mu
	return w
}

// Create makes a new log at path, which must not exist, holding the file
// header and header as its first record (seq 1). The file is written under
// a temp name, fsync'd, linked to path and the directory fsync'd, so a log
// never exists without its first record; if Create fails, no log and no
// temp file are left (as far as the failing filesystem lets them be
// removed). header.Kind must be
// session_started or empty (then set to it); a zero TS is set from the clock.
// The header is redacted like every event (see Options.Redact); Header
// returns it as written.
func Create(path string, header session.Event, opts Options) (*Writer, error) {
	w, _, err := createWith(path, header, nil, opts)
	return w, err
}

// createWith is Create with the events after the header appended to the
// temp file before it is linked to path: a log made from events in hand
// (an import, a fork) then exists whole or not at all. A process killed
// while writing 24,000 imported events left a log of its header, which
// the next import took for the finished one. It returns rest as Append
// does.
func createWith(path string, header session.Event, rest []session.Event, opts Options) (*Writer, []session.Event, error) {
	if header.Kind == "" {
		header.Kind = session.KindSessionStarted
	}
	if header.Kind != session.KindSessionStarted {
		return nil, nil, fmt.Errorf("recorder: create %s: first event is %q, want %q", path, header.Kind, session.KindSessionStarted)
	}
	header.Seq = 1
	if header.TS.IsZero() {
		header.TS = opts.now()
	}
	red := opts.redactor()
	opts.Redact = red
	hs := []session.Event{header}
	redactAll(red, hs)
	header = hs[0]
	payload, err := encode(header)
	if err != nil {
		return nil, nil, fmt.Errorf("recorder: create %s: %w", path, err)
	}
	fsys := opts.fs()
	if _, err := fsys.Lstat(path); err == nil {
		return nil, nil, fmt.Errorf("recorder: create %s: %w", path, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("recorder: create %s: %w", path, err)
	}
	tmp := path + ".tmp-" + randHex(4)
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("recorder: create %s: %w", path, err)
	}
	linked := false // path names the file: undo that too on failure
	fail := func(err error) (*Writer, []session.Event, error) {
		f.Close()
		fsys.Remove(tmp)
		if linked {
			fsys.Remove(path)
		}
		return nil, nil, fmt.Errorf("recorder: create %s: %w", path, err)
	}
	first := appendFrame(fileHeader(), RecordEvent, payload)
	if _, err := f.Write(first); err != nil {
		return fail(err)
	}
	if err := syncFile(f, opts); err != nil {
		return fail(err)
	}
	w := newWriter(path, f, 1, int64(len(first)), opts)
	w.header = header
	var out []session.Event
	if len(rest) > 0 {
		if out, err = w.Append(rest...); err != nil {
			f.Close()
			fsys.Remove(tmp)
			// Not Append's own words: there is no writer to reopen.
			if cause := errors.Unwrap(err); cause != nil {
				err = cause
			}
			return nil, nil, fmt.Errorf("recorder: create %s: %w; nothing of it was kept", path, err)
		}
	}
	failpoint.Hit(FailpointEnv, FailCreateWritten)
	// Link fails if path exists, unlike rename. Where hard links are not
	// supported (EPERM, EOPNOTSUPP, ENOSYS), fall back to rename: the lease
	// keeps writers apart. Any other failure is one.
	if err := fsys.Link(tmp, path); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, fs.ErrPermission) {
		return fail(err)
	} else if err != nil {
		if err := fsys.Rename(tmp, path); err != nil {
			return fail(err)
		}
		linked = true
	} else {
		linked = true
		if err := fsys.Remove(tmp); err != nil {
			return fail(err)
		}
	}
	if err := syncDir(filepath.Dir(path), opts); err != nil {
		return fail(err)
	}
	return w, out, nil
}

// Header returns the first event as Create wrote it (with its seq, time
// and redactions); the zero Event for a Writer of OpenWriter.
func (w *Writer) Header() session.Event { return w.header }

// Recovery reports what OpenWriter did to a log with a torn tail.
type Recovery struct {
	Truncated  bool   // the torn tail was cut off
	TornBytes  int64  // bytes cut off
	GoodSize   int64  // the log's size after recovery
	BrokenCopy string // path of the copy of the original file
}

// OpenWriter opens an existing log to append to it, after checking it from
// start to end. A torn tail is cut back to the last good record, after the
// whole original file is copied to path+".broken"; Recovery reports it.
// Mid-log corruption returns a *CorruptError and leaves the file untouched.
// The caller must hold the session's lease.
func OpenWriter(path string, opts Options) (*Writer, Recovery, error) {
	return openWriter(path, opts, nil)
}

// openWriter is OpenWriter with check, which is given the log's last seq
// and size after it is read and before anything is recovered: an error
// from it is returned with the file untouched.
func openWriter(path string, opts Options, check func(lastSeq, size int64) error) (*Writer, Recovery, error) {
	f, err := opts.fs().OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, Recovery{}, fmt.Errorf("recorder: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Recovery{}, fmt.Errorf("recorder: open %s: %w", path, err)
	}
	evs, tail, err := readAll(io.NewSectionReader(f, 0, fi.Size()), path, fi.Size())
	if err != nil {
		f.Close()
		return nil, Recovery{}, err
	}
	var lastSeq int64
	if len(evs) > 0 {
		lastSeq = evs[len(evs)-1].Seq
	}
	if check != nil {
		if err := check(lastSeq, fi.Size()); err != nil {
			f.Close()
			return nil, Recovery{}, err
		}
	}
	var rec Recovery
	rec.GoodSize = tail.GoodSize
	if tail.Torn {
		rec.BrokenCopy, err = copyBroken(f, path, opts)
		if err != nil {
			f.Close()
			return nil, Recovery{}, fmt.Errorf("recorder: recover %s: %w", path, err)
		}
		if err := f.Truncate(tail.GoodSize); err != nil {
			f.Close()
			return nil, Recovery{}, fmt.Errorf("recorder: recover %s: %w", path, err)
		}
		if tail.GoodSize < int64(FileHeaderSize) {
			// Even the file header was torn (GoodSize is 0): write it again.
			if _, err := f.Write(fileHeader()); err != nil {
				f.Close()
				return nil, Recovery{}, fmt.Errorf("recorder: recover %s: %w", path, err)
			}
			rec.GoodSize = int64(FileHeaderSize)
		}
		if err := syncFile(f, opts); err != nil {
			f.Close()
			return nil, Recovery{}, fmt.Errorf("recorder: recover %s: %w", path, err)
		}
		rec.Truncated = true
		rec.TornBytes = tail.FileSize - tail.GoodSize
	}
	return newWriter(path, f, lastSeq, rec.GoodSize, opts), rec, nil
}

// copyBroken copies the whole of f to a new path+".broken" file (".broken.2"
// and so on if that exists) through a vfs.AtomicFile (temp, fsync, rename,
// and a directory fsync), and returns its name.
func copyBroken(f vfs.File, path string, opts Options) (string, error) {
	fsys := opts.fs()
	name := path + ".broken"
	for i := 2; ; i++ {
		if _, err := fsys.Lstat(name); errors.Is(err, os.ErrNotExist) {
			break
		} else if err != nil {
			return "", err
		}
		name = fmt.Sprintf("%s.broken.%d", path, i)
	}
	out, err := vfs.CreateAtomic(fsys, name, 0o644, opts.NoSync)
	if err != nil {
		return "", err
	}
	defer out.Abort()
	if _, err := io.Copy(out, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return "", err
	}
	return name, out.Commit()
}

// Append redacts each event (Options.Redact), stamps it with the next seq
// and, if its TS is zero, the clock's time, writes them as one batch, and
// returns after they are durable, with the events as written. Concurrent calls are allowed and
// share writes and fsyncs; the events of one call are contiguous.
//
// An event that cannot be encoded, or is larger than MaxRecordSize, fails
// the call and nothing of it is written. A failed write or fsync fails the
// call and the Writer: every later Append returns the same error, and the
// log is cut back to its acknowledged events (the bytes of the failed
// batch, whole or torn, are truncated away), so that it reopens to exactly
// the events whose Append returned nil. Only if that truncation fails too
// may the failed batch, or a torn tail that OpenWriter cuts, remain.
func (w *Writer) Append(evs ...session.Event) ([]session.Event, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	out := make([]session.Event, len(evs))
	copy(out, evs)
	redactAll(w.red, out)
	payloads := make([][]byte, len(out))

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	if w.closed {
		return nil, fmt.Errorf("recorder: append to %s: %w", w.path, ErrClosed)
	}
	now := time.Time{}
	for i := range out {
		out[i].Seq = w.lastSeq + 1 + int64(i)
		if out[i].TS.IsZero() {
			if now.IsZero() {
				now = w.opts.now()
			}
			out[i].TS = now
		}
		p, err := encode(out[i])
		if err != nil {
			return nil, fmt.Errorf("recorder: append to %s: %w", w.path, err)
		}
		payloads[i] = p
	}
	for _, p := range payloads {
		w.pending = appendFrame(w.pending, RecordEvent, p)
	}
	w.lastSeq += int64(len(out))
	mine := w.curBatch

	for w.done < mine && w.err == nil {
		if w.flushing {
			w.cond.Wait()
			continue
		}
		// Lead: write and sync everything queued so far.
		w.flushing = true
		buf, batch := w.pending, w.curBatch
		w.pending, w.spare = w.spare[:0], nil
		w.curBatch++
		w.mu.Unlock()
		err := w.flush(buf)
		w.mu.Lock()
		w.flushing = false
		if err == nil {
			w.size += int64(len(buf))
		}
		// Keep a small buffer for the next batch (a run appends an event
		// or a few at a time); a large one (an import's, a collected
		// trace's) would stay with every open log, and collect keeps
		// many open.
		if cap(buf) <= 64<<10 {
			w.spare = buf[:0]
		}
		if err != nil {
			w.err = fmt.Errorf("recorder: append to %s: %w (the writer is failed; reopen the log to continue)", w.path, err)
		} else {
			w.done = batch
		}
		w.cond.Broadcast()
	}
	if w.done >= mine {
		return out, nil
	}
	return nil, w.err
}

// flush writes and syncs buf at the end of the log. On failure it cuts the
// log back to w.size (only the leader writes, so nothing else is past it):
// a short write would otherwise leave a torn frame, and a failed fsync a
// whole batch that was never acknowledged.
func (w *Writer) flush(buf []byte) error {
	_, err := w.f.Write(buf)
	if err == nil {
		err = syncFile(w.f, w.opts)
	}
	if err != nil {
		if terr := w.f.Truncate(w.size); terr != nil {
			return fmt.Errorf("%w; cutting the failed batch off failed too: %v", err, terr)
		}
		syncFile(w.f, w.opts) // best effort: the cut is durable or the batch was not
	}
	return err
}

// LastSeq returns the seq of the last event appended (or queued by an
// Append in progress); 0 for an empty log.
func (w *Writer) LastSeq() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastSeq
}

// Path returns the log's path.
func (w *Writer) Path() string { return w.path }

// Close waits for appends in progress and closes the file. Close of a
// closed Writer returns nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.flushing || (len(w.pending) > 0 && w.err == nil) {
		w.cond.Wait()
	}
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("recorder: close %s: %w", w.path, err)
	}
	return nil
}

// encode returns the JSON of ev, checked against MaxRecordSize. An event
// read with an unknown kind keeps its raw JSON, with seq and ts replaced.
func encode(ev session.Event) ([]byte, error) {
	var b []byte
	var err error
	if len(ev.Raw) > 0 {
		b, err = encodeRaw(ev)
	} else {
		b, err = session.Encode(ev)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > MaxRecordSize {
		return nil, fmt.Errorf("%s event of %d bytes: %w", ev.Kind, len(b), ErrTooLarge)
	}
	return b, nil
}

func encodeRaw(ev session.Event) ([]byte, error) {
	var head struct {
		Seq int64     `json:"seq"`
		TS  time.Time `json:"ts"`
	}
	if json.Unmarshal(ev.Raw, &head) == nil && head.Seq == ev.Seq && head.TS.Equal(ev.TS) {
		return ev.Raw, nil // byte for byte
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ev.Raw, &m); err != nil {
		return nil, fmt.Errorf("encode %s event: %w", ev.Kind, err)
	}
	seq, _ := json.Marshal(ev.Seq)
	ts, err := json.Marshal(ev.TS)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", ev.Kind, err)
	}
	m["seq"], m["ts"] = seq, ts
	return json.Marshal(m)
}

func syncFile(f vfs.File, opts Options) error {
	if opts.NoSync {
		return nil
	}
	return f.Sync()
}

func syncDir(dir string, opts Options) error {
	if opts.NoSync {
		return nil
	}
	return opts.fs().SyncDir(dir)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
