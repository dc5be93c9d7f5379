package history_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/vfs"
	"github.com/agentctl/agentctl/internal/vfs/vfstest"
)

var faultIDs = []string{"f000000000000001", "f000000000000002", "f000000000000003"}

// faultHome records three sessions in home and seals the first, which then
// grows (a resume), so that sealing it again retires its first file.
func faultHome(t *testing.T, home string) {
	st := recorder.Store{Root: home}
	for _, id := range faultIDs {
		record(t, st, id)
	}
	h := history.New(home)
	h.NoSync = true
	if _, err := h.Seal(faultIDs[0]); err != nil {
		t.Fatal(err)
	}
	appendUnknown(t, st, faultIDs[0])
}

// tolerated reports whether the failure of operation i of ops is one the
// history ignores by design: removing a retired or leftover file (and
// syncing the folder it was removed from), which the next compaction
// removes again.
func tolerated(ops []vfs.Op, i int) bool {
	return ops[i].Kind == vfs.OpRemove || (ops[i].Kind == vfs.OpSyncDir && i > 0 && ops[i-1].Kind == vfs.OpRemove)
}

// sweepHistory sweeps a fault through work (a Seal or a Compact of the
// home that faultHome made, writing through fsys) and checks, at every
// point and in every crash clone, what checkHistory checks. work returns
// the error it was given and the per-session errors of a Seal.
func sweepHistory(t *testing.T, setup func(t *testing.T, home string), work func(h *history.History) ([]string, error)) int {
	// One sealing worker: operation i is then the same operation in every
	// run.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ops []vfs.Op
	template := t.TempDir()
	setup(t, template)
	return vfstest.Sweep(t, func(t *testing.T, p vfstest.Point) {
		home := filepath.Join(t.TempDir(), "home")
		if err := os.CopyFS(home, os.DirFS(template)); err != nil {
			t.Fatal(err)
		}
		base, crash := vfstest.Base(t, p, home)
		h := history.New(home)
		h.AutoCompactFiles = -1
		h.FS = p.FS(base)
		perSession, err := work(h)
		if p.Mode < 0 {
			ops = p.In.Ops()
		}
		switch {
		case p.Mode < 0 || p.End:
			if err != nil || len(perSession) > 0 {
				t.Fatalf("without faults: %v %v", err, perSession)
			}
		case err == nil && len(perSession) == 0 && tolerated(ops, p.In.At):
			t.Logf("tolerated: %s", ops[p.In.At])
		default:
			checkReported(t, p, err, perSession)
		}
		if crash == nil {
			checkHistory(t, home)
			return
		}
		for _, keep := range []float64{0, 0.5} {
			clone := filepath.Join(t.TempDir(), "clone")
			if err := crash.Clone(clone, vfs.CloneOptions{KeepUnsynced: keep}); err != nil {
				t.Fatal(err)
			}
			t.Logf("crash clone keeping %v of unsynced appends", keep)
			checkHistory(t, clone)
		}
	})
}

// checkReported fails t unless the fault of p is reported, by the error or
// by a session's error, naming the file it was on.
func checkReported(t *testing.T, p vfstest.Point, err error, perSession []string) {
	t.Helper()
	fired, ok := p.In.Fired()
	if !ok {
		t.Fatalf("operation %d was never reached", p.In.At)
	}
	msgs := perSession
	if err != nil {
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("%s at %s: the error does not wrap the fault: %v", p.Mode, fired, err)
		}
		msgs = append(msgs, err.Error())
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, "injected") {
		t.Fatalf("%s at %s: not reported (error %v, sessions %q)", p.Mode, fired, err, perSession)
	}
	if !strings.Contains(all, filepath.Base(fired.Path)) {
		t.Errorf("%s at %s: the report does not name %s: %s", p.Mode, fired, filepath.Base(fired.Path), all)
	}
}

