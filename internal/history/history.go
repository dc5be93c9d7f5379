package history

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/failpoint"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// Dir is the name of the history folder in an agentctl home.
const Dir = "history"

// Defaults for compaction.
const (
	// AutoCompactFiles is how many per-session files may pile up before a
	// seal compacts them into a segment.
	AutoCompactFiles = 64
	// SegmentRows is the size compaction aims for: a segment is closed
	// before a file would take it past this many rows (sessions are never
	// split; a session as large is a segment of its own). Compaction holds
	// a segment's rows decoded (~1 KB each), so this bounds its memory:
	// 64k rows, ~100 MB with the collector at +25%.
	SegmentRows = 64 * 1024
)

// History is the Parquet history of an agentctl home. It holds no state;
// its methods may be called concurrently and from several processes:
// writers (Seal, Compact) serialize on a file lock, readers read the
// manifest and never lock.
type History struct {
	Dir   string         // <home>/history
	Store recorder.Store // the sessions whose logs are sealed
	// NoSync skips fsync (benchmarks and tests only).
	NoSync bool
	// AutoCompactFiles overrides the package default; negative disables
	// automatic compaction.
	AutoCompactFiles int
	// FS is where Seal and Compact write (Parquet files, the manifest,
	// removals): vfs.OS if nil. Tests inject faults through it. The
	// writer lock and every read (logs, manifest, Parquet) stay on the
	// real filesystem.
	FS vfs.FS
}

func (h *History) fs() vfs.FS { return vfs.Or(h.FS) }

// New returns the history of the agentctl home. Its Store has the
// manifest as a Witness, so a log that lost what was sealed of it reads as
// damaged (recorder.ShortLogError), not as a crash; a caller that knows
// more witnesses (the checkpoints) sets Store to one with them.
func New(home string) *History {
	dir := filepath.Join(home, Dir)
	return &History{Dir: dir, Store: recorder.Store{Root: home, Witnesses: []recorder.Witness{Witness{Dir: dir}}}}
}

// Manifest reads the current manifest: a consistent snapshot of the
// history.
func (h *History) Manifest() (*Manifest, error) { return LoadManifest(h.Dir) }

// SealResult says what sealing one session did.
type SealResult struct {
	SessionID string `json:"session_id"`
	File      string `json:"file,omitempty"` // relative to the history folder
	Rows      int64  `json:"rows"`
	Skipped   string `json:"skipped,omitempty"` // why nothing was written
	Err       string `json:"error,omitempty"`
}

type sealed struct {
	SealResult
	entry SessionEntry
	bytes int64
	sum   string
}

// Seal writes the events of each session's log to its own Parquet file
// under date=YYYY-MM-DD/ (the UTC date the session started), named
// <id>-<last seq>.parquet, and swaps in a manifest that points the session
// at it. Sealing is idempotent: a session whose log has the size it had when
// last sealed is skipped; one whose log changed (resumed, or a torn tail
// cut) is sealed again and its earlier rows stop being live in the same
// manifest swap (its old per-session file is removed; in a segment the
// session is marked dropped until the next compaction rewrites it). A log
// with a torn tail is sealed up to its last whole event; a corrupt log is
// not sealed and is reported in its SealResult.
//
// If per-session files then number AutoCompactFiles or more, they are
// compacted (see Compact). The returned error is about the history as a
// whole; per-session problems are in the results.
func (h *History) Seal(ids ...string) ([]SealResult, error) {
	unlock, err := LockDir(h.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := h.Manifest()
	if err != nil {
		return nil, err
	}
	out := make([]sealed, len(ids))
	before := m.fileIndex()
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(ids), 1)) {
		wg.Go(func() {
			for i := range work {
				out[i] = h.sealOne(m, before, ids[i])
			}
		})
	}
	for i := range ids {
		work <- i
	}
	close(work)
	wg.Wait()

	var retire []string
	changed := false
	index := m.fileIndex()
	for _, s := range out {
		if s.File == "" {
			continue
		}
		changed = true
		old, had := m.Sessions[s.SessionID]
		m.Sessions[s.SessionID] = s.entry
		fe := FileEntry{Path: s.File, Rows: s.Rows, Bytes: s.bytes, Sessions: 1, CRC32C: s.sum}
		if i, ok := index[s.File]; ok {
			m.Files[i] = fe
		} else {
			index[s.File] = len(m.Files)
			m.Files = append(m.Files, fe)
		}
		if had && old.File != s.File {
			if p := m.drop(index, old.File, s.SessionID); p != "" {
				retire = append(retire, p)
				index = m.fileIndex()
			}
		}
	}
	results := make([]SealResult, len(out))
	for i, s := range out {
		results[i] = s.SealResult
	}
	old, err := h.supersede(m)
	if err != nil {
		return results, err
	}
	retire = append(retire, old...)
	changed = changed || len(old) > 0
	snap := h.snapshot(m)
	if !changed && snap.equal(m.SessionsDir) {
		return results, nil
	}
	m.SessionsDir = snap
	failpoint.Hit(FailpointEnv, FailSealWritten)
	m.Generation++
	if err := m.save(h.fs(), h.Dir, h.NoSync); err != nil {
		return results, err
	}
	h.remove(retire)
	limit := h.AutoCompactFiles
	if limit == 0 {
		limit = AutoCompactFiles
	}
	if limit > 0 && m.smallFiles() >= limit {
		if _, err := h.compactLocked(m, CompactOptions{SmallOnly: true}); err != nil {
			return results, fmt.Errorf("history: automatic compaction: %w", err)
		}
	}
	return results, nil
}

