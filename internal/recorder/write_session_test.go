package recorder

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// TestWriteSession: the events WriteSession returns are what Load reads
// back and what Fold folds, with seqs renumbered from 1 whatever the input
// held; the lease is released; and a failure says whether the session was
// made.
func TestWriteSession(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	hdr := session.Event{Kind: session.KindSessionStarted, TS: ts, Name: "n", Provider: "p", Model: "m"}
	body := []session.Event{
		{Seq: 9, TS: ts.Add(time.Second), Kind: session.KindUserMessage, Text: "go"},
		{Seq: 3, TS: ts.Add(2 * time.Second), Kind: session.KindModelCall, InputTokens: 10, OutputTokens: 2},
		{TS: ts.Add(3 * time.Second), Kind: session.KindToolIntent, CallID: "c1", Tool: "bash"},
		{TS: ts.Add(4 * time.Second), Kind: session.KindToolResult, CallID: "c1", Tool: "bash", Status: session.ResultOK},
		{TS: ts.Add(5 * time.Second), Kind: session.KindSessionFinished, Status: string(session.StatusDone)},
	}
	for _, tc := range []struct {
		name      string
		id        string
		evs       []session.Event
		wantState folded
	}{
		{"whole run", "a000000000000001", append([]session.Event{hdr}, body...),
			folded{Events: 6, LastSeq: 6, InputTokens: 10, OutputTokens: 2, ToolCalls: 1, Prompted: true}},
		{"header only", "a000000000000002", []session.Event{hdr}, folded{Events: 1, LastSeq: 1}},
		{"new id", "", append([]session.Event{hdr}, body[:1]...), folded{Events: 2, LastSeq: 2, Prompted: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Store{Root: t.TempDir()}
			evs := append([]session.Event(nil), tc.evs...)
			evs[0].SessionID = tc.id
			out, err := st.WriteSession(evs, Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(evs) {
				t.Fatalf("WriteSession returned %d events, want %d", len(out), len(evs))
			}
			id := out[0].SessionID
			if tc.id != "" && id != tc.id || !validID(id) {
				t.Errorf("WriteSession: session id %q, want %q (or a new one)", id, tc.id)
			}
			for i, e := range out {
				if e.Seq != int64(i+1) || e.Kind != evs[i].Kind || !e.TS.Equal(evs[i].TS) {
					t.Errorf("event %d = seq %d %s %v, want seq %d %s %v", i, e.Seq, e.Kind, e.TS, i+1, evs[i].Kind, evs[i].TS)
				}
			}
			loaded, tail, err := st.Load(id)
			if err != nil || tail.Torn {
				t.Fatalf("Load(%s) = %v, torn %v", id, err, tail.Torn)
			}
			if got, want := encodeAll(t, loaded), encodeAll(t, out); !reflect.DeepEqual(got, want) {
				t.Errorf("Load reads back\n%s\nwant what WriteSession returned\n%s", got, want)
			}
			state, _, err := st.Fold(id)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.wantState
			got := folded{Events: state.Events, LastSeq: state.LastSeq, InputTokens: state.InputTokens,
				OutputTokens: state.OutputTokens, ToolCalls: state.ToolCalls, Prompted: state.Prompted}
			if got != w || state.ID != id || state.Model != "m" {
				t.Errorf("Fold = %+v (id %s, model %s), want %+v (id %s, model m)", got, state.ID, state.Model, w, id)
			}
			l, err := AcquireLease(st.SessionDir(id))
			if err != nil {
				t.Fatalf("the lease is still held after WriteSession: %v", err)
			}
			l.Release()
		})
	}
}

// TestWriteSessionFails: nothing made, no events returned, whichever
// event failed: a session is linked into place whole or not at all (a log
// of the header alone was left, which an import run again took for the
// finished session), and the same session can then be written.
func TestWriteSessionFails(t *testing.T) {
	st := Store{Root: t.TempDir()}
	hdr := session.Event{Kind: session.KindSessionStarted, SessionID: "f000000000000001", Model: "m"}
	if out, err := st.WriteSession(nil, Options{NoSync: true}); err == nil || out != nil {
		t.Errorf("WriteSession(no events) = %v, %v; want an error and no events", out, err)
	}
	notHeader := session.Event{Kind: session.KindUserMessage, SessionID: "f000000000000002"}
	if out, err := st.WriteSession([]session.Event{notHeader}, Options{NoSync: true}); err == nil || out != nil {
		t.Errorf("WriteSession(no header) = %v, %v; want an error and no events", out, err)
	}
	if _, err := os.Lstat(st.SessionDir("f000000000000002")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused header left %s: %v", st.SessionDir("f000000000000002"), err)
	}
	bad := session.Event{Kind: session.KindToolIntent, CallID: "c", Tool: "t", Args: json.RawMessage("{not json")}
	ok := session.Event{Kind: session.KindUserMessage, Text: "go"}
	out, err := st.WriteSession([]session.Event{hdr, ok, bad}, Options{NoSync: true})
	if err == nil || out != nil {
		t.Fatalf("WriteSession(unencodable event) = %v, %v; want an error and no events", out, err)
	}
	if _, err := os.Lstat(st.LogPath(hdr.SessionID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed write left a log: %v", err)
	}
	if tmps, _ := filepath.Glob(st.LogPath(hdr.SessionID) + ".tmp-*"); len(tmps) > 0 {
		t.Errorf("a failed write left %v", tmps)
	}
	// A dead writer's temp log (kill -9 before the link) is removed by the
	// next one.
	os.WriteFile(st.LogPath(hdr.SessionID)+".tmp-dead", []byte("half"), 0o644)
	if out, err := st.WriteSession([]session.Event{hdr, ok}, Options{NoSync: true}); err != nil || len(out) != 2 {
		t.Fatalf("WriteSession after a failed one = %v, %v; want the session", out, err)
	}
	if evs, _, err := st.Load(hdr.SessionID); err != nil || len(evs) != 2 {
		t.Errorf("Load = %d events, %v; want 2", len(evs), err)
	}
	if tmps, _ := filepath.Glob(st.LogPath(hdr.SessionID) + ".tmp-*"); len(tmps) > 0 {
		t.Errorf("a dead writer's temp log is left: %v", tmps)
	}
	if out, err := st.WriteSession([]session.Event{hdr}, Options{NoSync: true}); err == nil || out != nil {
		t.Errorf("WriteSession over an existing session = %v, %v; want an error and no events", out, err)
	}
}

// folded is the part of a session.State TestWriteSession checks.
type folded struct {
	Events, LastSeq, InputTokens, OutputTokens, ToolCalls int64
	Prompted                                              bool
}

func encodeAll(t *testing.T, evs []session.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		b, err := session.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}
