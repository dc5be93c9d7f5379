package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/history"
)

// indexFile is the cache's index in a remote's folder: for each cached
// object, the ETag it was downloaded at and what reading it found.
const indexFile = "INDEX.json"

// Cached is one history object of the remote, as the cache holds it.
type Cached struct {
	Key      string           `json:"key"`
	ETag     string           `json:"etag"`
	Size     int64            `json:"size"`
	Rows     int64            `json:"rows"`
	Sessions map[string]int64 `json:"sessions"`          // session -> its last seq in the object
	Corrupt  string           `json:"corrupt,omitempty"` // why the object cannot be read; then it is not used
	// Eval marks an eval report object (history/evals/...: see
	// history.EvalRow); it holds no session's rows.
	Eval bool `json:"eval,omitempty"`
}

// Version is a token of the object's identity in the bucket (its ETag
// and size): what a derived file of it (its summary) is named by, so
// an object replaced under the same key is never read through the old
// one's.
func (c Cached) Version() string {
	h := sha256.Sum256([]byte(c.ETag + "\x00" + strconv.FormatInt(c.Size, 10)))
	return hex.EncodeToString(h[:4])
}

// Snapshot is the remote's history as one Pull saw it.
type Snapshot struct {
	Dir        string   // the cache's objects folder
	SummaryDir string   // where the query package keeps the objects' summaries
	Objects    []Cached // sessions' rows, sorted by key
	Reports    []Cached // eval report objects, sorted by key
	Downloaded int      // objects fetched by this pull (the rest were cached)
	Removed    int      // cached objects no longer listed, removed
}

// Path is where the cache holds o.
func (s *Snapshot) Path(o Cached) string { return filepath.Join(s.Dir, filepath.FromSlash(o.Key)) }

// Pull brings the cache up to date with the remote's history: it lists
// history/, downloads each object whose ETag the cache does not hold,
// reads it whole (a damaged object, or one served larger than listed, is
// named on the warning writer, marked corrupt and left out), and removes
// cached objects no longer listed.
func (r *Remote) Pull(ctx context.Context) (*Snapshot, error) {
	unlock, err := history.LockDir(r.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return r.pullLocked(ctx)
}

func (r *Remote) pullLocked(ctx context.Context) (*Snapshot, error) {
	objs, err := r.Store.List(ctx, historyPrefix)
	if err != nil {
		return nil, err
	}
	index := map[string]Cached{}
	ip := filepath.Join(r.Dir, indexFile)
	if b, err := os.ReadFile(ip); err == nil {
		if json.Unmarshal(b, &index) != nil {
			index = map[string]Cached{} // a damaged index only costs downloads
		}
	}
	snap := &Snapshot{Dir: filepath.Join(r.Dir, "objects"), SummaryDir: filepath.Join(r.Dir, history.SummaryDir)}
	listed := map[string]bool{}
	var todo []Object
	for _, o := range objs {
		if !parquetKey.MatchString(o.Key) && !isEvalKey(o.Key) {
			continue
		}
		if o.Size > MaxObjectBytes {
			fmt.Fprintf(r.Warn, "agentctl: warning: skipping remote object %s/%s: %d bytes, more than the %d this agentctl reads\n", r.Store, o.Key, o.Size, int64(MaxObjectBytes))
			continue
		}
		listed[o.Key] = true
		c, ok := index[o.Key]
		if ok && c.ETag == o.ETag && (c.Corrupt != "" || fileSize(snap.Path(c)) == c.Size) {
			continue
		}
		todo = append(todo, o)
	}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, o := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := r.download(ctx, snap, o)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, errGone) {
				return
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			index[o.Key] = c
			snap.Downloaded++
		})
	}
	wg.Wait()
	for k, c := range index {
		if !listed[k] {
			os.Remove(snap.Path(c))
			delete(index, k)
			snap.Removed++
		}
	}
	removeStaleSummaries(snap.SummaryDir, index)
	b, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(ip, b, r.NoSync); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for _, c := range index {
		if c.Corrupt != "" {
			fmt.Fprintf(r.Warn, "agentctl: warning: skipping corrupt remote object %s/%s: %s\n", r.Store, c.Key, c.Corrupt)
		}
		if c.Eval {
			snap.Reports = append(snap.Reports, c)
			continue
		}
		snap.Objects = append(snap.Objects, c)
	}
	sort.Slice(snap.Objects, func(i, j int) bool { return snap.Objects[i].Key < snap.Objects[j].Key })
	sort.Slice(snap.Reports, func(i, j int) bool { return snap.Reports[i].Key < snap.Reports[j].Key })
	return snap, nil
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return st.Size()
}

// MaxObjectBytes is the largest object a pull or fetch downloads: the
// bucket is not trusted, and an object is read whole into memory.
const MaxObjectBytes = 1 << 30

var errGone = errors.New("remote: object removed since listed")

