package recorder

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/failpoint"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// Store is the session layout of an agentctl home: each session lives in
// Root/sessions/<id>/, with its log in events.log and its lease in lease.
// A Store holds no state; its methods may be called concurrently.
type Store struct {
	Root string // the agentctl home, e.g. ./.agentctl
	// Witnesses are asked by Open, and by the read methods of a log with
	// no end, how far a log was durable; none means the log alone is
	// believed.
	Witnesses []Witness
}

// Durable is how far a Witness recorded a session's log as durable:
// through event Seq, and Size bytes when it knows the size (0 if not).
// By names the witness for an error, e.g. "the history manifest
// .agentctl/history/MANIFEST (sealed with session_finished)".
type Durable struct {
	Seq  int64
	Size int64
	By   string
}

// Witness is something outside a session's log that recorded how far the
// log was durable: the history's manifest when the session was sealed, a
// checkpoint taken after its event was acknowledged. Open asks each one
// before it opens a log for appending, so that a log which lost
// acknowledged records (a cut tail looks like a crash: no session_finished)
// is refused with a *ShortLogError instead of resumed, which would run its
// side effects again.
type Witness interface {
	// Beyond reports the furthest point past seq last at which the
	// witness recorded session id's log durable; ok is false when it
	// recorded nothing past last. A witness is derived state: one that
	// cannot be read, or holds nothing of the session, says nothing (ok
	// false). Concurrent calls are allowed.
	Beyond(id string, last int64) (d Durable, ok bool)
}

// checkDurable returns a *ShortLogError if a witness of s recorded session
// id's log at path durable past lastSeq.
func (s Store) checkDurable(id, path string, lastSeq, size int64) error {
	for _, w := range s.Witnesses {
		if d, ok := w.Beyond(id, lastSeq); ok {
			return &ShortLogError{Path: path, LastSeq: lastSeq, Size: size, Witness: d}
		}
	}
	return nil
}

// NewSessionID returns a new random session id: 16 lowercase hex digits.
func NewSessionID() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand crashes the program instead)
	return hex.EncodeToString(b)
}

func (s Store) sessionsDir() string { return filepath.Join(s.Root, "sessions") }

// SessionDir returns the directory of session id.
func (s Store) SessionDir(id string) string { return filepath.Join(s.sessionsDir(), id) }

// LogPath returns the log path of session id.
func (s Store) LogPath(id string) string { return filepath.Join(s.SessionDir(id), LogFile) }

// Session is a session open for writing: its Writer and the lease that
// makes it the only one.
type Session struct {
	ID  string
	Dir string
	*Writer
	Lease *Lease
}

// Close closes the writer, then releases the lease.
func (s *Session) Close() error {
	err := s.Writer.Close()
	if lerr := s.Lease.Release(); err == nil {
		err = lerr
	}
	return err
}

// Create starts a new session whose first event is header (a
// session_started event; an empty SessionID gets a new id). It makes the
// session directory, takes the lease, and creates the log.
func (s Store) Create(header session.Event, opts Options) (*Session, error) {
	sess, _, err := s.create(header, nil, opts)
	return sess, err
}

// create is Create with the events after the header written before the
// log is linked into place (createWith).
func (s Store) create(header session.Event, rest []session.Event, opts Options) (*Session, []session.Event, error) {
	if header.SessionID == "" {
		header.SessionID = NewSessionID()
	}
	id := header.SessionID
	if !validID(id) {
		return nil, nil, fmt.Errorf("recorder: create session %q: invalid id", id)
	}
	dir := s.SessionDir(id)
	// Synced up to the home: a first session in a fresh home must not
	// lose its folder, or sessions/, to a power cut.
	mkdir := vfs.MkdirAllSynced
	if opts.NoSync {
		mkdir = func(fsys vfs.FS, dir string, perm fs.FileMode) error { return fsys.MkdirAll(dir, perm) }
	}
	_, err := opts.fs().Lstat(dir)
	made := errors.Is(err, fs.ErrNotExist) // a failure removes what it made
	if err != nil && !made {
		return nil, nil, fmt.Errorf("recorder: create session %s: %w", id, err)
	}
	if err := mkdir(opts.fs(), dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("recorder: create session %s: %w", id, err)
	}
	lease, err := AcquireLease(dir)
	if err != nil {
		if made && !errors.Is(err, ErrLeaseHeld) {
			s.removeEmpty(dir, opts)
		}
		return nil, nil, fmt.Errorf("recorder: create session %s: %w", id, err)
	}
	failpoint.Hit(FailpointEnv, FailCreateLeased)
	if !made {
		// A temp log here is a dead writer's (the lease is ours): an
		// import or fork killed before its log was linked.
		tmps, _ := filepath.Glob(filepath.Join(dir, LogFile+".tmp-*"))
		for _, t := range tmps {
			opts.fs().Remove(t)
		}
	}
	w, out, err := createWith(filepath.Join(dir, LogFile), header, rest, opts)
	if err != nil {
		if made {
			s.removeEmpty(dir, opts)
		}
		lease.Release()
		return nil, nil, err
	}
	return &Session{ID: id, Dir: dir, Writer: w, Lease: lease}, out, nil
}

