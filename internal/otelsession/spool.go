package otelsession

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/vfs"
)

// The spool keeps what an Ingester acknowledged and has not yet written
// into sessions. It is not a recorder log: an acknowledgement waits for
// it, so it holds the accepted part of each request as OTLP protobuf, as
// it came (no JSON mapping to make and parse again), in frames:
//
//	spool file  = spoolMagic frame*
//	frame       = kind (1 byte: 'T' traces, 'L' logs)
//	              length (uint32 LE, of payload)
//	              crc (uint32 LE, CRC-32C of kind and payload)
//	              payload (an ExportTraceServiceRequest or ExportLogsServiceRequest)
//
// Every string in a payload is redacted before it is framed, as a
// recorder log redacts every event (a secret in a span does not reach
// the disk, not even on its way to a session). Concurrent appends share
// one write and one fsync (group commit). A frame cut short at the end of
// the file is a write the crash interrupted, never acknowledged: reading
// stops there. A frame whose CRC fails with more bytes after it is
// damage, and reading says where.
const (
	spoolMagic    = "agentctl otlp spool 1\n"
	spoolName     = "requests.otlp"
	frameTraces   = 'T'
	frameLogs     = 'L'
	frameHeader   = 9
	maxFrameBytes = 1 << 30
	// spoolRollBytes is the size past which the next request starts a new
	// spool file, so that one file can be removed once its records are all
	// in sessions while the collector goes on taking spans.
	spoolRollBytes = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func frameCRC(kind byte, payload []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, []byte{kind}), castagnoli, payload)
}

// frameHeaderOf writes into h the header of payload's frame.
func frameHeaderOf(h []byte, kind byte, payload []byte) {
	h[0] = kind
	binary.LittleEndian.PutUint32(h[1:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[5:], frameCRC(kind, payload))
}

// spoolFile is one spool file being appended to, in its own folder under
// <home>/otlp-spool/ with a lease (so a second Ingester on the home, or
// the next start after a crash, can tell a live spool from a left one).
type spoolFile struct {
	dir    string
	f      *os.File
	lease  *recorder.Lease
	noSync bool

	mu       sync.Mutex
	cond     sync.Cond
	pending  [][]byte // frames of batch cur, not yet written: headers and their callers' payloads
	cur      uint64   // the batch pending belongs to
	done     uint64   // every batch <= done is durable
	flushing bool     // a leader is writing
	size     int64    // bytes written
	end      int64    // bytes written and queued: where the next frame goes
	err      error    // sticky: the file is retired after a failure
}

func createSpool(root string, noSync bool) (*spoolFile, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, hex.EncodeToString(rnd[:]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lease, err := recorder.AcquireLease(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, spoolName), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		_, err = f.WriteString(spoolMagic)
	}
	if err == nil && !noSync {
		err = errors.Join(f.Sync(), vfs.SyncDir(dir), vfs.SyncDir(root))
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		lease.Release()
		os.RemoveAll(dir)
		return nil, err
	}
	w := &spoolFile{dir: dir, f: f, lease: lease, noSync: noSync, cur: 1, size: int64(len(spoolMagic)), end: int64(len(spoolMagic))}
	w.cond.L = &w.mu
	return w, nil
}

// append writes one frame and returns once it is durable, with the
// offset of the frame in the file. Whoever finds no write in progress
// writes everything queued so far, with one fsync, while later callers
// queue behind it. payload is not copied (its caller waits until it is
// written), and may be reused once append returns.
func (w *spoolFile) append(kind byte, payload []byte) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	off := w.end
	h := make([]byte, frameHeader)
	frameHeaderOf(h, kind, payload)
	w.pending = append(w.pending, h, payload)
	w.end += frameHeader + int64(len(payload))
	mine := w.cur
	for w.done < mine {
		if w.err != nil {
			return 0, w.err
		}
		if w.flushing {
			w.cond.Wait()
			continue
		}
		w.flushing = true
		buf, batch := w.pending, w.cur
		w.pending, w.cur = nil, w.cur+1
		w.mu.Unlock()
		var err error
		n := int64(0)
		for _, p := range buf {
			if _, err = w.f.Write(p); err != nil {
				break
			}
			n += int64(len(p))
		}
		if err == nil && !w.noSync {
			err = w.f.Sync()
		}
		w.mu.Lock()
		w.flushing = false
		if err != nil {
			w.err = fmt.Errorf("write the spool %s: %w", w.dir, err)
		} else {
			w.done = batch
			w.size += n
		}
		w.cond.Broadcast()
	}
	return off, nil
}

// readFrame reads the payload of the frame at off, n bytes long, from the
// spool file f, checking it is that frame, into dst when it is large
// enough; it returns the payload and the buffer it is in.
func readFrame(f *os.File, off int64, n int, dst []byte) ([]byte, []byte, error) {
	b := dst[:0]
	if cap(b) < frameHeader+n {
		b = make([]byte, frameHeader+n)
	}
	b = b[:frameHeader+n]
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, b, fmt.Errorf("read the spool %s at %d: %w", f.Name(), off, err)
	}
	if int(binary.LittleEndian.Uint32(b[1:])) != n || frameCRC(b[0], b[frameHeader:]) != binary.LittleEndian.Uint32(b[5:]) {
		return nil, b, fmt.Errorf("the spool %s is damaged at byte %d", f.Name(), off)
	}
	return b[frameHeader:], b, nil
}

