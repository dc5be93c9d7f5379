package bundle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/session"
)

// TestStreamedMembersAreWholeForms: the members a bundle makes of a
// session's events while reading its log a record at a time are, byte for
// byte, what the whole-session forms make of the events loaded at once
// (how a bundle was built before): events.parquet as one history.WriteRows,
// events.jsonl, trace.json as otlp.WriteJSON of otlp.Spans, and
// last_state.json as bundle.Fold. The sessions are real fixtures: the
// loop of fixtures/diagnose and the compacting one of fixtures/sessions.
func TestStreamedMembersAreWholeForms(t *testing.T) {
	loop, loopID, _ := newSession(t)
	tests := []struct {
		name string
		st   recorder.Store
		id   string
	}{
		{"loop", loop, loopID},
		{"compaction", fixtureSession(t, "c0c0c0c000000002-compaction.jsonl"), "c0c0c0c000000002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, tail, err := tt.st.Load(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				line, _ := session.Encode(e)
				if strings.Contains(string(line), secret) {
					t.Fatal("the fixture's events hold the secret: the redacted members would differ from the loaded events")
				}
			}
			opts := otlp.Options{CaptureContent: true}
			trace := func(w io.Writer, id string, each func(func(session.Event))) error {
				return otlp.WriteSessionJSON(w, id, each, opts)
			}
			p := filepath.Join(t.TempDir(), "b.tar.zst")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bundle.Write(context.Background(), f, tt.st, tt.id, bundle.Options{Trace: trace}); err != nil {
				t.Fatal(err)
			}
			f.Seek(0, io.SeekStart)
			dir := filepath.Join(t.TempDir(), "x")
			if _, err := bundle.Extract(context.Background(), f, dir, bundle.ExtractOptions{}); err != nil {
				t.Fatal(err)
			}
			f.Close()
			member := func(name string) []byte {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}

			rows := make([]history.Row, len(evs))
			for i, e := range evs {
				if rows[i], err = history.FromEvent(tt.id, e); err != nil {
					t.Fatal(err)
				}
			}
			pq := filepath.Join(t.TempDir(), "whole.parquet")
			if _, err := history.WriteRows(pq, rows, true); err != nil {
				t.Fatal(err)
			}
			whole, _ := os.ReadFile(pq)
			var jsonl bytes.Buffer
			for _, e := range evs {
				line, _ := session.Encode(e)
				jsonl.Write(append(line, '\n'))
			}
			var tr bytes.Buffer
			if err := otlp.WriteJSON(&tr, otlp.Spans(tt.id, evs, opts)); err != nil {
				t.Fatal(err)
			}
			var got bundle.State
			if err := json.Unmarshal(member("last_state.json"), &got); err != nil {
				t.Fatal(err)
			}
			state := bundle.Fold(tt.id, evs, tail, false, nil)
			state.WorkspaceGitSHA = got.WorkspaceGitSHA // from checkpoints.jsonl, not the events
			sb, _ := json.MarshalIndent(state, "", "  ")

			for _, c := range []struct {
				name string
				want []byte
			}{
				{"events.parquet", whole},
				{bundle.EventsMember, jsonl.Bytes()},
				{"trace.json", tr.Bytes()},
				{"last_state.json", append(sb, '\n')},
			} {
				if got := member(c.name); !bytes.Equal(got, c.want) {
					t.Errorf("%s: %d bytes differ from the whole-session form's %d", c.name, len(got), len(c.want))
				}
			}
		})
	}
}

// fixtureSession is a home holding, as a log, the session of
// fixtures/sessions named file (one event a line).
func fixtureSession(t *testing.T, file string) recorder.Store {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "sessions", file))
	if err != nil {
		t.Fatal(err)
	}
	var evs []session.Event
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte{'\n'}) {
		e, err := session.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	st := recorder.Store{Root: t.TempDir()}
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	return st
}
