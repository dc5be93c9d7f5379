package recorder

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
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

// TestStreamFileAgreesWithReadFile: StreamFile, which Store.Fold and
// package query read logs with, finds what ReadFile finds (the events,
// the Tail, the kind of error) on a log cut at every byte and on one with
// each byte of a frame flipped.
func TestStreamFileAgreesWithReadFile(t *testing.T) {
	st := Store{Root: t.TempDir()}
	sess, err := st.Create(session.Event{Kind: session.KindSessionStarted, SessionID: "5f0000000000000a", Model: "m"}, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []session.Event{
		{Kind: session.KindModelCall, InputTokens: 10, OutputTokens: 3},
		{Kind: session.KindToolIntent, CallID: "a", Tool: "bash"},
		{Kind: session.KindToolResult, CallID: "a", Status: session.ResultOK, Output: "ok"},
		{Kind: session.KindSessionFinished, Status: string(session.StatusDone)},
	} {
		if _, err := sess.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	sess.Close()
	whole, err := os.ReadFile(st.LogPath(sess.ID))
	if err != nil {
		t.Fatal(err)
	}
	p := t.TempDir() + "/events.log"
	check := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		evs, tail, rerr := ReadFile(p)
		var seqs []int64
		n, stail, serr := StreamFile(p, func(e session.Event) { seqs = append(seqs, e.Seq) })
		if n != len(evs) || len(seqs) != len(evs) || stail != tail || (rerr == nil) != (serr == nil) ||
			errors.Is(rerr, ErrCorrupt) != errors.Is(serr, ErrCorrupt) {
			t.Fatalf("%s: StreamFile = %d events, %+v, %v; ReadFile = %d events, %+v, %v", name, n, stail, serr, len(evs), tail, rerr)
		}
		for i, e := range evs {
			if seqs[i] != e.Seq {
				t.Fatalf("%s: event %d has seq %d, ReadFile's %d", name, i, seqs[i], e.Seq)
			}
		}
	}
	for cut := range len(whole) + 1 {
		check(fmt.Sprintf("cut at %d", cut), whole[:cut])
	}
	for i := FileHeaderSize; i < len(whole); i += 7 {
		b := bytes.Clone(whole)
		b[i] ^= 0x20
		check(fmt.Sprintf("byte %d flipped", i), b)
	}
}
