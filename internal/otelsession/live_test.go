package otelsession

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestLive: with the background writer on, a trace shows up in the home
// once it has been quiet for Settle, while the Ingester is still open
// (what `agentctl sessions` and `show` read while collect runs), and its
// spans came from concurrent exporters, one span a request.
func TestLive(t *testing.T) {
	st := recorder.Store{Root: t.TempDir()}
	opts := testOpts()
	opts.NoBackground, opts.Settle = false, 100*time.Millisecond
	in, err := NewIngester(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	parts := split(loadCapture(t, filepath.Join(captures, "vercel-genai", "http-protobuf")))
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := in.Traces(context.Background(), p.traces); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	_, want := ingestAll(t, loadCapture(t, filepath.Join(captures, "vercel-genai", "http-protobuf")))
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, _ := st.IDs()
		if len(ids) == 1 {
			evs, _, err := st.Load(ids[0]) // the folder may be there before its log
			if err != nil && !errors.Is(err, recorder.ErrNotStarted) {
				t.Fatal(err)
			}
			// The header is created, then the trace's events appended:
			// a reader may see the header alone for a moment.
			if len(evs) == len(oneSession(t, want)) {
				if a, b := encodeAll(t, oneSession(t, want)), encodeAll(t, evs); a != b {
					t.Errorf("live session differs:\n got: %s\nwant: %s", b, a)
				}
				// A collected session is running while the collector
				// holds it (as a run is while its process writes it),
				// and imported once let go.
				if sum := st.Summary(ids[0]); sum.Status != session.StatusRunning {
					t.Errorf("status %s while collecting, want running", sum.Status)
				}
				if err := in.Close(); err != nil {
					t.Fatal(err)
				}
				if sum := st.Summary(ids[0]); sum.Status != session.StatusImported {
					t.Errorf("status %s after collecting, want imported", sum.Status)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no session 10s after the exports")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