// checkHistory checks the history of home: the manifest loads; every file
// it lists is there, whole, with the rows it says; every sealed session's
// live rows are seqs 1 to its last seq, once each; a query over the home
// counts every event of the logs once and skips no file; and a Seal and a
// Compact without faults then succeed and seal every session.
func checkHistory(t *testing.T, home string) {
	t.Helper()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync, h.AutoCompactFiles = true, -1
	check := func(when string, withQuery bool) {
		m, err := h.Manifest()
		if err != nil {
			t.Fatalf("%s: the manifest does not load: %v", when, err)
		}
		files := map[string]bool{}
		for _, f := range m.Files {
			files[f.Path] = true
			rows, err := history.ReadRows(filepath.Join(h.Dir, filepath.FromSlash(f.Path)))
			if err != nil {
				t.Fatalf("%s: the manifest lists %s: %v", when, f.Path, err)
			}
			if int64(len(rows)) != f.Rows {
				t.Fatalf("%s: the manifest lists %s with %d rows, it has %d", when, f.Path, f.Rows, len(rows))
			}
		}
		for id, e := range m.Sessions {
			if !files[e.File] {
				t.Fatalf("%s: session %s is in %s, which the manifest does not list", when, id, e.File)
			}
		}
		for id, rows := range liveRows(t, h) {
			e := m.Sessions[id]
			if int64(len(rows)) != e.LastSeq {
				t.Fatalf("%s: session %s has %d live rows, sealed through seq %d", when, id, len(rows), e.LastSeq)
			}
			seqs := make([]int64, len(rows)) // a segment's rows are in kind order
			for i, r := range rows {
				seqs[i] = r.Seq
			}
			slices.Sort(seqs)
			for i, seq := range seqs {
				if seq != int64(i+1) {
					t.Fatalf("%s: session %s: live rows have seqs %v, want 1 to %d once each", when, id, seqs, e.LastSeq)
				}
			}
		}
		if !withQuery {
			return
		}
		total := 0
		for _, id := range faultIDs {
			total += len(readLog(t, st, id))
		}
		db, err := query.Open(context.Background(), home, nil)
		if err != nil {
			t.Fatalf("%s: query does not open the home: %v", when, err)
		}
		defer db.Close()
		res, err := db.Query(context.Background(), "select count(*) from events")
		if err != nil {
			t.Fatalf("%s: query: %v", when, err)
		}
		if got := fmt.Sprint(res.Rows[0][0]); got != fmt.Sprint(total) {
			t.Errorf("%s: query counts %s events, the logs hold %d", when, got, total)
		}
		if s := db.Skipped(); len(s) > 0 {
			t.Errorf("%s: query skipped corrupt history files: %v", when, s)
		}
	}
	check("after the fault", true)
	res, err := h.Seal(faultIDs...)
	if err != nil {
		t.Fatalf("a Seal after the fault: %v", err)
	}
	for _, r := range res {
		if r.Err != "" {
			t.Fatalf("a Seal after the fault: %s: %s", r.SessionID, r.Err)
		}
	}
	if _, err := h.Compact(history.CompactOptions{}); err != nil {
		t.Fatalf("a Compact after the fault: %v", err)
	}
	check("after a Seal and Compact without faults", false)
	m, _ := h.Manifest()
	for _, id := range faultIDs {
		if e, ok := m.Sessions[id]; !ok || e.LastSeq != int64(len(readLog(t, st, id))) {
			t.Errorf("after a Seal without faults: session %s sealed as %+v", id, e)
		}
	}
	ents, _ := os.ReadDir(h.Dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("after a Compact without faults: %s is left", e.Name())
		}
	}
}

func sealAll(h *history.History) ([]string, error) {
	res, err := h.Seal(faultIDs...)
	var msgs []string
	for _, r := range res {
		if r.Err != "" {
			msgs = append(msgs, r.Err)
		}
	}
	return msgs, err
}

// TestFaultSweepSeal: sealing three sessions, one of them a reseal that
// retires its first file, with each operation failed, cut short or crashed
// at.
func TestFaultSweepSeal(t *testing.T) {
	n := sweepHistory(t, faultHome, sealAll)
	t.Logf("history seal: %d fault points", n)
}

// sealedFaultHome is faultHome with every session sealed: what a
// compaction starts from.
func sealedFaultHome(t *testing.T, home string) *history.History {
	faultHome(t, home)
	h := history.New(home)
	h.NoSync, h.AutoCompactFiles = true, -1
	if msgs, err := sealAll(h); err != nil || len(msgs) > 0 {
		t.Fatal(err, msgs)
	}
	return h
}

// TestFaultSweepCompact: compacting three per-session files into a segment
// (the collection of garbage, the segment, the manifest swap, the removal
// of what it replaced).
func TestFaultSweepCompact(t *testing.T) {
	n := sweepHistory(t,
		func(t *testing.T, home string) {
			h := sealedFaultHome(t, home)
			// A leftover of a crash, for the garbage collection to remove.
			os.WriteFile(filepath.Join(h.Dir, ".tmp-leftover.parquet"), []byte("half"), 0o644)
		},
		func(h *history.History) ([]string, error) {
			_, err := h.Compact(history.CompactOptions{})
			return nil, err
		})
	t.Logf("history compaction: %d fault points", n)
}

// TestFaultSweepCompactSegments: the same compaction with segments so
// small that the resealed session (one row more than the others) is
// adopted as a segment as it is, and the two others cannot share one: a
// segment is closed before the next file would overflow it. Each of the
// two writes, the adoption and the manifest swap failed, cut short or
// crashed at.
func TestFaultSweepCompactSegments(t *testing.T) {
	var target int64
	n := sweepHistory(t,
		func(t *testing.T, home string) {
			h := sealedFaultHome(t, home)
			m, err := h.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			target = m.Sessions[faultIDs[0]].LastSeq
			if other := m.Sessions[faultIDs[1]].LastSeq; other >= target || 2*other <= target {
				t.Fatalf("sessions of %d and %d rows: the sweep needs the first larger and two others past it", target, other)
			}
		},
		func(h *history.History) ([]string, error) {
			res, err := h.Compact(history.CompactOptions{SegmentRows: target})
			if err != nil {
				return nil, err
			}
			if res.Segments != 2 {
				return []string{fmt.Sprintf("compaction wrote %d segments, want 2 (%+v)", res.Segments, res)}, nil
			}
			m, err := h.Manifest() // read from the disk, past the injector
			if err != nil {
				return []string{err.Error()}, nil
			}
			for _, f := range m.Files {
				if f.Path == m.Sessions[faultIDs[0]].File && !f.Segment {
					return []string{fmt.Sprintf("the resealed session's file %s was not adopted as a segment", f.Path)}, nil
				}
			}
			return nil, nil
		})
	t.Logf("history compaction into several segments: %d fault points", n)
}
