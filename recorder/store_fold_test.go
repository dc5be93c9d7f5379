package recorder

import (
	"os"
	"testing"

	"github.com/agentctl/agentctl/session"
)

// TestStoreSummaryStatus: the status of a log with no end is read from the
// lease (running while a writer holds it, crashed after), and a log damaged
// in the middle is corrupt, whatever its readable part ends with.
func TestStoreSummaryStatus(t *testing.T) {
	st := Store{Root: t.TempDir()}
	sess, err := st.Create(session.Event{Kind: session.KindSessionStarted, SessionID: "5u0000000000000a", Model: "m"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	size := func() int64 {
		fi, err := os.Stat(st.LogPath(sess.ID))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	ends = append(ends, size())
	for _, e := range []session.Event{
		{Kind: session.KindToolIntent, CallID: "a"},
		{Kind: session.KindToolResult, CallID: "a", Status: session.ResultOK},
		{Kind: session.KindSessionFinished, Status: string(session.StatusDone)},
		{Kind: session.KindUserMessage, Text: "again"},
	} {
		if _, err := sess.Append(e); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, size())
	}
	if got := st.Summary(sess.ID); got.Status != session.StatusRunning || got.ToolCalls != 1 {
		t.Errorf("while written: %+v, want running with 1 tool call", got)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if got := st.Summary(sess.ID); got.Status != session.StatusCrashed || got.Err != "" {
		t.Errorf("lease released, no end: %+v, want crashed", got)
	}
	b, _ := os.ReadFile(st.LogPath(sess.ID))
	b[ends[1]+FrameHeaderSize+3] ^= 0x40 // the payload of the result's frame
	os.WriteFile(st.LogPath(sess.ID), b, 0o644)
	got := st.Summary(sess.ID)
	if got.Status != session.StatusCorrupt || got.Err == "" || got.Events != 2 {
		t.Errorf("damaged mid-log: %+v, want corrupt with 2 events read and the error", got)
	}
}
