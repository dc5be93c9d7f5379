package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// writeTurns writes session id of turns turns (4 events a turn after the
// header and the user message), its texts saying word.
func writeTurns(t *testing.T, st recorder.Store, id string, turns int, word string) {
	t.Helper()
	evs := []session.Event{
		{Kind: session.KindSessionStarted, SessionID: id, Provider: "scripted", Model: "m"},
		{Kind: session.KindUserMessage, Text: "go " + word},
	}
	for i := range turns {
		callID := fmt.Sprintf("call_%d", i)
		evs = append(evs,
			session.Event{Kind: session.KindAssistantMessage, Text: fmt.Sprintf("%s step %d", word, i), ToolCalls: []session.ToolCall{{ID: callID, Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}}},
			session.Event{Kind: session.KindModelCall, Provider: "scripted", Model: "m", InputTokens: 100, OutputTokens: 5},
			session.Event{Kind: session.KindToolIntent, CallID: callID, Tool: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)},
			session.Event{Kind: session.KindToolResult, CallID: callID, Tool: "read_file", Status: session.ResultOK, Output: word + " output"},
		)
	}
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
}

// TestLatePageSeeks: once a page of a log was read, a later page of the
// same log seeks to the index point before it instead of reading the log
// from the start (the bytes read are counted), and answers what a fresh
// server answers; after the log grew, or was replaced by another log with
// other events, pages are still the log's as it is now.
func TestLatePageSeeks(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, st recorder.Store, id string)
	}{
		{"unchanged", func(*testing.T, recorder.Store, string) {}},
		{"grown", func(t *testing.T, st recorder.Store, id string) {
			s, _, err := st.Open(id, recorder.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := range 3000 {
				if _, err := s.Append(session.Event{Kind: session.KindUserMessage, Text: fmt.Sprintf("more %d", i)}); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"replaced", func(t *testing.T, st recorder.Store, id string) {
			// Another log at the same path: longer strings, so every
			// offset the index knows now falls mid-record.
			if err := os.RemoveAll(st.SessionDir(id)); err != nil {
				t.Fatal(err)
			}
			writeTurns(t, st, id, 12600, "replacement")
		}},
		{"rewritten", func(t *testing.T, st recorder.Store, id string) {
			// The same file (inode) cut and written again, longer: the
			// index still seems to fit it, and its first point misleads.
			other := recorder.Store{Root: filepath.Join(t.TempDir(), "other")}
			writeTurns(t, other, id, 12600, "rewritten version")
			b, err := os.ReadFile(other.LogPath(id))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(st.LogPath(id), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := recorder.Store{Root: filepath.Join(t.TempDir(), "home")}
			const id = "long-0001"
			writeTurns(t, st, id, 12500, "original") // 50,002 events, ~8 MB
			fi, err := os.Stat(st.LogPath(id))
			if err != nil {
				t.Fatal(err)
			}
			s := newServer(Options{Store: st})
			ctx := context.Background()
			page := func(s *server, from int64) (*page, int64) {
				t.Helper()
				before := s.idx.read.Load()
				p, err := s.readPage(ctx, ref{id: id}, from, DefaultBudget, DefaultMaxString)
				if err != nil {
					t.Fatalf("page from %d: %v", from, err)
				}
				return p, s.idx.read.Load() - before
			}
			if _, n := page(s, 49000); n < fi.Size()*9/10 {
				t.Fatalf("the first late page read %d of %d bytes: it has no index to seek with", n, fi.Size())
			}
			tt.change(t, st, id)
			for _, from := range []int64{40000, 48500, 49990, 45000} {
				got, n := page(s, from)
				want, _ := page(newServer(Options{Store: st}), from)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("page from %d after the log was %s differs from a fresh server's", from, tt.name)
				}
				if len(got.Events) == 0 || !json.Valid(got.Events[0]) {
					t.Fatalf("page from %d: no events", from)
				}
				// A seek reads at most indexEvery events before from
				// plus the page: well under a tenth of the log.
				if tt.name != "replaced" && tt.name != "rewritten" && n > fi.Size()/10 {
					t.Errorf("page from %d read %d bytes of a %d-byte log: it read from the start", from, n, fi.Size())
				}
			}
		})
	}
}

// TestIndexIsBounded: the server indexes at most maxIndexed logs, and
// forgets the one read least recently first.
func TestIndexIsBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "events.log")
	if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	var x indexes
	learn := func(from, to int) {
		for i := from; i < to; i++ {
			x.learn(fmt.Sprint("log-", i), fi, []point{{indexEvery, 2000}})
		}
	}
	learn(0, maxIndexed)
	x.near("log-0", fi, 2*indexEvery) // read again: now the most recent
	learn(maxIndexed, maxIndexed+1)
	for _, tt := range []struct {
		log  string
		kept bool
	}{{"log-0", true}, {"log-1", false}, {"log-2", true}, {fmt.Sprint("log-", maxIndexed), true}} {
		if _, ok := x.near(tt.log, fi, 2*indexEvery); ok != tt.kept {
			t.Errorf("%s indexed: %v, want %v", tt.log, ok, tt.kept)
		}
	}
	learn(maxIndexed+1, 3*maxIndexed)
	if len(x.logs) != maxIndexed || len(x.lru) != maxIndexed {
		t.Errorf("%d logs indexed (%d in the LRU list), want at most %d", len(x.logs), len(x.lru), maxIndexed)
	}
}
