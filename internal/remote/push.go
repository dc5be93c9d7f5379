package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"

	"github.com/agentctl/agentctl/internal/failpoint"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// PushOptions tune Push.
type PushOptions struct {
	// Bundle, if set, writes session id's debug bundle to w; Push then
	// uploads a bundle of each finished session not pushed yet.
	Bundle func(ctx context.Context, id string, w io.Writer) error
}

// PushResult says what Push did.
type PushResult struct {
	Remote   string `json:"remote"`
	Objects  int    `json:"objects"`  // Parquet objects uploaded
	Existing int    `json:"existing"` // objects (of any kind) found already there
	Sessions int    `json:"sessions"` // sessions whose rows were uploaded
	Rows     int64  `json:"rows"`
	Logs     int    `json:"logs"` // session logs uploaded
	Bundles  int    `json:"bundles"`
	Reports  int    `json:"reports"` // eval report objects uploaded
	Bytes    int64  `json:"bytes"`
	Skipped  int    `json:"skipped"` // sessions left out: corrupt local file or log (warned)
}

// Push uploads what the home has and the remote lacks: the rows of every
// sealed session whose sealed state was not pushed yet (objects of at
// most objectRows rows per date partition, a local file's rows in one), the log of every finished session (last event
// session_finished) not pushed as it is now, and with opts.Bundle their
// bundles. Every object is created conditionally (see the package doc),
// and the push record is updated after each kind, so a push killed midway
// uploads on its rerun only what its record lacks, and what it uploads
// again lands on the same keys.
func (r *Remote) Push(ctx context.Context, opts PushOptions) (PushResult, error) {
	res := PushResult{Remote: r.Store.String()}
	unlock, err := history.LockDir(r.Dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	rec, err := loadRecord(r.Dir)
	if err != nil {
		return res, err
	}
	if err := r.pushHistory(ctx, rec, &res); err != nil {
		return res, err
	}
	if err := r.pushEvals(ctx, &res); err != nil {
		return res, err
	}
	if err := r.pushLogs(ctx, rec, &res, opts); err != nil {
		return res, err
	}
	return res, nil
}

func (r *Remote) pushHistory(ctx context.Context, rec *record, res *PushResult) error {
	h := history.New(r.Home)
	m, err := h.Manifest()
	if err != nil {
		return err
	}
	// The sessions to push, by the file that holds their live rows.
	byFile := map[string][]string{}
	for id, e := range m.Sessions {
		if v, ok := rec.History[id]; ok && v == [2]int64{e.LastSeq, e.LogSize} {
			continue
		}
		byFile[e.File] = append(byFile[e.File], id)
	}
	if len(byFile) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp(r.Dir, ".tmp-push-")
	if err != nil {
		return fmt.Errorf("remote: push: %w", err)
	}
	defer os.RemoveAll(tmp)
	rows := map[string]int64{}
	for _, f := range m.Files {
		rows[f.Path] = f.Rows
	}
	// Files in order, by partition: each partition's objects are made
	// from its files' rows, a file's whole in one object.
	byPart := map[string][]string{}
	for _, f := range sortedKeys(byFile) {
		byPart[path.Dir(f)] = append(byPart[path.Dir(f)], f)
	}
	var pushed []string
	for _, part := range sortedKeys(byPart) {
		w := &objectWriter{ctx: ctx, store: r.Store, tmp: tmp, partition: part, kind: "push", max: objectRows,
			put: func(_ string, size int, n int64, existed bool) {
				if existed {
					res.Existing++
				} else {
					res.Objects++
					res.Bytes += int64(size)
				}
				res.Rows += n
			}}
		for _, f := range byPart[part] {
			want := map[string]bool{}
			for _, id := range byFile[f] {
				want[id] = true
			}
			n := rows[f]
			if n <= 0 {
				n = objectRows + 1 // not recorded: streamed on its own
			}
			err := w.add(n, func(each func([]history.Row) error) error {
				var keep []history.Row
				return history.ReadRowsEach(filepath.Join(h.Dir, filepath.FromSlash(f)), func(batch []history.Row) error {
					keep = keep[:0]
					for _, row := range batch {
						if want[row.SessionID] && m.Sessions[row.SessionID].File == f {
							keep = append(keep, row)
						}
					}
					if len(keep) == 0 {
						return nil
					}
					return each(keep)
				})
			})
			var ce *history.CorruptFileError
			if errors.As(err, &ce) {
				fmt.Fprintf(r.Warn, "agentctl: warning: not pushing %d sessions of %v\n", len(byFile[f]), err)
				res.Skipped += len(byFile[f])
				continue
			}
			if err != nil {
				return fmt.Errorf("remote: push: %w", err)
			}
			pushed = append(pushed, byFile[f]...)
		}
		if err := w.flush(); err != nil {
			return fmt.Errorf("remote: push: %w", err)
		}
	}
	failpoint.Hit(FailpointEnv, FailPushUploaded)
	for _, id := range pushed {
		e := m.Sessions[id]
		rec.History[id] = [2]int64{e.LastSeq, e.LogSize}
	}
	res.Sessions += len(pushed)
	return rec.save(r.Dir, r.NoSync)
}

// encodeRows returns rows as the bytes of a history Parquet file.
func encodeRows(tmp string, rows []history.Row) ([]byte, error) {
	p := filepath.Join(tmp, "rows.parquet")
	if _, err := history.WriteRows(p, rows, true); err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	return b, nil
}

func (r *Remote) pushLogs(ctx context.Context, rec *record, res *PushResult, opts PushOptions) error {
	st := recorder.Store{Root: r.Home}
	ids, err := st.IDs()
	if err != nil {
		return err
	}
	sort.Strings(ids)
	changed := false
	defer func() {
		if changed {
			rec.save(r.Dir, r.NoSync)
		}
	}()
	// Which logs to upload and which bundles to make: finished sessions
	// whose log is not recorded at its size.
	var logs, bundles []string
	for _, id := range ids {
		if !safeID(id) {
			continue
		}
		fi, err := os.Stat(st.LogPath(id))
		if err != nil {
			continue
		}
		old, had := rec.Logs[id]
		needBundle := opts.Bundle != nil && !rec.Bundles[id]
		if had && old.Size == fi.Size() && !needBundle {
			continue
		}
		evs, _, err := recorder.ReadFile(st.LogPath(id))
		if err != nil {
			fmt.Fprintf(r.Warn, "agentctl: warning: not pushing the log of %s: %v\n", id, err)
			res.Skipped++
			continue
		}
		if len(evs) == 0 || evs[len(evs)-1].Kind != session.KindSessionFinished {
			continue // not finished: its log may still grow
		}
		if !had || old.Size != fi.Size() {
			logs = append(logs, id)
		}
		if needBundle {
			bundles = append(bundles, id)
		}
	}
	// Logs go up 8 at a time: a push of many short sessions is one PUT
	// per log, and the round trips, not the bytes, are its cost.
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, id := range logs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			mu.Lock()
			old, had := rec.Logs[id]
			mu.Unlock()
			lr, n, existed, err := r.pushLog(ctx, st, id, old, had)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, errSkip):
				res.Skipped++
			case err != nil:
				if firstErr == nil {
					firstErr = err
				}
			default:
				rec.Logs[id] = lr
				changed = true
				if existed {
					res.Existing++
				} else {
					res.Logs++
					res.Bytes += n
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	for _, id := range bundles {
		if err := r.pushBundle(ctx, id, opts, res); err != nil {
			return err
		}
		rec.Bundles[id] = true
		changed = true
	}
	return nil
}

// errSkip marks a log not pushed, with a warning already given.
var errSkip = errors.New("remote: skipped")

// pushLog uploads session id's log: created if this home never pushed it,
// replaced (If-Match) if it pushed an older version of it.
func (r *Remote) pushLog(ctx context.Context, st recorder.Store, id string, old logRecord, had bool) (logRecord, int64, bool, error) {
	b, err := os.ReadFile(st.LogPath(id))
	if err != nil {
		return logRecord{}, 0, false, fmt.Errorf("remote: push: %w", err)
	}
	c := Cond{IfAbsent: true}
	if had {
		c = Cond{IfMatch: old.ETag} // resumed and finished again since
	}
	etag, err := r.Store.Put(ctx, LogKey(id), b, c)
	switch {
	case errors.Is(err, ErrExists) && !had:
		// Pushed by a run of this home killed before its record, or by
		// another home holding the same session (an import). Record
		// what is there if it is this log.
		objs, lerr := r.Store.List(ctx, LogKey(id))
		if lerr != nil {
			return logRecord{}, 0, false, fmt.Errorf("remote: push: %w", lerr)
		}
		if len(objs) != 1 || objs[0].Size != int64(len(b)) {
			fmt.Fprintf(r.Warn, "agentctl: warning: %s/%s differs from the local log of %s; not overwritten\n", r.Store, LogKey(id), id)
			return logRecord{}, 0, false, errSkip
		}
		return logRecord{Size: int64(len(b)), ETag: objs[0].ETag}, 0, true, nil
	case errors.Is(err, ErrExists):
		fmt.Fprintf(r.Warn, "agentctl: warning: %s/%s changed since this home pushed it; not overwritten\n", r.Store, LogKey(id))
		return logRecord{}, 0, false, errSkip
	case err != nil:
		return logRecord{}, 0, false, fmt.Errorf("remote: push: %w", err)
	}
	return logRecord{Size: int64(len(b)), ETag: etag}, int64(len(b)), false, nil
}

func (r *Remote) pushBundle(ctx context.Context, id string, opts PushOptions, res *PushResult) error {
	f, err := os.CreateTemp(r.Dir, ".tmp-bundle-")
	if err != nil {
		return fmt.Errorf("remote: push bundle %s: %w", id, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := opts.Bundle(ctx, id, f); err != nil {
		return fmt.Errorf("remote: push bundle %s: %w", id, err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return fmt.Errorf("remote: push bundle %s: %w", id, err)
	}
	_, err = r.Store.Put(ctx, BundleKey(id), b, Cond{IfAbsent: true})
	switch {
	case errors.Is(err, ErrExists):
		res.Existing++
	case err != nil:
		return fmt.Errorf("remote: push: %w", err)
	default:
		res.Bundles++
		res.Bytes += int64(len(b))
	}
	return nil
}
