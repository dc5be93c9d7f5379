package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/internal/history"
)

// objectRows bounds the rows an object made in memory holds (sorted as
// a segment before it is written): push and compaction hold at most this
// many decoded rows (~3 KB each: ~200 MB) at once, whatever the size of the home
// or the bucket. A unit larger than that (a local segment pushed whole, a
// big object with superseded rows) is written as its own object, in its
// own order, a batch at a time.
const objectRows = 64 * 1024

// objectWriter makes the objects of one date partition from units of
// rows: each unit (a local file's rows to push, a cached object's live
// rows) lands whole in one object, so a session's rows are never split
// between objects (readers take a session's rows from one object: see
// Snapshot.Parts).
type objectWriter struct {
	ctx       context.Context
	store     Store
	tmp       string
	partition string
	kind      string // "push" or "seg"
	max       int
	buf       []history.Row
	// put is told of each object uploaded (existed: the same bytes were
	// there already) and its rows.
	put func(key string, size int, rows int64, existed bool)
}

// add writes the rows read gives (read calls its argument with each batch;
// n is an upper bound on how many): into the current object when they
// fit, else into a new one, or as an object of their own when they are
// more than an object holds.
func (w *objectWriter) add(n int64, read func(each func([]history.Row) error) error) error {
	if n > int64(w.max) {
		return w.stream(read)
	}
	if len(w.buf) > 0 && int64(len(w.buf))+n > int64(w.max) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	held := len(w.buf)
	err := read(func(rows []history.Row) error {
		w.buf = append(w.buf, rows...)
		return nil
	})
	if err != nil {
		// A unit that fails midway (a damaged file) adds nothing.
		clear(w.buf[held:])
		w.buf = w.buf[:held]
	}
	return err
}

// flush writes the rows held as one object, sorted as a segment.
func (w *objectWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	history.SortSegment(w.buf)
	b, err := encodeRows(w.tmp, w.buf)
	if err != nil {
		return err
	}
	rows := int64(len(w.buf))
	clear(w.buf)
	w.buf = w.buf[:0]
	return w.upload(b, rows)
}

// stream writes one unit as its own object, a batch at a time.
func (w *objectWriter) stream(read func(each func([]history.Row) error) error) error {
	p := filepath.Join(w.tmp, "stream.parquet")
	rw, err := history.CreateRows(p)
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if err := read(rw.Write); err != nil {
		rw.Close()
		return err
	}
	if err := rw.Close(); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if rw.Rows() == 0 {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	return w.upload(b, rw.Rows())
}

func (w *objectWriter) upload(b []byte, rows int64) error {
	key := contentKey(w.partition, w.kind, b)
	_, err := w.store.Put(w.ctx, key, b, Cond{IfAbsent: true})
	switch {
	case errors.Is(err, ErrExists):
		w.put(key, len(b), rows, true) // the same bytes, from a run killed before its record
	case err != nil:
		return fmt.Errorf("remote: %w", err)
	default:
		w.put(key, len(b), rows, false)
	}
	return nil
}
