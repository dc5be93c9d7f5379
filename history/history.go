package history

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/agentctl/agentctl/recorder"
)

// Dir is the name of the history folder in an agentctl home.
const Dir = "history"

// Defaults for compaction.
const (
	// AutoCompactFiles is how many per-session files may pile up before a
	// seal compacts them into a segment.
	AutoCompactFiles = 64
	// SegmentRows is the size compaction aims for: a segment is closed once
	// it holds at least this many rows (sessions are never split).
	SegmentRows = 256 * 1024
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
}

// New returns the history of the agentctl home.
func New(home string) *History {
	return &History{Dir: filepath.Join(home, Dir), Store: recorder.Store{Root: home}}
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
	unlock, err := lock(h.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := h.Manifest()
	if err != nil {
		return nil, err
	}
	out := make([]sealed, len(ids))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(ids), 1)) {
		wg.Go(func() {
			for i := range work {
				out[i] = h.sealOne(m, ids[i])
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
	for _, s := range out {
		if s.File == "" {
			continue
		}
		changed = true
		old, had := m.Sessions[s.SessionID]
		m.Sessions[s.SessionID] = s.entry
		fe := FileEntry{Path: s.File, Rows: s.Rows, Bytes: s.bytes, Sessions: 1}
		if i := m.file(s.File); i >= 0 {
			m.Files[i] = fe
		} else {
			m.Files = append(m.Files, fe)
		}
		if had && old.File != s.File {
			if p := m.drop(old.File, s.SessionID); p != "" {
				retire = append(retire, p)
			}
		}
	}
	results := make([]SealResult, len(out))
	for i, s := range out {
		results[i] = s.SealResult
	}
	if !changed {
		return results, nil
	}
	failpoint(FailSealWritten)
	m.Generation++
	if err := m.save(h.Dir, h.NoSync); err != nil {
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

func (h *History) sealOne(m *Manifest, id string) sealed {
	s := sealed{SealResult: SealResult{SessionID: id}}
	logPath := h.Store.LogPath(id)
	st, err := os.Stat(logPath)
	if err != nil {
		s.Err = fmt.Sprintf("seal %s: %v", id, err)
		return s
	}
	if e, ok := m.Sessions[id]; ok && e.LogSize == st.Size() && m.file(e.File) >= 0 {
		s.Skipped = "already sealed"
		return s
	}
	evs, _, err := recorder.ReadFile(logPath)
	if err != nil {
		s.Err = fmt.Sprintf("seal %s: %v", id, err)
		return s
	}
	if len(evs) == 0 {
		s.Skipped = "no events"
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
	n, err := WriteRows(filepath.Join(h.Dir, filepath.FromSlash(rel)), rows, h.NoSync)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	s.File, s.Rows, s.bytes = rel, int64(len(rows)), n
	s.entry = SessionEntry{File: rel, LastSeq: last, LogSize: st.Size()}
	return s
}

// drop marks session id's rows in file p as superseded. It returns p if the
// file holds nothing live any more and is to be removed.
func (m *Manifest) drop(p, id string) string {
	i := m.file(p)
	if i < 0 {
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
