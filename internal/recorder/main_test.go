package recorder

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// The test binary doubles as the child process of the crash and lease
// tests: these variables name what the child does.
const (
	crashChildEnv = "AGENTCTL_RECORDER_CRASH_CHILD" // log path: append until killed
	leaseChildEnv = "AGENTCTL_RECORDER_LEASE_CHILD" // session dir: hold the lease until killed
	leaseForkEnv  = "AGENTCTL_RECORDER_LEASE_FORK"  // with leaseChildEnv: also hand the lease file to a short-lived child
)

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		os.Exit(0)
	}
	if dir := os.Getenv(leaseChildEnv); dir != "" {
		leaseChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fixedClock returns a clock that advances one second per reading.
func fixedClock() func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return t0.Add(time.Duration(n) * time.Second)
	}
}

// sampleEvents returns n events, the first a session_started header, with
// seq 1..n and fixed times.
func sampleEvents(n int) []session.Event {
	evs := make([]session.Event, n)
	for i := range evs {
		ev := session.Event{Seq: int64(i + 1), TS: t0.Add(time.Duration(i) * time.Second), SessionID: "0123456789abcdef"}
		switch {
		case i == 0:
			ev.Kind, ev.Name, ev.Provider, ev.Model = session.KindSessionStarted, "demo", "anthropic", "claude-x"
		case i%2 == 1:
			ev.Kind, ev.Text = session.KindUserMessage, fmt.Sprintf("message %d", i)
		default:
			ev.Kind, ev.InputTokens, ev.OutputTokens = session.KindModelCall, 100, 20
		}
		evs[i] = ev
	}
	return evs
}

// encodeLog returns the bytes of a log holding evs, and the end offset of
// the file header followed by the end offset of each frame.
func encodeLog(t testing.TB, evs []session.Event) ([]byte, []int64) {
	t.Helper()
	b := fileHeader()
	ends := []int64{int64(len(b))}
	for _, ev := range evs {
		p, err := encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		b = appendFrame(b, RecordEvent, p)
		ends = append(ends, int64(len(b)))
	}
	return b, ends
}

func writeFile(t testing.TB, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), LogFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readOnly checks in t.Cleanup that the file at path is byte-identical at
// the end of the test.
func readOnly(t *testing.T, path string) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		after, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("read %s after test: %v", path, err)
		} else if !bytes.Equal(before, after) {
			t.Errorf("%s was modified by a read-only operation", path)
		}
	})
}

func seqs(evs []session.Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Seq
	}
	return out
}
