package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/heappeak"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/session"
)

// unit gives n rows of one session per 20, a batch of 1,000 at a time.
func unit(tag string, n int) func(each func([]history.Row) error) error {
	return func(each func([]history.Row) error) error {
		ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		batch := make([]history.Row, 0, 1000)
		for i := range n {
			e := session.Event{Seq: int64(i%20 + 1), TS: ts.Add(time.Duration(i) * time.Millisecond), Kind: session.KindToolResult,
				CallID: fmt.Sprint("c", i), Tool: "read_file", Status: session.ResultOK, Output: fmt.Sprint("line ", i, " of a file, long enough to cost what an output costs\n")}
			row, err := history.FromEvent(fmt.Sprintf("%s-%06d", tag, i/20), e)
			if err != nil {
				return err
			}
			if batch = append(batch, row); len(batch) == cap(batch) || i == n-1 {
				if err := each(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return nil
	}
}

// TestObjectWriterIsBounded: the objects of a partition are made holding
// at most one object's rows (a unit larger than an object streamed on its
// own), every unit lands whole in one object, and no row is lost or
// written twice. (Holding every row, as push and compaction did, is
// ~700 MB of heap here.)
func TestObjectWriterIsBounded(t *testing.T) {
	mem := &Mem{}
	objects := map[string]int64{}
	w := &objectWriter{ctx: context.Background(), store: mem, tmp: t.TempDir(), partition: "date=2026-11-29", kind: "seg", max: 4096,
		put: func(key string, _ int, n int64, _ bool) { objects[key] += n }}
	units := []int{1500, 1500, 1500, 200_000, 3000, 1000, 20, 40_000}
	total := 0
	var err error
	base, peak := heappeak.During(func() {
		for i, n := range units {
			total += n
			if err = w.add(int64(n), unit(fmt.Sprint("u", i), n)); err != nil {
				return
			}
		}
		err = w.flush()
	})
	if err != nil {
		t.Fatal(err)
	}
	held := (int64(peak) - int64(base)) >> 20
	t.Logf("%d rows in %d objects: %d MiB of heap held", total, len(objects), held)
	if held > 96 {
		t.Errorf("the writer held %d MiB: more than an object's rows", held)
	}
	// Read the objects back: each session's rows in one object, every
	// row once.
	where := map[string]string{}
	var rows int64
	for key, n := range objects {
		b, _, err := mem.Get(context.Background(), key, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "o.parquet")
		os.WriteFile(p, b, 0o644)
		got, err := history.ReadRows(p)
		if err != nil || int64(len(got)) != n {
			t.Fatalf("%s: %d rows (%v), put said %d", key, len(got), err, n)
		}
		if n > 4096 && n != 200_000 && n != 40_000 {
			t.Errorf("%s holds %d rows: more than an object made in memory", key, n)
		}
		for _, r := range got {
			if k, ok := where[r.SessionID]; ok && k != key {
				t.Fatalf("session %s split between %s and %s", r.SessionID, k, key)
			}
			where[r.SessionID] = key
		}
		rows += n
	}
	if rows != int64(total) {
		t.Errorf("%d rows in the objects, %d given", rows, total)
	}
}