// WriteSession writes evs, events in hand, as a new session: evs[0] is the
// header as Create takes it, the rest are appended as one batch (renumbered
// after it, as Append does), and the session is closed, log and lease. It
// is the one way an importer, a fork and a test fixture make a session from
// a slice, instead of each carrying its own Create, Append and Close.
//
// The log is linked into place only when every event is written (and
// synced, unless NoSync): a writer killed or failing midway leaves no log,
// only a folder that never started (RemoveNotStarted), never a session cut
// short that a second import would take for the whole one.
//
// It returns the events as written: the header first, each with its seq,
// timestamp and redaction. When the session was made but its close
// failed, they come with the error, so the caller knows the session
// exists; when no session was made, with none.
func (s Store) WriteSession(evs []session.Event, opts Options) ([]session.Event, error) {
	if len(evs) == 0 {
		return nil, errors.New("recorder: write session: no events")
	}
	sess, out, err := s.create(evs[0], evs[1:], opts)
	if err != nil {
		return nil, err
	}
	written := append([]session.Event{sess.Header()}, out...)
	return written, sess.Close()
}

// removeEmpty removes the folder of a session Create failed to start (a
// full disk): its lease file and the folder, if that is all it holds.
func (s Store) removeEmpty(dir string, opts Options) {
	os.Remove(filepath.Join(dir, LeaseFile))
	if opts.fs().Remove(dir) == nil {
		syncDir(filepath.Dir(dir), opts)
	}
}

// RemoveNotStarted removes the folder of session id if it never started
// (see ErrNotStarted): it holds no log, only what Create makes before the
// log (its lease, a temp file of the log), and no process holds its lease.
// It reports whether it removed it; a folder that holds anything else (a
// fork's workspace being rebuilt, files someone put there) is left, with
// an error saying so, as is one being created now (ErrLeaseHeld).
func (s Store) RemoveNotStarted(id string) (bool, error) {
	if !validID(id) {
		return false, fmt.Errorf("recorder: remove session %q: invalid id", id)
	}
	dir := s.SessionDir(id)
	if _, err := os.Lstat(filepath.Join(dir, LogFile)); !errors.Is(err, fs.ErrNotExist) {
		return false, nil // started (or unreadable: not ours to judge)
	}
	lease, err := AcquireLease(dir)
	if err != nil {
		return false, err
	}
	defer lease.Release()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("recorder: remove session %s: %w", id, err)
	}
	var debris []string
	for _, e := range ents {
		switch name := e.Name(); {
		case name == LogFile:
			return false, nil // Create finished meanwhile
		case name == LeaseFile, e.Type().IsRegular() && strings.HasPrefix(name, LogFile+".tmp-"):
			debris = append(debris, name)
		default:
			return false, fmt.Errorf("recorder: remove session %s: it has no log but holds %s; look at %s and remove it yourself if it is not needed", id, name, dir)
		}
	}
	for _, name := range debris {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("recorder: remove session %s: %w", id, err)
		}
	}
	if err := os.Remove(dir); err != nil {
		return false, fmt.Errorf("recorder: remove session %s: %w", id, err)
	}
	return true, syncDir(filepath.Dir(dir), Options{})
}

// Open opens session id for appending (resume, approve): it takes the lease
// and then opens the log with OpenWriter, which recovers a torn tail. A
// log that ends before a point one of s.Witnesses recorded as durable is
// refused with a *ShortLogError (errors.Is ErrCorrupt) and left untouched.
func (s Store) Open(id string, opts Options) (*Session, Recovery, error) {
	if !validID(id) {
		return nil, Recovery{}, fmt.Errorf("recorder: open session %q: invalid id", id)
	}
	dir := s.SessionDir(id)
	if _, err := os.Stat(dir); err != nil {
		return nil, Recovery{}, fmt.Errorf("recorder: open session %s: %w", id, err)
	}
	lease, err := AcquireLease(dir)
	if err != nil {
		return nil, Recovery{}, err
	}
	path := filepath.Join(dir, LogFile)
	w, rec, err := openWriter(path, opts, func(lastSeq, size int64) error {
		return s.checkDurable(id, path, lastSeq, size)
	})
	if err != nil {
		lease.Release()
		return nil, Recovery{}, err
	}
	return &Session{ID: id, Dir: dir, Writer: w, Lease: lease}, rec, nil
}

