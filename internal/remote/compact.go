package remote

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/agentctl/agentctl/internal/failpoint"
	"github.com/agentctl/agentctl/internal/history"
)

// CompactOptions tune Compact.
type CompactOptions struct {
	// Lease is how long the lease is taken for (default DefaultLease); a
	// compaction that runs longer loses it and deletes nothing.
	Lease time.Duration
	// SegmentRows is the size of a segment: objects with fewer than half
	// as many rows are merged (default and most objectRows, what a
	// compaction holds in memory at once).
	SegmentRows int64
	Owner       string           // names the holder in the lease; host and pid if empty
	Now         func() time.Time // time.Now if nil
}

// DefaultLease is the compaction lease's default length.
const DefaultLease = 10 * time.Minute

// CompactResult says what Compact did.
type CompactResult struct {
	Remote   string `json:"remote"`
	Merged   int    `json:"merged"`   // objects merged (and deleted)
	Segments int    `json:"segments"` // segments uploaded
	Rows     int64  `json:"rows"`     // rows in the new segments
	Corrupt  int    `json:"corrupt"`  // corrupt objects left alone (warned)
}

// Compact merges the remote's small history objects, one date partition
// at a time, into segments, under the compaction lease: it takes the
// lease, pulls, writes each partition's live rows (see Snapshot.Parts) to
// one segment and uploads it, renews the lease (failing with ErrLeaseLost,
// before deleting anything, if it is no longer held), deletes the merged
// objects and releases the lease. Corrupt objects are neither merged nor
// deleted. See the package doc for what a kill at any point leaves.
func (r *Remote) Compact(ctx context.Context, opts CompactOptions) (CompactResult, error) {
	res := CompactResult{Remote: r.Store.String()}
	ttl := opts.Lease
	if ttl <= 0 {
		ttl = DefaultLease
	}
	target := opts.SegmentRows
	if target <= 0 || target > objectRows {
		target = objectRows
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	owner := opts.Owner
	if owner == "" {
		owner = defaultOwner()
	}
	l, err := r.acquireLease(ctx, owner, ttl, now)
	if err != nil {
		return res, err
	}
	defer r.release(context.WithoutCancel(ctx), l)
	unlock, err := history.LockDir(r.Dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	snap, err := r.pullLocked(ctx)
	if err != nil {
		return res, err
	}
	winner := snap.winners()
	parts := map[string][]Cached{}
	for _, o := range snap.Objects {
		if o.Corrupt != "" {
			res.Corrupt++
			continue
		}
		superseded := false
		for id := range o.Sessions {
			if winner[id] != o.Key {
				superseded = true
			}
		}
		if o.Rows < target/2 || superseded {
			parts[partition(o.Key)] = append(parts[partition(o.Key)], o)
		}
	}
	tmp, err := os.MkdirTemp(r.Dir, ".tmp-compact-")
	if err != nil {
		return res, fmt.Errorf("remote: compact: %w", err)
	}
	defer os.RemoveAll(tmp)
	var merged []string
	names := sortedKeys(parts)
	for _, part := range names {
		objs := parts[part]
		if len(objs) < 2 && !hasSuperseded(objs, winner) {
			continue
		}
		// A killed compaction's segments, merged again, come out with
		// the same bytes and so the same keys: they are the new
		// segments, not ones to delete.
		written := map[string]bool{}
		w := &objectWriter{ctx: ctx, store: r.Store, tmp: tmp, partition: part, kind: "seg", max: int(target),
			put: func(key string, _ int, n int64, _ bool) {
				written[key] = true
				res.Segments++
				res.Rows += n
			}}
		for _, o := range objs {
			err := w.add(o.Rows, func(each func([]history.Row) error) error {
				var keep []history.Row
				return history.ReadRowsEach(snap.Path(o), func(batch []history.Row) error {
					keep = keep[:0]
					for _, row := range batch {
						if winner[row.SessionID] == o.Key {
							keep = append(keep, row)
						}
					}
					if len(keep) == 0 {
						return nil
					}
					return each(keep)
				})
			})
			if err != nil {
				return res, fmt.Errorf("remote: compact: cached %s: %w", o.Key, err)
			}
		}
		if err := w.flush(); err != nil {
			return res, fmt.Errorf("remote: compact: %w", err)
		}
		for _, o := range objs {
			if !written[o.Key] {
				merged = append(merged, o.Key)
			}
		}
	}
	if len(merged) == 0 {
		return res, nil
	}
	failpoint.Hit(FailpointEnv, FailCompactUploaded)
	// Deleting is the one step that must not happen without the lease:
	// a compaction that lost it may be racing one that took it over.
	if err := r.renew(ctx, l, ttl, now); err != nil {
		return res, err
	}
	sort.Strings(merged)
	for i, k := range merged {
		if err := r.Store.Delete(ctx, k, Cond{}); err != nil {
			return res, fmt.Errorf("remote: compact: %w", err)
		}
		res.Merged++
		if i == 0 {
			failpoint.Hit(FailpointEnv, FailCompactDeleted)
		}
	}
	return res, nil
}

func hasSuperseded(objs []Cached, winner map[string]string) bool {
	for _, o := range objs {
		for id := range o.Sessions {
			if winner[id] != o.Key {
				return true
			}
		}
	}
	return false
}
