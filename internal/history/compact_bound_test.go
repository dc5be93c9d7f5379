package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/heappeak"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// recordLong records a finished session of n tool results.
func recordLong(t *testing.T, st recorder.Store, id string, n int) {
	t.Helper()
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	evs := []session.Event{{SessionID: id, TS: ts, Kind: session.KindSessionStarted, Name: "long", Provider: "p", Model: "m"}}
	for i := range n {
		evs = append(evs, session.Event{TS: ts.Add(time.Duration(i) * time.Millisecond), Kind: session.KindToolResult, CallID: fmt.Sprint("c", i),
			Tool: "read_file", Status: session.ResultOK, Output: fmt.Sprint("line ", i, " of a file, long enough to cost what an output costs\n")})
	}
	evs = append(evs, session.Event{TS: ts.Add(time.Hour), Kind: session.KindSessionFinished, Status: "done"})
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
}

// TestCompactHoldsASegment: compaction (the automatic one runs inside the
// `agentctl run` that seals the 64th file) holds at most a segment's rows:
// 64 sessions of 4,000 events held 631 MiB of heap when a segment was
// closed only past 256k rows, with room for 128k more made up front.
func TestCompactHoldsASegment(t *testing.T) {
	if testing.Short() {
		t.Skip("records 256,000 events")
	}
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync, h.AutoCompactFiles = true, -1
	var ids []string
	for s := range 64 {
		id := fmt.Sprintf("b%015d", s)
		recordLong(t, st, id, 4000)
		ids = append(ids, id)
	}
	if _, err := h.Seal(ids...); err != nil {
		t.Fatal(err)
	}
	var res history.CompactResult
	var err error
	base, peak := heappeak.During(func() { res, err = h.Compact(history.CompactOptions{SmallOnly: true}) })
	if err != nil {
		t.Fatal(err)
	}
	held := (int64(peak) - int64(base)) >> 20
	t.Logf("compaction of 64 x 4,002 rows into %d segments: %d MiB of heap held", res.Segments, held)
	if held > 256 {
		t.Errorf("compaction held %d MiB: more than a segment's rows", held)
	}
	live := liveRows(t, h)
	for _, id := range ids {
		if len(live[id]) != 4002 {
			t.Fatalf("%s: %d live rows after compaction, want 4002", id, len(live[id]))
		}
	}
}

// TestBigSessionIsItsOwnSegment: a sealed session as large as a segment
// is listed as one as it is (same file, same checksum), not read and
// written again; the small ones around it are merged; every row stays
// live once.
func TestBigSessionIsItsOwnSegment(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync, h.AutoCompactFiles = true, -1
	ids := []string{"c000000000000001", "c000000000000002", "c000000000000003", "c000000000000004"}
	recordLong(t, st, ids[0], 60)
	for _, id := range ids[1:] {
		recordLong(t, st, id, 5)
	}
	if _, err := h.Seal(ids...); err != nil {
		t.Fatal(err)
	}
	before, _ := h.Manifest()
	big := before.Files[0]
	for _, f := range before.Files {
		if before.Sessions[ids[0]].File == f.Path {
			big = f
		}
	}
	res, err := h.Compact(history.CompactOptions{SegmentRows: 40})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := h.Manifest()
	var kept *history.FileEntry
	for i, f := range after.Files {
		if f.Path == big.Path {
			kept = &after.Files[i]
		}
	}
	if kept == nil || !kept.Segment || kept.CRC32C != big.CRC32C || after.Sessions[ids[0]].File != big.Path {
		t.Errorf("the big session's file %s: %+v after compaction, want it listed as a segment as it was (%+v)", big.Path, kept, res)
	}
	if res.Merged != 3 || res.Segments != 1 {
		t.Errorf("compaction %+v: want the 3 small files merged into 1 segment", res)
	}
	live := liveRows(t, h)
	for i, id := range ids {
		want := 7
		if i == 0 {
			want = 62
		}
		if len(live[id]) != want {
			t.Errorf("%s: %d live rows, want %d", id, len(live[id]), want)
		}
	}
	// Compacting again changes nothing.
	again, err := h.Compact(history.CompactOptions{SegmentRows: 40})
	if err != nil || again.Merged != 0 || again.Segments != 0 {
		t.Errorf("a second compaction: %+v, %v", again, err)
	}
}
