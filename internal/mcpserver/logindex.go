package mcpserver

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// A log is read a record at a time, so a page costs what it holds plus what
// comes before it: the last page of a million-event log read every event
// (4.2 s). The server lives as long as the client's session and is asked
// for page after page of the same logs, so it keeps a sparse index per log:
// the offset after every indexEvery-th event, learnt while reading (the
// first read of a late page still reads up to it; later ones seek to the
// nearest point before from_seq and read at most indexEvery events more).
const (
	// indexEvery is how many events apart the points are: 1,000 points
	// (16 KB) for a million events, and at most that many events decoded
	// and skipped per page.
	indexEvery = 1024
	// maxIndexed bounds the logs indexed at once; the least recently read
	// is forgotten first.
	maxIndexed = 64
)

// point says that after the event of seq seq, the log's next record
// starts at byte off (recorder.ResumeReader's arguments).
type point struct{ seq, off int64 }

// logIndex is one log's points. They hold while the file is the same one
// (os.SameFile) and has not shrunk below size: a log is only appended to,
// and a log cut back (resume truncating a torn tail) is smaller.
type logIndex struct {
	fi     os.FileInfo
	size   int64
	points []point // ascending seq
}

// indexes are the server's log indexes, by log path. Safe for concurrent
// use: a call takes a copy of a log's points and merges back the ones it
// learnt.
type indexes struct {
	mu   sync.Mutex
	logs map[string]*logIndex
	lru  []string // least recently used first
	// read counts the log bytes every page read, for the tests.
	read atomic.Int64
}

// near returns the last point of the log at path (fi its state now) before
// seq from, if one is known and the index still fits the file.
func (x *indexes) near(path string, fi os.FileInfo, from int64) (point, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ix, ok := x.logs[path]
	if !ok {
		return point{}, false
	}
	if !os.SameFile(ix.fi, fi) || fi.Size() < ix.size {
		x.forgetLocked(path)
		return point{}, false
	}
	x.touchLocked(path)
	i, _ := slices.BinarySearchFunc(ix.points, from, func(p point, seq int64) int {
		switch {
		case p.seq < seq:
			return -1
		case p.seq > seq:
			return 1
		}
		return 0
	})
	// points[i-1] is the last with seq < from: its next record's seq is
	// at most from.
	if i == 0 {
		return point{}, false
	}
	return ix.points[i-1], true
}

// learn merges points read from the log at path (fi its state when read).
func (x *indexes) learn(path string, fi os.FileInfo, pts []point) {
	if len(pts) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	ix, ok := x.logs[path]
	if ok && (!os.SameFile(ix.fi, fi) || fi.Size() < ix.size) {
		x.forgetLocked(path)
		ok = false
	}
	if !ok {
		if len(x.logs) >= maxIndexed {
			x.forgetLocked(x.lru[0])
		}
		if x.logs == nil {
			x.logs = map[string]*logIndex{}
		}
		ix = &logIndex{}
		x.logs[path] = ix
		x.lru = append(x.lru, path)
	}
	ix.fi = fi
	for _, p := range pts {
		i, found := slices.BinarySearchFunc(ix.points, p.seq, func(q point, seq int64) int { return int(q.seq - seq) })
		if !found {
			ix.points = slices.Insert(ix.points, i, p)
		}
		ix.size = max(ix.size, fi.Size(), p.off)
	}
	x.touchLocked(path)
}

// forget drops the index of the log at path.
func (x *indexes) forget(path string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forgetLocked(path)
}

func (x *indexes) forgetLocked(path string) {
	delete(x.logs, path)
	if i := slices.Index(x.lru, path); i >= 0 {
		x.lru = slices.Delete(x.lru, i, i+1)
	}
}

func (x *indexes) touchLocked(path string) {
	if i := slices.Index(x.lru, path); i >= 0 && i != len(x.lru)-1 {
		x.lru = append(slices.Delete(x.lru, i, i+1), path)
	}
}

// eachLogEvent is eachEvent from session id's log: from the index's
// nearest point before from when it has one, else from the start, learning
// points on the way. A read from a point that fails (the log was cut back
// and rewritten since) forgets the index and reads again from the start,
// so an index can cost time, never events.
func (s *server) eachLogEvent(id string, from int64, fn func(session.Event) bool) error {
	path := s.opts.Store.LogPath(id)
	f, err := vfs.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	p, seek := s.idx.near(path, fi, from)
	n, err := s.readLog(f, path, fi, p, seek, from, fn)
	if seek && n == 0 && err != nil {
		// The point misled on its first record: the log was cut back
		// and written again since. Read it from the start.
		s.idx.forget(path)
		_, err = s.readLog(f, path, fi, point{}, false, from, fn)
	}
	return err
}

// readLog reads f (the log at path, fi its state) from point p when seek,
// else from the start, handing fn the events from seq from on; n is how
// many events it read.
func (s *server) readLog(f *os.File, path string, fi os.FileInfo, p point, seek bool, from int64, fn func(session.Event) bool) (n int, err error) {
	start := int64(0)
	if seek {
		start = p.off
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	cr := &countingReader{r: f, n: &s.idx.read}
	var r *recorder.Reader
	if seek {
		r = recorder.ResumeReader(cr, p.off, p.seq)
	} else {
		r = recorder.NewReader(cr)
	}
	var learnt []point
	defer func() { s.idx.learn(path, fi, learnt) }()
	for ; ; n++ {
		e, err := r.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if e.Seq%indexEvery == 0 {
			learnt = append(learnt, point{e.Seq, r.Offset()})
		}
		if e.Seq < from {
			continue
		}
		if !fn(e) {
			return n + 1, nil
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
