package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// TestBundleHoldsNotTheSession: 'bundle' of a 200,000-event session reads
// the log a record at a time for each member made of its events
// (events.parquet a batch of rows at a time, events.jsonl, trace.json as
// the spans end), so the heap is a batch or the fold, whatever the log's
// length. It once loaded the log and built every member from it whole:
// 514 MiB of heap here; streamed, 122 (the fold's 100,000 calls held
// whole beside events.parquet's row group and its pooled zstd encoders);
// now 51: a lean fold (settled calls packed) made in the events.jsonl
// pass and let go before trace.json, one encoder with a window-sized
// history.
func TestBundleHoldsNotTheSession(t *testing.T) {
	if testing.Short() {
		t.Skip("records a 200,000-event session")
	}
	home := t.TempDir()
	const id, n = "b0d1e00000200000", 200_000
	recordLong(t, home, id, n, func(i int) session.Event {
		// Calls of their own, a few hundred open at a time: the fold
		// holds the calls, as a real session's does.
		e := session.Event{Kind: session.KindToolIntent, CallID: fmt.Sprintf("c%d", i/2), Tool: "read_file", Args: []byte(`{"path":"a.go"}`)}
		if i%2 == 1 {
			e.Kind, e.Args, e.Status, e.Output = session.KindToolResult, nil, session.ResultOK, strings.Repeat("a line of a file that was read\n", 20)
		}
		return e
	})
	if peak := commandHeap(t, home, "bundle", id, "-o", filepath.Join(t.TempDir(), "b.tar.zst")); peak > 72<<20 {
		t.Errorf("bundle of %d events peaked at %.0f MiB of heap, want under 72 MiB: it holds the session, or its calls whole", n, float64(peak)/(1<<20))
	}
}
