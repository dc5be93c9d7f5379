package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/heappeak"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/remote"
	"github.com/agentctl/agentctl/internal/session"
)

// failDeletes is a Store whose deletes fail after the first n: a
// compaction stopped between its upload and its deletions.
type failDeletes struct {
	remote.Store
	n int
}

var errStopped = errors.New("stopped")

func (f *failDeletes) Delete(ctx context.Context, key string, c remote.Cond) error {
	if strings.HasPrefix(key, "history/") {
		if f.n == 0 {
			return errStopped
		}
		f.n--
	}
	return f.Store.Delete(ctx, key, c)
}

// TestCompactRerunAfterStop: a compaction stopped after uploading its
// segment (and after deleting none, or one, of the merged objects) is run
// again; the rerun keeps the segment it recreates, and the history reads
// the same at every step.
func TestCompactRerunAfterStop(t *testing.T) {
	for _, deleted := range []int{0, 1, 2} {
		ctx := context.Background()
		mem := &remote.Mem{}
		for _, tag := range []string{"a", "b", "c"} {
			home := makeHome(t, tag, 2)
			h := remote.New(mem, home, nil)
			if _, err := h.Push(ctx, remote.PushOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		const want = 6 * eventsPerSession
		r := remote.New(&failDeletes{Store: mem, n: deleted}, t.TempDir(), nil)
		if _, err := r.Compact(ctx, remote.CompactOptions{}); !errors.Is(err, errStopped) {
			t.Fatalf("deleted %d: stopped Compact = %v", deleted, err)
		}
		reader := remote.New(mem, t.TempDir(), nil)
		if got := count(t, reader, reader.Home, "SELECT count(*) FROM events"); got != want {
			t.Fatalf("deleted %d: events after the stop = %d, want %d", deleted, got, want)
		}
		res, err := reader.Compact(ctx, remote.CompactOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ks := keys(t, mem, "history/")
		if len(ks) != 2 || !strings.Contains(ks[0], "/seg-") || !strings.Contains(ks[1], "/seg-") {
			t.Fatalf("deleted %d: rerun %+v left %v, want one segment per date", deleted, res, ks)
		}
		if got := count(t, reader, reader.Home, "SELECT count(*) FROM events"); got != want {
			t.Fatalf("deleted %d: events after the rerun = %d, want %d", deleted, got, want)
		}
	}
}

// TestPullRemovesStaleSummaries: the query package summarises each cached
// object in the cache's summaries folder; a pull removes the summaries of
// objects the bucket no longer lists (here merged by a compaction) and
// keeps those of the objects it still holds, and the answers do not move.
func TestPullRemovesStaleSummaries(t *testing.T) {
	ctx := context.Background()
	mem := &remote.Mem{}
	for _, tag := range []string{"a", "b"} {
		if _, err := remote.New(mem, makeHome(t, tag, 2), nil).Push(ctx, remote.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reader := remote.New(mem, t.TempDir(), nil)
	sums := func() []string {
		names, _ := filepath.Glob(filepath.Join(reader.Dir, history.SummaryDir, "*.parquet"))
		var keys []string
		for _, n := range names {
			if strings.HasPrefix(filepath.Base(n), ".tmp-") {
				continue
			}
			key, _, ok := history.SummarySource(filepath.Base(n))
			if !ok {
				t.Fatalf("%s is not a summary's name", n)
			}
			keys = append(keys, key)
		}
		sort.Strings(keys)
		return keys
	}
	const q = "SELECT count(*) || ' ' || sum(events) || ' ' || sum(tokens) FROM sessions"
	before := fmt.Sprint(queryOne(t, reader, reader.Home, q))
	if got, want := sums(), keys(t, mem, "history/"); !slices.Equal(got, want) {
		t.Fatalf("summaries of %v, want one of each object %v", got, want)
	}
	// A summary of another version of a listed object (replaced under its
	// key) and a killed reader's old temporary file go too.
	other := filepath.Join(reader.Dir, history.SummaryDir, history.SummaryName(keys(t, mem, "history/")[0], "00000000", "feedbeef")+"12345678.parquet")
	stale := filepath.Join(reader.Dir, history.SummaryDir, ".tmp-summary-1.parquet")
	for _, p := range []string{other, stale} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)
	if _, err := reader.Compact(ctx, remote.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	after := fmt.Sprint(queryOne(t, reader, reader.Home, q))
	if after != before {
		t.Errorf("sessions after the compaction %q, before %q", after, before)
	}
	if got, want := sums(), keys(t, mem, "history/"); !slices.Equal(got, want) {
		t.Errorf("summaries of %v after the compaction, want one of each listed object %v", got, want)
	}
	for _, p := range []string{other, stale} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s not removed by the pull (%v)", filepath.Base(p), err)
		}
	}
}

// TestPullHoldsNotTheObject: a pull reads each object whole to know it
// parses, a batch of rows at a time: a 200,000-row object (a segment of a
// big bucket: ~300 MB as decoded rows, eight downloaded at once) costs a
// pull a few MB of heap, not its rows.
func TestPullHoldsNotTheObject(t *testing.T) {
	const n = 200_000
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	rows := make([]history.Row, 0, n)
	for i := range n {
		e := session.Event{Seq: int64(i%20 + 1), TS: ts.Add(time.Duration(i) * time.Millisecond), Kind: session.KindToolResult,
			CallID: fmt.Sprint("c", i), Tool: "read_file", Status: session.ResultOK, Output: fmt.Sprint("line ", i, " of a file, long enough to cost what an output costs\n")}
		row, err := history.FromEvent(fmt.Sprintf("big-%06d", i/20), e)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	p := filepath.Join(t.TempDir(), "big.parquet")
	if _, err := history.WriteRows(p, rows, true); err != nil {
		t.Fatal(err)
	}
	rows = nil
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	mem := &remote.Mem{}
	if _, err := mem.Put(context.Background(), "history/date=2026-11-29/seg-0123456789abcdef.parquet", b, remote.Cond{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	b = nil
	r := remote.New(mem, t.TempDir(), nil)
	r.NoSync = true
	var snap *remote.Snapshot
	base, peak := heappeak.During(func() {
		snap, err = r.Pull(context.Background())
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Objects[0]; got.Rows != n || len(got.Sessions) != n/20 || got.Sessions["big-000007"] != 20 {
		t.Fatalf("pulled %d rows of %d sessions (big-000007 to seq %d), want %d of %d to 20", got.Rows, len(got.Sessions), got.Sessions["big-000007"], n, n/20)
	}
	held := (int64(peak) - int64(base)) >> 20
	t.Logf("pull of a %d-row object: %d MiB of heap over the %d MiB before", n, held, base>>20)
	if held > 64 {
		t.Errorf("the pull held %d MiB of heap: the object's rows, not a batch", held)
	}
}