// validID reports whether id can name a session directory.
func validID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\`)
}

// IDs returns the ids of all sessions, sorted. A home without sessions
// yields none and no error.
func (s Store) IDs() ([]string, error) {
	ents, err := os.ReadDir(s.sessionsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recorder: list sessions: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Latest is the session reference that names the session started last,
// as users of other tools type it (git's HEAD, docker's --latest).
const Latest = "latest"

// Resolve returns the id of the one session whose id is ref or starts with
// ref; ref Latest names the session that started last (see Store.Latest)
// unless a session's id is "latest". Every command that takes a session
// argument resolves it here, so each accepts the same references. It fails
// with ErrNoSession, naming the home it looked in, or ErrAmbiguous.
func (s Store) Resolve(ref string) (string, error) {
	ids, err := s.IDs()
	if err != nil {
		return "", err
	}
	var matches []string
	for _, id := range ids {
		if id == ref {
			return id, nil
		}
		if ref != "" && strings.HasPrefix(id, ref) {
			matches = append(matches, id)
		}
	}
	if ref == Latest {
		return s.latest(ids)
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("%w matches %q in the home %s; run 'agentctl sessions' to list them%s", ErrNoSession, ref, s.absRoot(), homeHint)
	case 1:
		return matches[0], nil
	default:
		return "", fmt.Errorf("%w %q matches %d sessions: %s; give more of the id", ErrAmbiguous, ref, len(matches), strings.Join(matches, ", "))
	}
}

// homeHint ends a "no session" error: the default home is relative to the
// working folder, so a command run from elsewhere looks in another one.
const homeHint = " (--home or AGENTCTL_HOME chooses another home)"

// absRoot is the home as an error names it: absolute, since a relative
// one says nothing about which folder it was relative to.
func (s Store) absRoot() string {
	if abs, err := filepath.Abs(s.Root); err == nil {
		return abs
	}
	return s.Root
}

// latest returns the id of the session among ids whose header started
// last, ties to the smallest id: the first session List returns. Only
// headers are read, one record a session. A session whose header cannot
// be read (it never started, or its first record is damaged) has no start
// to compare and is passed over.
func (s Store) latest(ids []string) (string, error) {
	var best string
	var bestTS time.Time
	for _, id := range ids {
		hdr, err := s.Header(id)
		if err != nil {
			continue
		}
		if best == "" || hdr.TS.After(bestTS) || hdr.TS.Equal(bestTS) && id < best {
			best, bestTS = id, hdr.TS
		}
	}
	if best == "" {
		return "", fmt.Errorf("%w matches %q: the home %s holds no started session%s", ErrNoSession, Latest, s.absRoot(), homeHint)
	}
	return best, nil
}

// Load reads the log of session id; see ReadFile. A session folder with
// no log fails with ErrNotStarted, and a log that lost durable records
// with a *ShortLogError after the events it holds (see CheckEnd).
func (s Store) Load(id string) ([]session.Event, Tail, error) {
	evs, tail, err := ReadFile(s.LogPath(id))
	if err = s.notStarted(id, err); err != nil || len(evs) == 0 {
		return evs, tail, err
	}
	return evs, tail, s.CheckEnd(id, evs[len(evs)-1], tail)
}

// CheckEnd gives every reader of a log the answer Open gives resume: a log
// that read cleanly up to last but has no end (it looks crashed, or its
// tail is torn) while a witness recorded it durable further on lost
// acknowledged records, and CheckEnd returns a *ShortLogError (errors.Is
// ErrCorrupt), so show, verify, bundle, view and sessions call it damaged
// as resume does instead of calling it a crash. A finished log is believed
// without asking (listing a home must not read its manifest once a
// session), as is one that grew since it was read: a reader that raced
// its writer saw a prefix, not a loss. Load, Stream and Scan call it; a
// reader of a log by its path (replay's verifier) calls it itself.
func (s Store) CheckEnd(id string, last session.Event, tail Tail) error {
	if last.Kind == session.KindSessionFinished || len(s.Witnesses) == 0 {
		return nil
	}
	path := s.LogPath(id)
	short := s.checkDurable(id, path, last.Seq, tail.FileSize)
	if short == nil {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() != tail.FileSize {
		return nil
	}
	return short
}

// notStarted turns the error of reading session id's missing log into
// ErrNotStarted when its folder exists.
func (s Store) notStarted(id string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Stat(s.SessionDir(id)); serr != nil {
		return err
	}
	return fmt.Errorf("%w: %s has no log: the run that made it stopped (killed, or out of disk) before it recorded its first event, so nothing of it was recorded and no tool of it ran", ErrNotStarted, s.SessionDir(id))
}

// Stream hands the events of session id's log to fn a record at a time;
// see StreamFile.
func (s Store) Stream(id string, fn func(session.Event)) (int, Tail, error) {
	var last session.Event
	n, tail, err := StreamFile(s.LogPath(id), func(e session.Event) { last = e; fn(e) })
	return n, tail, s.checkRead(id, n, last, tail, err)
}

// Scan hands the events of session id's log to fn in order; see ScanFile.
func (s Store) Scan(id string, fn func(session.Event)) (int, Tail, error) {
	var last session.Event
	n, tail, err := ScanFile(s.LogPath(id), func(e session.Event) { last = e; fn(e) })
	return n, tail, s.checkRead(id, n, last, tail, err)
}

// checkRead is the error of reading n events of session id's log, the
// last one last: the read's own, or CheckEnd's.
func (s Store) checkRead(id string, n int, last session.Event, tail Tail, err error) error {
	if err = s.notStarted(id, err); err != nil || n == 0 {
		return err
	}
	return s.CheckEnd(id, last, tail)
}

// Summary is one line of `agentctl sessions`: the session's header, status
// and totals. Its JSON form is part of the --json output and only grows.
type Summary struct {
	SessionID    string         `json:"session_id"`
	Name         string         `json:"name"`
	Provider     string         `json:"provider"`
	Model        string         `json:"model"`
	Status       session.Status `json:"status"`
	Started      time.Time      `json:"started"`
	Ended        time.Time      `json:"ended"`
	Events       int64          `json:"events"`
	InputTokens  int64          `json:"input_tokens"`
	OutputTokens int64          `json:"output_tokens"`
	CostUSD      float64        `json:"cost_usd"`
	ToolCalls    int64          `json:"tool_calls"`
	Errors       int64          `json:"errors"`
	Torn         bool           `json:"torn"`
	Err          string         `json:"err,omitempty"`
	// ParentSessionID is the session this one is a subagent or a fork of.
	ParentSessionID string `json:"parent_session_id,omitempty"`
}

// Summarize summarizes the events of session id as session.State folds
// them (its doc defines every figure), taking the log as one no process
// writes now: a log with no end is crashed. Store.Summary probes the lease
// instead.
func Summarize(id string, evs []session.Event, tail Tail) Summary {
	return SummaryOf(id, session.Fold(evs), tail, nil)
}

// SummaryOf is the summary of a fold; err is what reading the log found
// (it sets Err, and a *CorruptError makes the status corrupt).
func SummaryOf(id string, st *session.State, tail Tail, err error) Summary {
	if errors.Is(err, ErrCorrupt) {
		st.Corrupt = true
	}
	sum := Summary{
		SessionID: id, Name: st.Name, Provider: st.Provider, Model: st.Model, Status: st.Status(),
		Started: st.Started, Ended: st.Ended(), Events: st.Events,
		InputTokens: st.InputTokens, OutputTokens: st.OutputTokens, CostUSD: st.CostUSD,
		ToolCalls: st.ToolCalls, Errors: st.Errors, Torn: tail.Torn, ParentSessionID: st.ParentSessionID,
	}
	if err != nil {
		sum.Err = err.Error()
	}
	return sum
}

// Fold reads and folds the log of session id, with what the log cannot
// say about itself: whether a process holds its lease (State.Live) and
// whether reading stopped at damage (State.Corrupt). The error is
// ReadFile's; on corruption the fold holds the events before it. The log
// is read a record at a time (StreamFile), so a fold costs the State, not
// the log's events: listing a home with a session of a million events
// must not hold them all.
func (s Store) Fold(id string) (*session.State, Tail, error) {
	st := session.NewState()
	_, tail, err := s.Stream(id, st.Add)
	st.Live = Live(s.SessionDir(id))
	st.Corrupt = errors.Is(err, ErrCorrupt)
	return st, tail, err
}

// Summary summarizes session id as Fold finds it.
func (s Store) Summary(id string) Summary {
	st, tail, err := s.Fold(id)
	return SummaryOf(id, st, tail, err)
}

// List summarizes every session (Store.Summary), most recently started
// first. A session whose log cannot be read is listed too, with Err set and
// what could be read summarized.
func (s Store) List() ([]Summary, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.Summary(id))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].SessionID < out[j].SessionID
	})
	return out, nil
}
