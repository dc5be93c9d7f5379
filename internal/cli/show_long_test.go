package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/heappeak"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestShowHoldsNotTheSession: 'show' and 'show --json' of a 200,000-event
// session print each event as it is read (recorder.Store.Stream), so the
// heap stays a record and a buffer, whatever the log's length. They once
// read the log whole (Store.Load): 758 and 584 MiB of heap here, now 13
// and 10.
func TestShowHoldsNotTheSession(t *testing.T) {
	if testing.Short() {
		t.Skip("records a 200,000-event session")
	}
	home := t.TempDir()
	st := recorder.Store{Root: home}
	const id = "5a0e000000200000"
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, err := st.Create(session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "long", Provider: "p", Model: "m"}, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	evs := make([]session.Event, 0, 4096)
	for i := 1; i < n; i++ {
		evs = append(evs, session.Event{TS: ts.Add(time.Duration(i) * time.Millisecond), Kind: session.KindToolResult, CallID: "c",
			Tool: "read_file", Status: session.ResultOK, Output: strings.Repeat("a line of a file that was read\n", 20)})
		if len(evs) == cap(evs) || i == n-1 {
			if _, err := s.Append(evs...); err != nil {
				t.Fatal(err)
			}
			evs = evs[:0]
		}
	}
	s.Close()
	for _, args := range [][]string{{"show", id}, {"show", "--json", id}} {
		var errb strings.Builder
		code := -1
		_, peak := heappeak.During(func() {
			code = Main(context.Background(), append([]string{"--home", home}, args...), Streams{Out: io.Discard, Err: &errb})
		})
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		t.Logf("%v: peak heap %.0f MiB", args, float64(peak)/(1<<20))
		if peak > 64<<20 {
			t.Errorf("%v of %d events peaked at %.0f MiB of heap, want under 64 MiB: it holds the session", args, n, float64(peak)/(1<<20))
		}
	}
}
