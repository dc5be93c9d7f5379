package proxy

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// Sink is where the events of one conversation go: a session log and its
// artifacts folder. recorder.Session is the real one (NewSessionSink);
// MemSink keeps everything in memory.
type Sink interface {
	// SessionID is the session the events belong to.
	SessionID() string
	// Append appends events durably (recorder.Writer.Append: seq and ts
	// are set, strings redacted) and returns them as written. The proxy
	// calls it from one goroutine per conversation at a time.
	Append(evs ...session.Event) ([]session.Event, error)
	// AppendArtifact appends parts to the append-only file name in the
	// session's artifacts folder and returns a reference to each part as
	// events record it ("artifacts/<name>#<offset>+<length>") and sync,
	// which makes them durable (one fsync for all). The proxy runs sync
	// concurrently with the Append of the events that name the parts and
	// answers the client only when both are done, so a call costs the
	// time of one fsync, not two; a crash between the two can leave an
	// event naming bytes that are not there, which ReadArtifact reports
	// as torn (replay then renders that answer from its events). One
	// append-only file per session rather than a file per body: a new
	// file would need its folder synced too. Safe for concurrent use;
	// after a failed write or sync the sink's artifacts stay failed, since
	// offsets past the failure are unknown.
	AppendArtifact(name string, parts ...[]byte) (refs []string, sync func() error, err error)
	// ReadArtifact reads back what an event references.
	ReadArtifact(ref string) ([]byte, error)
}

// SessionSink is a Sink over a session open for writing.
type SessionSink struct {
	S *recorder.Session

	mu    sync.Mutex
	files map[string]*artifactFile
	err   error // sticky failure of an artifact write
}

type artifactFile struct {
	f    *os.File
	size int64
}

var _ Sink = (*SessionSink)(nil)

// NewSessionSink returns the Sink of s; the caller keeps owning s (and
// closes it).
func NewSessionSink(s *recorder.Session) *SessionSink { return &SessionSink{S: s} }

// SessionID returns the session's id.
func (s *SessionSink) SessionID() string { return s.S.ID }

// Append appends to the session's log.
func (s *SessionSink) Append(evs ...session.Event) ([]session.Event, error) {
	return s.S.Append(evs...)
}

// AppendArtifact appends to the artifact file; sync fsyncs it (the
// folder was fsync'd when the file was created).
func (s *SessionSink) AppendArtifact(name string, parts ...[]byte) ([]string, func() error, error) {
	if !plainName(name) {
		return nil, nil, fmt.Errorf("proxy: artifact name %q: want a plain file name", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, nil, s.err
	}
	af, err := s.open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: append artifact %s: %w", name, err)
	}
	var buf []byte
	refs := make([]string, len(parts))
	off := af.size
	for i, p := range parts {
		refs[i] = fmt.Sprintf("%s/%s#%d+%d", recorder.ArtifactsDir, name, off, len(p))
		buf = append(buf, p...)
		off += int64(len(p))
	}
	if _, err := af.f.Write(buf); err != nil {
		s.err = fmt.Errorf("proxy: append artifact %s: %w", name, err)
		return nil, nil, s.err
	}
	af.size = off
	f := af.f
	sync := func() error {
		if err := f.Sync(); err != nil {
			s.mu.Lock()
			s.err = fmt.Errorf("proxy: sync artifact %s: %w", name, err)
			s.mu.Unlock()
			return err
		}
		return nil
	}
	return refs, sync, nil
}

func (s *SessionSink) open(name string) (*artifactFile, error) {
	if af := s.files[name]; af != nil {
		return af, nil
	}
	dir := filepath.Join(s.S.Dir, recorder.ArtifactsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := vfs.SyncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	if s.files == nil {
		s.files = map[string]*artifactFile{}
	}
	af := &artifactFile{f: f, size: fi.Size()}
	s.files[name] = af
	return af, nil
}

// Close closes the artifact files. It never closes the session: its owner
// does.
func (s *SessionSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, af := range s.files {
		if err := af.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}

func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}

// ReadArtifact reads an artifact of the session; see ReadArtifact.
func (s *SessionSink) ReadArtifact(rel string) ([]byte, error) {
	return ReadArtifact(s.S.Dir, rel)
}

// maxArtifactRead caps what one reference may read: the log naming it may
// come from elsewhere.
const maxArtifactRead = 256 << 20

// parseRef splits "artifacts/<name>[#<offset>+<length>]".
func parseRef(ref string) (name string, off, n int64, ranged bool, err error) {
	path, rng, ranged := strings.Cut(ref, "#")
	name, ok := strings.CutPrefix(path, recorder.ArtifactsDir+"/")
	if !ok || !plainName(name) {
		return "", 0, 0, false, fmt.Errorf("proxy: artifact %q: want artifacts/<name>", ref)
	}
	if ranged {
		o, l, ok := strings.Cut(rng, "+")
		var e1, e2 error
		off, e1 = strconv.ParseInt(o, 10, 64)
		n, e2 = strconv.ParseInt(l, 10, 64)
		if !ok || e1 != nil || e2 != nil || off < 0 || n < 0 || n > maxArtifactRead {
			return "", 0, 0, false, fmt.Errorf("proxy: artifact %q: want #<offset>+<length> (at most %d bytes)", ref, maxArtifactRead)
		}
	}
	return name, off, n, ranged, nil
}

// ReadArtifact reads the artifact ref (as an event names it) of the
// session folder dir. The log may come from elsewhere, so ref must name a
// plain file directly in the artifacts folder: anything else (an absolute
// path, "..", a subfolder, a symlink) is refused, as is a range past the
// end of the file (a torn artifact).
func ReadArtifact(dir, ref string) ([]byte, error) {
	name, off, n, ranged, err := parseRef(ref)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(filepath.Join(dir, recorder.ArtifactsDir))
	if err != nil {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", ref, err)
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", ref, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("proxy: read artifact %s: not a regular file", ref)
	}
	if !ranged {
		off, n = 0, fi.Size()
		if n > maxArtifactRead {
			return nil, fmt.Errorf("proxy: read artifact %s: %d bytes, more than %d", ref, n, maxArtifactRead)
		}
	}
	if off+n > fi.Size() {
		return nil, fmt.Errorf("proxy: read artifact %s: the file has %d bytes: the artifact is torn or the reference forged", ref, fi.Size())
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", ref, err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil && !(err == io.EOF && n == 0) {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", ref, err)
	}
	return b, nil
}