func (w *spoolFile) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil || w.size >= spoolRollBytes
}

func (w *spoolFile) close() error {
	err := w.f.Close()
	w.lease.Release()
	return err
}

// readSpool calls fn with each whole frame of the spool file at path, in
// order, with its offset, and stops without error at a frame the end of
// the file cuts short. payload is reused for the next frame.
func readSpool(path string, fn func(kind byte, off int64, payload []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(spoolMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return nil // created, never written to: nothing was acknowledged
	}
	if string(magic) != spoolMagic {
		return fmt.Errorf("%s is not an agentctl OTLP spool (it starts %q)", path, magic)
	}
	off := int64(len(spoolMagic))
	var h [frameHeader]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return nil // the end, or a header the crash cut
		}
		n := binary.LittleEndian.Uint32(h[1:])
		if (h[0] != frameTraces && h[0] != frameLogs) || n > maxFrameBytes {
			return fmt.Errorf("%s is damaged at byte %d (a frame header that is not one)", path, off)
		}
		if cap(payload) < int(n) {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			return nil // cut short by the crash: never acknowledged
		}
		if frameCRC(h[0], payload) != binary.LittleEndian.Uint32(h[5:]) {
			if _, err := r.Peek(1); err != nil {
				return nil // the last frame, torn
			}
			return fmt.Errorf("%s is damaged at byte %d (a frame's checksum does not match)", path, off)
		}
		if err := fn(h[0], off, payload); err != nil {
			return err
		}
		off += frameHeader + int64(n)
	}
}

// redactString sets *p to f(*p) only when that differs: a message
// without secrets is only read, so callers that share one (the same
// Resource in many requests) do not race.
func redactString(p *string, f func(string) string) {
	if *p == "" {
		return
	}
	if t := f(*p); t != *p {
		*p = t
	}
}

// redacted returns msg, or when any of its strings holds a secret, a
// copy with them replaced: the caller's request is never changed.
func redacted[M proto.Message](msg M, walk func(M, func(string) string), f func(string) string) M {
	found := false
	walk(msg, func(s string) string {
		if !found && f(s) != s {
			found = true
		}
		return s
	})
	if !found {
		return msg
	}
	c := proto.Clone(msg).(M)
	walk(c, f)
	return c
}

// The spool redacts with these typed walks over the OTLP messages, not
// with a reflective walk (spool_test.go's redactMessage), which reflects and costs a third of an
// acknowledgement; TestRedactWalksEveryString checks them against it on
// messages with every string field set.

func redactTraces(req *coltracepb.ExportTraceServiceRequest, f func(string) string) {
	for _, rs := range req.GetResourceSpans() {
		redactResource(rs.GetResource(), f)
		redactString(&rs.SchemaUrl, f)
		for _, ss := range rs.GetScopeSpans() {
			redactScope(ss.GetScope(), f)
			redactString(&ss.SchemaUrl, f)
			for _, s := range ss.GetSpans() {
				redactString(&s.TraceState, f)
				redactString(&s.Name, f)
				redactKVs(s.GetAttributes(), f)
				for _, e := range s.GetEvents() {
					redactString(&e.Name, f)
					redactKVs(e.GetAttributes(), f)
				}
				for _, l := range s.GetLinks() {
					redactString(&l.TraceState, f)
					redactKVs(l.GetAttributes(), f)
				}
				if st := s.GetStatus(); st != nil {
					redactString(&st.Message, f)
				}
			}
		}
	}
}

func redactLogs(req *collogspb.ExportLogsServiceRequest, f func(string) string) {
	for _, rl := range req.GetResourceLogs() {
		redactResource(rl.GetResource(), f)
		redactString(&rl.SchemaUrl, f)
		for _, sl := range rl.GetScopeLogs() {
			redactScope(sl.GetScope(), f)
			redactString(&sl.SchemaUrl, f)
			for _, l := range sl.GetLogRecords() {
				redactString(&l.SeverityText, f)
				redactString(&l.EventName, f)
				redactValue(l.GetBody(), f)
				redactKVs(l.GetAttributes(), f)
			}
		}
	}
}

func redactResource(r *resourcepb.Resource, f func(string) string) {
	if r == nil {
		return
	}
	redactKVs(r.GetAttributes(), f)
	for _, e := range r.GetEntityRefs() {
		redactString(&e.SchemaUrl, f)
		redactString(&e.Type, f)
		for i := range e.GetIdKeys() {
			redactString(&e.IdKeys[i], f)
		}
		for i := range e.GetDescriptionKeys() {
			redactString(&e.DescriptionKeys[i], f)
		}
	}
}

func redactScope(s *commonpb.InstrumentationScope, f func(string) string) {
	if s == nil {
		return
	}
	redactString(&s.Name, f)
	redactString(&s.Version, f)
	redactKVs(s.GetAttributes(), f)
}

func redactKVs(kvs []*commonpb.KeyValue, f func(string) string) {
	for _, kv := range kvs {
		redactString(&kv.Key, f)
		redactValue(kv.GetValue(), f)
	}
}

func redactValue(v *commonpb.AnyValue, f func(string) string) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		redactString(&x.StringValue, f)
	case *commonpb.AnyValue_ArrayValue:
		for _, e := range x.ArrayValue.GetValues() {
			redactValue(e, f)
		}
	case *commonpb.AnyValue_KvlistValue:
		redactKVs(x.KvlistValue.GetValues(), f)
	}
}
