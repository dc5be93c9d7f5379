package recorder

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/agentctl/agentctl/internal/session"
)

// Wire-format constants; see the package doc.
const (
	// Magic starts every log file.
	Magic = "AGCTLOG\x00"
	// Version is the format version this package writes and reads.
	Version = 1
	// FileHeaderSize is the size of magic plus version.
	FileHeaderSize = len(Magic) + 4
	// FrameHeaderSize is the size of length, crc and type.
	FrameHeaderSize = 4 + 4 + 1
	// MaxRecordSize is the largest payload a frame may carry.
	MaxRecordSize = 16 << 20

	// RecordInvalid is reserved: zeroed space never reads as a record.
	RecordInvalid byte = 0
	// RecordEvent is a frame whose payload is one session.Event as JSON.
	RecordEvent byte = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileHeader returns the 12 bytes every log starts with.
func fileHeader() []byte {
	b := make([]byte, 0, FileHeaderSize)
	b = append(b, Magic...)
	return binary.LittleEndian.AppendUint32(b, Version)
}

func frameCRC(typ byte, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, []byte{typ})
	return crc32.Update(c, castagnoli, payload)
}

// appendFrame appends one frame holding payload to dst.
func appendFrame(dst []byte, typ byte, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, frameCRC(typ, payload))
	dst = append(dst, typ)
	return append(dst, payload...)
}

// findFrame returns the index of the first valid event frame that starts in
// b, or -1. Valid means: type 1, length within MaxRecordSize, the whole
// payload inside b, and a matching checksum.
func findFrame(b []byte) int {
	for i := 0; i+FrameHeaderSize <= len(b); i++ {
		if b[i+8] != RecordEvent {
			continue
		}
		n := int(binary.LittleEndian.Uint32(b[i:]))
		if n > MaxRecordSize || n > len(b)-i-FrameHeaderSize {
			continue
		}
		if frameCRC(RecordEvent, b[i+FrameHeaderSize:i+FrameHeaderSize+n]) == binary.LittleEndian.Uint32(b[i+4:]) {
			return i
		}
	}
	return -1
}

// Reader reads the events of a log in order. It is not safe for concurrent
// use.
//
// Next returns each event in turn and then exactly one terminal error, which
// it keeps returning: io.EOF at a clean end, an error matching ErrTornTail
// at a torn tail, an error matching ErrCorrupt (a *CorruptError) for mid-log
// corruption, or an error matching ErrUnsupportedVersion or an I/O error.
type Reader struct {
	r       *bufio.Reader
	path    string // for errors only
	off     int64  // end of the last good record
	started bool   // file header read
	lastSeq int64
	buf     []byte
	err     error
}

// NewReader returns a Reader of the log whose bytes r yields from the start
// (file header included).
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10)}
}

// ResumeReader returns a Reader that goes on from where an earlier Reader
// of the same log stood: r yields the log's bytes from off on, off being
// that Reader's Offset just after it returned the event of seq lastSeq. A
// long-lived reader that kept a few such points (a sparse seq to offset
// index) reads a late page of a long log without reading it again from the
// start. Every record from off on gets Next's checks, the seq following
// lastSeq included, so a point that no longer fits the file (one cut back
// and written again) reads as an error, never as other events.
func ResumeReader(r io.Reader, off, lastSeq int64) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), off: off, started: true, lastSeq: lastSeq}
}

// Offset returns the end of the last good record (or of the file header):
// after a torn tail, the size to truncate the log to.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next event. See Reader for the errors.
func (r *Reader) Next() (session.Event, error) {
	if r.err != nil {
		return session.Event{}, r.err
	}
	ev, err := r.next()
	if err != nil {
		r.err = err
	}
	return ev, err
}