// MemSink is the in-memory Sink: events and artifacts in memory, seq and
// ts set as a log would. Safe for concurrent use.
type MemSink struct {
	ID string

	mu        sync.Mutex
	events    []session.Event
	artifacts map[string][]byte
}

var _ Sink = (*MemSink)(nil)

// SessionID returns m.ID.
func (m *MemSink) SessionID() string { return m.ID }

// Append numbers the events after the last one and keeps copies.
func (m *MemSink) Append(evs ...session.Event) ([]session.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]session.Event, len(evs))
	for i, e := range evs {
		e.Seq = int64(len(m.events)) + 1
		if e.TS.IsZero() {
			e.TS = time.Now()
		}
		e.SessionID = m.ID
		m.events = append(m.events, e)
		out[i] = e
	}
	return out, nil
}

// Events returns the events appended so far.
func (m *MemSink) Events() []session.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]session.Event(nil), m.events...)
}

// AppendArtifact keeps copies of the parts.
func (m *MemSink) AppendArtifact(name string, parts ...[]byte) ([]string, func() error, error) {
	if !plainName(name) {
		return nil, nil, fmt.Errorf("proxy: artifact name %q: want a plain file name", name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.artifacts == nil {
		m.artifacts = map[string][]byte{}
	}
	refs := make([]string, len(parts))
	for i, p := range parts {
		refs[i] = fmt.Sprintf("%s/%s#%d+%d", recorder.ArtifactsDir, name, len(m.artifacts[name]), len(p))
		m.artifacts[name] = append(m.artifacts[name], p...)
	}
	return refs, func() error { return nil }, nil
}

// ReadArtifact returns what AppendArtifact kept.
func (m *MemSink) ReadArtifact(ref string) ([]byte, error) {
	name, off, n, ranged, err := parseRef(ref)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.artifacts[name]
	if !ok {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", ref, os.ErrNotExist)
	}
	if !ranged {
		return append([]byte(nil), b...), nil
	}
	if off+n > int64(len(b)) {
		return nil, fmt.Errorf("proxy: read artifact %s: past the end", ref)
	}
	return append([]byte(nil), b[off:off+n]...), nil
}

// MemSessions is an Opener that keeps each session in a MemSink: the
// in-memory standalone mode (tests, benchmarks).
type MemSessions struct {
	mu    sync.Mutex
	sinks map[string]*MemSink
	order []string
	n     int
}

// Open is an Opener.
func (m *MemSessions) Open(id string, header session.Event) (Sink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sinks == nil {
		m.sinks = map[string]*MemSink{}
	}
	if id == "" {
		m.n++
		id = fmt.Sprintf("mem%04d", m.n)
	}
	if m.sinks[id] != nil {
		return nil, fmt.Errorf("proxy: session %s exists", id)
	}
	s := &MemSink{ID: id}
	header.SessionID = id
	s.Append(header)
	m.sinks[id] = s
	m.order = append(m.order, id)
	return s, nil
}

// Get returns session id's sink, nil when none was opened.
func (m *MemSessions) Get(id string) *MemSink {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sinks[id]
}

// IDs returns the sessions opened, in order.
func (m *MemSessions) IDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.order...)
}

// StoreSessions is the Opener of `agentctl proxy`: each conversation is a
// new session in Store, closed (log and lease) by Server.Close.
type StoreSessions struct {
	Store   recorder.Store
	Options recorder.Options
}

// Open creates the session (id "" gets a new one).
func (s StoreSessions) Open(id string, header session.Event) (Sink, error) {
	header.SessionID = id
	sess, err := s.Store.Create(header, s.Options)
	if err != nil {
		return nil, err
	}
	return &ownedSink{SessionSink{S: sess}}, nil
}

// ownedSink is a SessionSink whose session the proxy opened and closes.
type ownedSink struct{ SessionSink }

func (o *ownedSink) Close() error {
	err := o.SessionSink.Close()
	if serr := o.S.Close(); err == nil {
		err = serr
	}
	return err
}