// download fetches o into the cache and reads it whole.
func (r *Remote) download(ctx context.Context, snap *Snapshot, o Object) (Cached, error) {
	b, etag, err := r.Store.Get(ctx, o.Key, o.Size)
	if errors.Is(err, ErrNotFound) {
		// Removed by a compaction since the listing: its rows are in
		// the segment that replaced it, listed by the next pull.
		return Cached{}, errGone
	}
	if errors.Is(err, ErrTooLarge) {
		// Served larger than listed: damaged or hostile, like an
		// object that does not parse, and skipped the same way.
		return Cached{Key: o.Key, ETag: o.ETag, Size: o.Size, Corrupt: fmt.Sprintf("served more than the %d bytes it is listed at", o.Size)}, nil
	}
	if err != nil {
		return Cached{}, err
	}
	c := Cached{Key: o.Key, ETag: etag, Size: int64(len(b))}
	p := snap.Path(c)
	if err := writeAtomic(p, b, r.NoSync); err != nil {
		return Cached{}, err
	}
	if isEvalKey(o.Key) {
		c.Eval = true
		n, err := checkEvalObject(p, o.Key)
		if err != nil {
			os.Remove(p)
			c.Corrupt = err.Error()
		}
		c.Rows = n
		return c, nil
	}
	// Read whole, to know it parses, a batch of rows at a time: a
	// segment of a big bucket is hundreds of MB decoded, and a pull
	// downloads eight at once.
	c.Sessions = map[string]int64{}
	err = history.ReadRowsEach(p, func(rows []history.Row) error {
		c.Rows += int64(len(rows))
		for _, row := range rows {
			last, ok := c.Sessions[row.SessionID]
			if !ok {
				c.Sessions[strings.Clone(row.SessionID)] = row.Seq
			} else if row.Seq > last {
				c.Sessions[row.SessionID] = row.Seq
			}
		}
		return nil
	})
	if err != nil {
		os.Remove(p)
		c.Rows, c.Sessions = 0, nil
		var ce *history.CorruptFileError
		if errors.As(err, &ce) {
			c.Corrupt = ce.Err.Error()
		} else {
			c.Corrupt = err.Error()
		}
		return c, nil
	}
	return c, nil
}

// EvalPaths returns the cached files of the usable eval report objects.
func (s *Snapshot) EvalPaths() []string {
	var out []string
	for _, o := range s.Reports {
		if o.Corrupt == "" {
			out = append(out, s.Path(o))
		}
	}
	return out
}

// removeStaleSummaries removes the summaries (package query's, made
// from cached objects) of objects the cache no longer holds in the
// version they were made of, and temporary files a killed reader left.
// A reader may be writing one now: a removed temporary file costs it the
// fold it then does without.
func removeStaleSummaries(dir string, index map[string]Cached) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		key, version, ok := history.SummarySource(e.Name())
		if c, held := index[key]; ok && held && c.Corrupt == "" && c.Version() == version {
			continue
		}
		if !ok && strings.HasPrefix(e.Name(), ".tmp-") {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) < time.Hour {
				continue // a reader's, being written
			}
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}

// Part is one usable history object of a snapshot, for a query: its
// cached path and the sessions whose rows in it are not live.
type Part struct {
	Key      string
	Version  string // Cached.Version
	Path     string
	Sessions []string // every session with rows in it, sorted
	Exclude  []string // those whose rows in it are not live, sorted
}

// Parts applies the rule of the package doc: for each session, the rows
// of the object with its highest last seq are live, ties going to the
// smallest key; sessions for which local(id) is true are left out
// entirely. Corrupt objects are left out.
func (s *Snapshot) Parts(local func(id string) bool) []Part {
	winner := s.winners()
	var out []Part
	for _, o := range s.Objects {
		if o.Corrupt != "" {
			continue
		}
		p := Part{Key: o.Key, Version: o.Version(), Path: s.Path(o), Sessions: sortedKeys(o.Sessions)}
		for id := range o.Sessions {
			if winner[id] != o.Key || (local != nil && local(id)) {
				p.Exclude = append(p.Exclude, id)
			}
		}
		if len(p.Exclude) == len(o.Sessions) {
			continue
		}
		sort.Strings(p.Exclude)
		out = append(out, p)
	}
	return out
}

// winners maps each session to the key of the object holding its live rows.
func (s *Snapshot) winners() map[string]string {
	best := map[string]string{}
	seq := map[string]int64{}
	for _, o := range s.Objects { // sorted by key: the first of a tie wins
		if o.Corrupt != "" {
			continue
		}
		for id, last := range o.Sessions {
			if cur, ok := seq[id]; !ok || last > cur {
				best[id], seq[id] = o.Key, last
			}
		}
	}
	return best
}

// Sessions returns the number of distinct sessions in the snapshot.
func (s *Snapshot) Sessions() int { return len(s.winners()) }

func partition(key string) string { return path.Base(path.Dir(key)) }