func (h *History) sealOne(m *Manifest, index map[string]int, id string) sealed {
	s := sealed{SealResult: SealResult{SessionID: id}}
	logPath := h.Store.LogPath(id)
	st, err := os.Stat(logPath)
	if _, derr := os.Stat(h.Store.SessionDir(id)); errors.Is(err, os.ErrNotExist) && derr == nil {
		// Nothing to seal, and nothing lost: remove the empty folder.
		switch removed, rerr := h.Store.RemoveNotStarted(id); {
		case removed:
			s.Skipped = "never started (its run stopped before it recorded its first event); removed its empty folder"
		case rerr != nil:
			s.Skipped = "never started: " + rerr.Error()
		default:
			s.Skipped = "never started"
		}
		return s
	}
	if err != nil {
		s.Err = fmt.Sprintf("seal %s: %v", id, err)
		return s
	}
	if e, ok := m.Sessions[id]; ok && e.LogSize == st.Size() && hasFile(index, e.File) {
		s.Skipped = "already sealed"
		return s
	}
	evs, tail, err := recorder.ReadFile(logPath)
	if err != nil {
		s.Err = fmt.Sprintf("seal %s: %v", id, err)
		return s
	}
	if len(evs) == 0 {
		s.Skipped = "no events"
		return s
	}
	if e, ok := m.Sessions[id]; ok && evs[len(evs)-1].Seq < e.LastSeq {
		// The log lost events it had when sealed: sealing it again would
		// drop them from the history too, and the manifest is what tells
		// resume that the log is damaged (Witness).
		short := &recorder.ShortLogError{Path: logPath, LastSeq: evs[len(evs)-1].Seq, Size: st.Size(), Witness: e.durable(h.Dir)}
		s.Err = fmt.Sprintf("seal %s: %v; the history keeps the events it sealed", id, short)
		return s
	}
	rows := make([]Row, len(evs))
	for i, e := range evs {
		if rows[i], err = FromEvent(id, e); err != nil {
			s.Err = err.Error()
			return s
		}
	}
	last := evs[len(evs)-1].Seq
	rel := path.Join(Partition(evs[0].TS), fmt.Sprintf("%s-%d.parquet", id, last))
	n, sum, err := writeRows(h.fs(), filepath.Join(h.Dir, filepath.FromSlash(rel)), rows, h.NoSync)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	s.File, s.Rows, s.bytes, s.sum = rel, int64(len(rows)), n, sum
	lastEv := evs[len(evs)-1]
	final := lastEv.Kind == session.KindSessionFinished && session.Status(lastEv.Status) == session.StatusDone
	s.entry = SessionEntry{File: rel, LastSeq: last, LogSize: st.Size(), Final: final, Torn: tail.Torn}
	return s
}

