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

// recordLong records a session of n events in home, event(i) giving the
// i-th after its session_started (its time is set here, a millisecond
// apart), appended 4,096 at a time so the test does not hold the session
// it writes.
func recordLong(t *testing.T, home, id string, n int, event func(i int) session.Event) {
	t.Helper()
	st := recorder.Store{Root: home}
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, err := st.Create(session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "long", Provider: "p", Model: "m"}, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs := make([]session.Event, 0, 4096)
	for i := 1; i < n; i++ {
		e := event(i)
		e.TS = ts.Add(time.Duration(i) * time.Millisecond)
		evs = append(evs, e)
		if len(evs) == cap(evs) || i == n-1 {
			if _, err := s.Append(evs...); err != nil {
				t.Fatal(err)
			}
			evs = evs[:0]
		}
	}
}

// commandHeap runs agentctl with args over home and gives the peak of the
// Go heap while it ran; a non-zero exit fails the test.
func commandHeap(t *testing.T, home string, args ...string) uint64 {
	t.Helper()
	var errb strings.Builder
	code := -1
	_, peak := heappeak.During(func() {
		code = Main(context.Background(), append([]string{"--home", home}, args...), Streams{Out: io.Discard, Err: &errb})
	})
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	t.Logf("%v: peak heap %.0f MiB", args, float64(peak)/(1<<20))
	return peak
}
