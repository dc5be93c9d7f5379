package proxy

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/session"
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
	// WriteArtifact stores data durably as name in the session's
	// artifacts folder and returns its path relative to the session folder
	// ("artifacts/<name>"), the form events record. It may be called
	// concurrently for different names.
	WriteArtifact(name string, data []byte) (string, error)
	// ReadArtifact reads back what an event names (the relative path).
	ReadArtifact(rel string) ([]byte, error)
}

// ArtifactsDir is the folder of a session folder that holds the proxy's
// raw request and response bodies (the runner's tool artifacts share it).
const ArtifactsDir = "artifacts"

// SessionSink is a Sink over a session open for writing.
type SessionSink struct {
	S *recorder.Session

	once sync.Once
	err  error
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

// WriteArtifact writes the file under a temp name, fsyncs it, renames it
// into place and fsyncs the folder, so an event never names a file a
// crash could lose.
func (s *SessionSink) WriteArtifact(name string, data []byte) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("proxy: artifact name %q: want a plain file name", name)
	}
	dir := filepath.Join(s.S.Dir, ArtifactsDir)
	s.once.Do(func() { s.err = os.MkdirAll(dir, 0o755) })
	if s.err != nil {
		return "", fmt.Errorf("proxy: write artifact %s: %w", name, s.err)
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("proxy: write artifact %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("proxy: write artifact %s: %w", name, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return path.Join(ArtifactsDir, name), nil
}

// ReadArtifact reads an artifact of the session; see ReadArtifact.
func (s *SessionSink) ReadArtifact(rel string) ([]byte, error) {
	return ReadArtifact(s.S.Dir, rel)
}

// ReadArtifact reads the artifact rel (as an event names it) of the
// session folder dir. The log may come from elsewhere, so rel must name a
// plain file directly in the artifacts folder: anything else (an absolute
// path, "..", a subfolder) is refused.
func ReadArtifact(dir, rel string) ([]byte, error) {
	name, ok := strings.CutPrefix(rel, ArtifactsDir+"/")
	if !ok || name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("proxy: artifact %q: want artifacts/<name>", rel)
	}
	root, err := os.OpenRoot(filepath.Join(dir, ArtifactsDir))
	if err != nil {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", rel, err)
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("proxy: read artifact %s: not a regular file", rel)
	}
	b, err := root.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", rel, err)
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

// WriteArtifact keeps a copy of data.
func (m *MemSink) WriteArtifact(name string, data []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.artifacts == nil {
		m.artifacts = map[string][]byte{}
	}
	rel := path.Join(ArtifactsDir, name)
	m.artifacts[rel] = append([]byte(nil), data...)
	return rel, nil
}

// ReadArtifact returns what WriteArtifact kept.
func (m *MemSink) ReadArtifact(rel string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.artifacts[rel]
	if !ok {
		return nil, fmt.Errorf("proxy: read artifact %s: %w", rel, os.ErrNotExist)
	}
	return b, nil
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

func (o *ownedSink) Close() error { return o.S.Close() }
