package bundle_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/session"
)

// TestReadEvents: the events of events.jsonl come back decoded, from a
// verified bundle only, with errors that name the file; no temp folder is
// left behind either way.
func TestReadEvents(t *testing.T) {
	line := func(e session.Event) string {
		b, err := session.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	hdr := session.Event{Seq: 1, Kind: session.KindSessionStarted, SessionID: "x", Model: "m"}
	msg := session.Event{Seq: 2, Kind: session.KindUserMessage, Text: "hi"}
	good := mkArchive(t, []entry{reg(bundle.EventsMember, line(hdr)+line(msg)), reg("env.txt", "os: linux\n")}, true)
	for _, tc := range []struct {
		name    string
		archive []byte // nil: no file
		want    []session.Event
		wantErr func(err error, path string) bool
	}{
		{"events", good, []session.Event{hdr, msg}, nil},
		{"no events", mkArchive(t, []entry{reg(bundle.EventsMember, "")}, true), nil, nil},
		{"missing file", nil, nil, func(err error, _ string) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"cut short", good[:len(good)/2], nil, func(err error, p string) bool {
			return errors.Is(err, bundle.ErrRefused) && strings.HasPrefix(err.Error(), "open "+p+": ")
		}},
		{"no manifest", mkArchive(t, []entry{reg(bundle.EventsMember, line(hdr))}, false), nil, func(err error, _ string) bool {
			return errors.Is(err, bundle.ErrManifest)
		}},
		{"no events member", mkArchive(t, []entry{reg("env.txt", "os: linux\n")}, true), nil, func(err error, p string) bool {
			return errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(err.Error(), p+": ")
		}},
		{"bad line", mkArchive(t, []entry{reg(bundle.EventsMember, line(hdr)+"{not json\n")}, true), nil, func(err error, p string) bool {
			return strings.HasPrefix(err.Error(), p+" "+bundle.EventsMember+": ")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			p := filepath.Join(t.TempDir(), "b.tar.zst")
			if tc.archive != nil {
				os.WriteFile(p, tc.archive, 0o644)
			}
			m, evs, err := bundle.ReadEvents(context.Background(), p)
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err, p) {
					t.Errorf("ReadEvents = %v, not the error wanted", err)
				}
			} else if err != nil {
				t.Fatalf("ReadEvents = %v", err)
			} else {
				if m.SessionID != "x" {
					t.Errorf("manifest session = %q, want x", m.SessionID)
				}
				if len(evs) != len(tc.want) {
					t.Fatalf("ReadEvents = %d events, want %d", len(evs), len(tc.want))
				}
				for i := range evs {
					if got, want := line(evs[i]), line(tc.want[i]); got != want {
						t.Errorf("event %d = %s, want %s", i, got, want)
					}
				}
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left behind in TMPDIR: %v", ents)
			}
		})
	}
}

// TestReadEventsOfWrite: a bundle Write made reads back with the events
// of the session's log.
func TestReadEventsOfWrite(t *testing.T) {
	st, id, _ := newSession(t)
	p, _ := writeBundle(t, st, id)
	m, evs, err := bundle.ReadEvents(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if m.SessionID != id || len(evs) != len(want) {
		t.Fatalf("ReadEvents = session %s, %d events; want %s, %d", m.SessionID, len(evs), id, len(want))
	}
	for i := range evs {
		if evs[i].Seq != want[i].Seq || evs[i].Kind != want[i].Kind {
			t.Errorf("event %d = seq %d %s, want seq %d %s", i, evs[i].Seq, evs[i].Kind, want[i].Seq, want[i].Kind)
		}
	}
}
