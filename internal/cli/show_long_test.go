package cli

import (
	"strings"
	"testing"

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
	const id, n = "5a0e000000200000", 200_000
	recordLong(t, home, id, n, func(int) session.Event {
		return session.Event{Kind: session.KindToolResult, CallID: "c", Tool: "read_file", Status: session.ResultOK,
			Output: strings.Repeat("a line of a file that was read\n", 20)}
	})
	for _, args := range [][]string{{"show", id}, {"show", "--json", id}} {
		if peak := commandHeap(t, home, args...); peak > 64<<20 {
			t.Errorf("%v of %d events peaked at %.0f MiB of heap, want under 64 MiB: it holds the session", args, n, float64(peak)/(1<<20))
		}
	}
}