func (r *Reader) corrupt(off int64, format string, args ...any) error {
	return &CorruptError{Path: r.path, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

func (r *Reader) torn(reason string) error {
	return fmt.Errorf("%w at offset %d: %s", ErrTornTail, r.off, reason)
}

func (r *Reader) ioErr(err error) error {
	return fmt.Errorf("recorder: read %s: %w", r.name(), err)
}

// readFull is io.ReadFull that reports how much it read, with io.EOF and
// io.ErrUnexpectedEOF turned into a nil error.
func readFull(r io.Reader, b []byte) (int, error) {
	n, err := io.ReadFull(r, b)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// headerFault is what is wrong with a log's file header.
type headerFault int

const (
	headerOK headerFault = iota
	headerTorn
	headerBadMagic
	headerBadVersion
)

// checkHeader judges h, the first bytes of a log (all of them when there
// are fewer than FileHeaderSize): a short header that is a prefix of a good
// one is torn, anything else short or with another magic is not a log, and
// a full header must carry this Version (returned when it does not).
func checkHeader(h []byte) (headerFault, uint32) {
	want := fileHeader()
	m := min(len(h), len(Magic))
	switch {
	case len(h) < FileHeaderSize && bytes.Equal(h, want[:len(h)]):
		return headerTorn, 0
	case len(h) < len(Magic) || !bytes.Equal(h[:m], want[:m]):
		return headerBadMagic, 0
	case len(h) < FileHeaderSize:
		return headerTorn, 0
	}
	if v := binary.LittleEndian.Uint32(h[len(Magic):]); v != Version {
		return headerBadVersion, v
	}
	return headerOK, 0
}

// logErrs is how the streaming Reader and the in-memory frames report
// what they find, so both judge a log by the same checks below.
type logErrs interface {
	torn(reason string) error
	corrupt(off int64, format string, args ...any) error
	name() string
}

// headerErr is the error for a log whose first bytes are h, nil if good.
func headerErr(l logErrs, h []byte) error {
	switch fault, v := checkHeader(h); fault {
	case headerTorn:
		return l.torn("file header incomplete")
	case headerBadMagic:
		return l.corrupt(0, "not an agentctl log (bad magic %q)", h[:min(len(h), len(Magic))])
	case headerBadVersion:
		return fmt.Errorf("recorder: read %s: version %d: %w", l.name(), v, ErrUnsupportedVersion)
	}
	return nil
}

// frameFault says why a whole frame (type typ, checksum sum, payload) is
// bad, "" if it is not; whether that is a torn tail or corruption depends
// on what follows it (the readers' bad methods).
func frameFault(typ byte, sum uint32, payload []byte) string {
	switch {
	case typ == RecordInvalid && len(payload) == 0 && sum == 0:
		return "zero frame"
	case typ == RecordInvalid:
		return "invalid record type 0"
	case frameCRC(typ, payload) != sum:
		return "checksum mismatch"
	}
	return ""
}

// recordErr judges a checksum-valid record at start: its type, the
// decoding of its event (ev, decErr, done only for an event record) and
// its seq after last.
func recordErr(l logErrs, start int64, typ byte, ev session.Event, decErr error, last int64) error {
	switch {
	case typ != RecordEvent:
		return l.corrupt(start, "unknown record type %d", typ)
	case decErr != nil:
		return l.corrupt(start, "checksum-valid record does not decode: %v", decErr)
	case ev.Seq != last+1:
		return l.corrupt(start, "record has seq %d, want %d", ev.Seq, last+1)
	}
	return nil
}

func (r *Reader) next() (session.Event, error) {
	if !r.started {
		h := make([]byte, FileHeaderSize)
		n, err := readFull(r.r, h)
		if err != nil {
			return session.Event{}, r.ioErr(err)
		}
		if err := headerErr(r, h[:n]); err != nil {
			return session.Event{}, err
		}
		r.started = true
		r.off = int64(FileHeaderSize)
	}

	start := r.off
	var fh [FrameHeaderSize]byte
	n, err := readFull(r.r, fh[:])
	switch {
	case err != nil:
		return session.Event{}, r.ioErr(err)
	case n == 0:
		return session.Event{}, io.EOF
	case n < FrameHeaderSize:
		return session.Event{}, r.torn("frame header incomplete")
	}
	length := binary.LittleEndian.Uint32(fh[0:])
	sum := binary.LittleEndian.Uint32(fh[4:])
	typ := fh[8]
	if length > MaxRecordSize {
		return session.Event{}, r.bad(start, fh[:], nil, fmt.Sprintf("record length %d exceeds maximum %d", length, MaxRecordSize))
	}
	if cap(r.buf) < int(length) {
		r.buf = make([]byte, length)
	}
	payload := r.buf[:length]
	n, err = readFull(r.r, payload)
	switch {
	case err != nil:
		return session.Event{}, r.ioErr(err)
	case n < len(payload):
		return session.Event{}, r.bad(start, fh[:], payload[:n], fmt.Sprintf("record of %d bytes runs past the end of the file (%d present)", length, n))
	}
	if reason := frameFault(typ, sum, payload); reason != "" {
		return session.Event{}, r.bad(start, fh[:], payload, reason)
	}
	var ev session.Event
	if typ == RecordEvent {
		ev, err = session.Decode(payload)
	}
	if err := recordErr(r, start, typ, ev, err, r.lastSeq); err != nil {
		return session.Event{}, err
	}
	r.lastSeq = ev.Seq
	r.off = start + FrameHeaderSize + int64(length)
	return ev, nil
}

func (r *Reader) name() string {
	if r.path == "" {
		return "log"
	}
	return r.path
}

// bad decides whether the bad frame at start (whose bytes read so far are
// head and body) is a torn tail or corruption: it is corruption if a valid
// frame starts anywhere after the bad frame's first byte.
func (r *Reader) bad(start int64, head, body []byte, reason string) error {
	rest := make([]byte, 0, len(head)+len(body))
	rest = append(rest, head...)
	rest = append(rest, body...)
	more, err := io.ReadAll(r.r)
	if err != nil {
		return r.ioErr(err)
	}
	rest = append(rest, more...)
	if i := findFrame(rest[1:]); i >= 0 {
		return r.corrupt(start, "%s (a valid record follows at offset %d)", reason, start+1+int64(i))
	}
	return r.torn(reason)
}

// Tail describes how a log read by ReadFile ends.
type Tail struct {
	// Torn is set when the log ends with a torn record (see the package
	// doc); the events returned are those before it.
	Torn bool
	// GoodSize is the end of the last good record: the file size after
	// recovery. On corruption it is the offset of the damage.
	GoodSize int64
	// FileSize is the size of the file as read.
	FileSize int64
}

// ReadFile reads a whole log without modifying it. At a torn tail it returns
// the good events and a Tail with Torn set, and a nil error. On mid-log
// corruption it returns the events before the damage and a *CorruptError.
//
// The file is read whole and its records decoded in place by a
// session.Decoder; the events' strings are copies, so keeping one keeps no
// more than itself.
func ReadFile(path string) ([]session.Event, Tail, error) {
	data, size, err := readWhole(path, nil)
	if err != nil {
		return nil, Tail{}, err
	}
	return readBytes(data, path, size, false)
}

// ScanFile reads the log at path as ReadFile does (same checks, same Tail
// and errors) but hands each good event to fn in order instead of
// returning them, so a caller that folds a log never holds all its events
// at once. It returns how many events fn received. Events reach fn before
// the read knows how the log ends: on an error, discard what fn built.
//
// The events' strings share the buffer the file was read into (it is never
// written again), which saves an allocation per field: a string kept after
// ScanFile returns keeps the whole buffer alive, so strings.Clone what
// outlives the fold.
func ScanFile(path string, fn func(session.Event)) (int, Tail, error) {
	n, tail, _, err := ScanFileInto(path, nil, fn)
	return n, tail, err
}

// ScanFileInto is ScanFile reading the file into buf when it is large
// enough (else into a new buffer), and returning the buffer it used. The
// events' strings alias that buffer: a caller that folds many logs one
// after the other may pass it back for the next log (sparing an
// allocation, its clearing and its page faults per log) only once nothing
// it kept from the events refers to it.
func ScanFileInto(path string, buf []byte, fn func(session.Event)) (int, Tail, []byte, error) {
	data, size, err := readWhole(path, buf)
	if err != nil {
		return 0, Tail{}, buf, err
	}
	fr := newFrames(data, path, true)
	n := 0
	for {
		ev, err := fr.next()
		if err == nil {
			fn(ev)
			n++
			continue
		}
		tail, err := readEnd(err, fr.off, size)
		return n, tail, data, err
	}
}

// StreamFile is ScanFile reading the log a record at a time: it holds one
// record and a 64 KiB buffer whatever the log's size, where ScanFile holds
// the whole file, and the events' strings are copies. It is for callers
// that read logs nothing bounds and keep little of each event, such as
// listing and querying the sessions of a home (one session of a million
// events is a log of hundreds of MiB).
func StreamFile(path string, fn func(session.Event)) (int, Tail, error) {
	f, size, err := openSized(path)
	if err != nil {
		return 0, Tail{}, fmt.Errorf("recorder: read log: %w", err)
	}
	defer f.close()
	// A writer may be appending: read what was there at the open. A
	// short log gets a buffer of its size.
	rd := &Reader{r: bufio.NewReaderSize(io.LimitReader(f, size), int(min(size+16, 64<<10))), path: path}
	n := 0
	for {
		ev, err := rd.Next()
		if err == nil {
			fn(ev)
			n++
			continue
		}
		tail, err := readEnd(err, rd.Offset(), size)
		return n, tail, err
	}
}

// readWhole returns the bytes of the file at path (in buf if it is large
// enough), at most the size seen when it was opened (a writer may be
// appending), and that size.
func readWhole(path string, buf []byte) ([]byte, int64, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, 0, fmt.Errorf("recorder: read log: %w", err)
	}
	defer f.close()
	data := buf
	if int64(cap(data)) < size {
		data = make([]byte, size)
	}
	data = data[:size]
	n, err := readFull(f, data)
	if err != nil {
		return nil, 0, fmt.Errorf("recorder: read %s: %w", path, err)
	}
	return data[:n], size, nil
}

// readAll reads every event from r, which yields size bytes.
func readAll(r io.Reader, path string, size int64) ([]session.Event, Tail, error) {
	rd := NewReader(r)
	rd.path = path
	// Events are large structs: growing the slice by doubling copies them
	// again and again. Guess the count from the size (records are rarely
	// under 128 bytes) so a typical log is read with one allocation.
	evs := make([]session.Event, 0, min(size/128+1, 1<<20))
	for {
		ev, err := rd.Next()
		if err == nil {
			evs = append(evs, ev)
			continue
		}
		tail, err := readEnd(err, rd.Offset(), size)
		return evs, tail, err
	}
}

// readEnd turns the terminal error of a read into the Tail and error that
// ReadFile returns.
func readEnd(err error, off, size int64) (Tail, error) {
	tail := Tail{GoodSize: off, FileSize: size}
	var ce *CorruptError
	switch {
	case errors.Is(err, io.EOF):
		return tail, nil
	case errors.Is(err, ErrTornTail):
		tail.Torn = true
		return tail, nil
	case errors.As(err, &ce):
		tail.GoodSize = ce.Offset
	}
	return tail, err
}

// readBytes is readAll of a log held whole in data (size is the file size
// to report). With shared set the events' strings share data, which the
// caller must never modify afterwards.
func readBytes(data []byte, path string, size int64, shared bool) ([]session.Event, Tail, error) {
	fr := newFrames(data, path, shared)
	evs := make([]session.Event, 0, countFrames(data))
	for {
		ev, err := fr.next()
		if err == nil {
			evs = append(evs, ev)
			continue
		}
		tail, err := readEnd(err, fr.off, size)
		return evs, tail, err
	}
}

// countFrames returns how many frames data holds if every length in it is
// right: an upper bound on the events a read of it returns, found without
// checksums or decoding, to size the slice of events once.
func countFrames(data []byte) int {
	n := 0
	for off := FileHeaderSize; off+FrameHeaderSize <= len(data); n++ {
		length := int(binary.LittleEndian.Uint32(data[off:]))
		if length > MaxRecordSize {
			return n + 1
		}
		off += FrameHeaderSize + length
	}
	return n + 1
}

// frames is Reader over a log held in memory: the same checks in the same
// order with the same errors, but records are decoded in place (their
// strings sharing data if shared). Not safe for concurrent use.
type frames struct {
	data    []byte
	path    string
	off     int64 // end of the last good record
	started bool
	lastSeq int64
	dec     session.Decoder
	err     error
}

func newFrames(data []byte, path string, shared bool) *frames {
	return &frames{data: data, path: path, dec: session.Decoder{Shared: shared}}
}

func (r *frames) next() (session.Event, error) {
	if r.err != nil {
		return session.Event{}, r.err
	}
	ev, err := r.read()
	if err != nil {
		r.err = err
	}
	return ev, err
}

func (r *frames) name() string {
	if r.path == "" {
		return "log"
	}
	return r.path
}

func (r *frames) corrupt(off int64, format string, args ...any) error {
	return &CorruptError{Path: r.path, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

func (r *frames) torn(reason string) error {
	return fmt.Errorf("%w at offset %d: %s", ErrTornTail, r.off, reason)
}

// bad is Reader.bad: the bad frame at start is corruption if a valid frame
// starts anywhere after its first byte, else a torn tail.
func (r *frames) bad(start int64, reason string) error {
	if i := findFrame(r.data[start+1:]); i >= 0 {
		return r.corrupt(start, "%s (a valid record follows at offset %d)", reason, start+1+int64(i))
	}
	return r.torn(reason)
}

func (r *frames) read() (session.Event, error) {
	data := r.data
	if !r.started {
		n := min(len(data), FileHeaderSize)
		h := data[:n]
		if err := headerErr(r, h); err != nil {
			return session.Event{}, err
		}
		r.started = true
		r.off = int64(FileHeaderSize)
	}

	start := r.off
	rest := data[start:]
	switch {
	case len(rest) == 0:
		return session.Event{}, io.EOF
	case len(rest) < FrameHeaderSize:
		return session.Event{}, r.torn("frame header incomplete")
	}
	length := binary.LittleEndian.Uint32(rest[0:])
	sum := binary.LittleEndian.Uint32(rest[4:])
	typ := rest[8]
	if length > MaxRecordSize {
		return session.Event{}, r.bad(start, fmt.Sprintf("record length %d exceeds maximum %d", length, MaxRecordSize))
	}
	body := rest[FrameHeaderSize:]
	if int64(len(body)) < int64(length) {
		return session.Event{}, r.bad(start, fmt.Sprintf("record of %d bytes runs past the end of the file (%d present)", length, len(body)))
	}
	payload := body[:length:length]
	if reason := frameFault(typ, sum, payload); reason != "" {
		return session.Event{}, r.bad(start, reason)
	}
	var ev session.Event
	var err error
	if typ == RecordEvent {
		ev, err = r.dec.Decode(payload)
	}
	if err := recordErr(r, start, typ, ev, err, r.lastSeq); err != nil {
		return session.Event{}, err
	}
	r.lastSeq = ev.Seq
	r.off = start + FrameHeaderSize + int64(length)
	return ev, nil
}