// supersede writes each segment of m that holds rows of dropped sessions
// again without them, points m at the new segment, and returns the old
// ones to retire once m is saved. A file the manifest lists then holds
// live rows only, so a reader that reads the listed files and nothing
// else (DuckDB over the paths, as the README says) counts every event
// once. It costs one segment's rewrite per seal of a session that was
// compacted and has grown since (a resume), which compaction would do
// anyway. Per-session files with nothing live left were already taken
// out by drop.
func (h *History) supersede(m *Manifest) ([]string, error) {
	var retire []string
	n := 0
	for i := range m.Files {
		f := m.Files[i]
		if len(f.Dropped) == 0 {
			continue
		}
		retire = append(retire, f.Path)
		rows, err := readRowsSum(filepath.Join(h.Dir, filepath.FromSlash(f.Path)), f)
		if err != nil {
			return nil, fmt.Errorf("history: write %s again without the rows of re-sealed sessions (%s): %w", f.Path, strings.Join(f.Dropped, ", "), err)
		}
		rows = slices.DeleteFunc(rows, func(r Row) bool { return m.Sessions[r.SessionID].File != f.Path })
		if len(rows) == 0 {
			m.Files[i].Rows = 0
			continue
		}
		n++
		rel := path.Join(path.Dir(f.Path), fmt.Sprintf("seg-%08d-s%03d.parquet", m.Generation+1, n))
		size, sum, err := writeRows(h.fs(), filepath.Join(h.Dir, filepath.FromSlash(rel)), rows, h.NoSync)
		if err != nil {
			return nil, fmt.Errorf("history: write %s again without the rows of re-sealed sessions: %w", f.Path, err)
		}
		sessions := map[string]bool{}
		for _, r := range rows {
			sessions[r.SessionID] = true
		}
		for id := range sessions {
			e := m.Sessions[id]
			e.File = rel
			m.Sessions[id] = e
		}
		m.Files[i] = FileEntry{Path: rel, Rows: int64(len(rows)), Bytes: size, Sessions: len(sessions), Segment: true, CRC32C: sum}
	}
	// A file whose every row was dead holds nothing to list.
	m.Files = slices.DeleteFunc(m.Files, func(f FileEntry) bool { return f.Rows == 0 && f.Segment })
	return retire, nil
}

// drop marks session id's rows in file p as superseded. It returns p if the
// file holds nothing live any more and was taken out of the manifest (the
// caller then rebuilds its index).
func (m *Manifest) drop(index map[string]int, p, id string) string {
	i, ok := index[p]
	if !ok {
		return ""
	}
	f := &m.Files[i]
	if !slices.Contains(f.Dropped, id) {
		f.Dropped = append(f.Dropped, id)
	}
	if len(f.Dropped) >= f.Sessions {
		m.Files = slices.Delete(m.Files, i, i+1)
		return p
	}
	return ""
}

func hasFile(index map[string]int, p string) bool {
	_, ok := index[p]
	return ok
}

// fileIndex maps each live file's path to its index in m.Files.
func (m *Manifest) fileIndex() map[string]int {
	index := make(map[string]int, len(m.Files))
	for i, f := range m.Files {
		index[f.Path] = i
	}
	return index
}

// snapshot lists the sessions folder for the manifest (see
// SessionsSnapshot), under the writer lock, after m.Sessions is updated.
// The folder's time is kept only if it did not change during the listing
// and is older than racyWindow: a session folder made later in the same
// clock tick would otherwise leave the time as it was and go unseen.
func (h *History) snapshot(m *Manifest) SessionsSnapshot {
	dir := filepath.Join(h.Store.Root, "sessions")
	st1, err := os.Stat(dir)
	if err != nil {
		return SessionsSnapshot{}
	}
	ids, err := h.Store.IDs()
	if err != nil {
		return SessionsSnapshot{}
	}
	st2, err := os.Stat(dir)
	if err != nil || !st1.ModTime().Equal(st2.ModTime()) || time.Since(st2.ModTime()) < racyWindow {
		return SessionsSnapshot{}
	}
	snap := SessionsSnapshot{MTime: st2.ModTime().UnixNano()}
	for _, id := range ids {
		if _, ok := m.Sessions[id]; !ok {
			snap.Unsealed = append(snap.Unsealed, id)
		}
	}
	return snap
}

// racyWindow is how old the sessions folder's time must be to be trusted.
const racyWindow = 2 * time.Second

func (s SessionsSnapshot) equal(o SessionsSnapshot) bool {
	return s.MTime == o.MTime && slices.Equal(s.Unsealed, o.Unsealed)
}

func (m *Manifest) smallFiles() int {
	n := 0
	for _, f := range m.Files {
		if !f.Segment {
			n++
		}
	}
	return n
}

// Partition returns the Hive partition folder of a session that started at
// t: date=YYYY-MM-DD in UTC.
func Partition(t time.Time) string { return "date=" + t.UTC().Format("2006-01-02") }

// SummaryDir is the folder under the history where package query keeps
// each live file's summary (one row per session, derived from the file's
// rows and remade from them when missing or damaged).
const SummaryDir = "summaries"

// SummaryName is the start of the name of the summary of the history file
// rel whose checksum is crc, made by the definition named def: the
// summary's own checksum and ".parquet" follow. collectGarbage reads the
// file's path and checksum back from it.
func SummaryName(rel, crc, def string) string {
	return url.PathEscape(rel) + "." + crc + "." + def + "."
}

// summarySource is the history file and checksum a summary's name is of.
func SummarySource(name string) (rel, crc string, ok bool) {
	f := strings.Split(strings.TrimSuffix(name, ".parquet"), ".")
	if len(f) < 5 {
		return "", "", false
	}
	rel, err := url.PathUnescape(strings.Join(f[:len(f)-3], "."))
	return rel, f[len(f)-3], err == nil
}
