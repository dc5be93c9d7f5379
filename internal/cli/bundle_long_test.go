package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/heappeak"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestBundleHoldsNotTheSession: 'bundle' of a 200,000-event session reads
// the log a record at a time for each member made of its events
// (events.parquet a batch of rows at a time, events.jsonl, trace.json as
// the spans end), so the heap is the fold and a batch, whatever the log's
// length. It once loaded the log and built every member from it whole:
// 514 MiB of heap here, now 122 (the fold's 100,000 calls and the
// projection, which last_state.json holds).
func TestBundleHoldsNotTheSession(t *testing.T) {
	if testing.Short() {
		t.Skip("records a 200,000-event session")
	}
	home := t.TempDir()
	st := recorder.Store{Root: home}
	const id = "b0d1e00000200000"
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, err := st.Create(session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "long", Provider: "p", Model: "m"}, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	evs := make([]session.Event, 0, 4096)
	for i := 1; i < n; i++ {
		// Calls of their own, a few hundred open at a time: the fold
		// holds the calls, as a real session's does.
		call := fmt.Sprintf("c%d", i/2)
		e := session.Event{TS: ts.Add(time.Duration(i) * time.Millisecond), Kind: session.KindToolIntent, CallID: call, Tool: "read_file",
			Args: []byte(`{"path":"a.go"}`)}
		if i%2 == 1 {
			e.Kind, e.Args, e.Status, e.Output = session.KindToolResult, nil, session.ResultOK, strings.Repeat("a line of a file that was read\n", 20)
		}
		evs = append(evs, e)
		if len(evs) == cap(evs) || i == n-1 {
			if _, err := s.Append(evs...); err != nil {
				t.Fatal(err)
			}
			evs = evs[:0]
		}
	}
	s.Close()
	var errb strings.Builder
	code := -1
	_, peak := heappeak.During(func() {
		code = Main(context.Background(), []string{"--home", home, "bundle", id, "-o", filepath.Join(t.TempDir(), "b.tar.zst")}, Streams{Out: io.Discard, Err: &errb})
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	t.Logf("peak heap %.0f MiB", float64(peak)/(1<<20))
	if peak > 192<<20 {
		t.Errorf("bundle of %d events peaked at %.0f MiB of heap, want under 192 MiB: it holds the session", n, float64(peak)/(1<<20))
	}
}
