package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/remote"
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
