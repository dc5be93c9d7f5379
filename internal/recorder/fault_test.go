package recorder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
	"github.com/agentctl/agentctl/internal/vfs/vfstest"
)

// faultBatches are the Appends of a sweep: one event, three in one call,
// and one larger than the reader's first chunk.
var faultBatches = [][]session.Event{
	{{Kind: session.KindUserMessage, Text: "one"}},
	{{Kind: session.KindUserMessage, Text: "two"}, {Kind: session.KindUserMessage, Text: "three"}, {Kind: session.KindUserMessage, Text: "four"}},
	{{Kind: session.KindUserMessage, Text: strings.Repeat("big ", 20<<10)}},
}

// logRun is what a writer's work was told: the events acknowledged (their
// Create or Append returned nil), the events of the call that failed, and
// the first error.
type logRun struct {
	acked    []session.Event
	inflight []session.Event
	err      error
}

// appendAll appends faultBatches to w and closes it.
func (r *logRun) appendAll(w *Writer) {
	for _, batch := range faultBatches {
		out, err := w.Append(batch...)
		if err != nil {
			last := r.acked[len(r.acked)-1].Seq
			for i, ev := range batch {
				ev.Seq = last + 1 + int64(i)
				r.inflight = append(r.inflight, ev)
			}
			r.err = err
			w.Close()
			return
		}
		r.acked = append(r.acked, out...)
	}
	r.err = w.Close()
}

// sweepLog sweeps a fault through work (a writer's life over the log in a
// fresh folder made by setup, which returns the events already in it) and
// checks, at every point: the work's error names the fault; the log reads
// back as exactly the acknowledged events (after a crash: the acknowledged
// events and at most a prefix of the failed call's, with maybe a torn
// tail); OpenWriter reopens it and appends; no temp file is left.
func sweepLog(t *testing.T, setup func(t *testing.T, dir string) []session.Event, work func(fsys vfs.FS, path string, before []session.Event) logRun) int {
	return vfstest.Sweep(t, func(t *testing.T, p vfstest.Point) {
		dir := t.TempDir()
		path := filepath.Join(dir, LogFile)
		before := setup(t, dir)
		base, crash := vfstest.Base(t, p, dir)
		r := work(p.FS(base), path, before)
		vfstest.CheckErr(t, p, r.err)
		if crash == nil {
			checkLog(t, path, r.acked, nil, len(before) > 0)
			return
		}
		for _, keep := range []float64{0, 0.5} {
			clone := filepath.Join(t.TempDir(), "clone")
			if err := crash.Clone(clone, vfs.CloneOptions{KeepUnsynced: keep}); err != nil {
				t.Fatal(err)
			}
			t.Logf("crash clone keeping %v of unsynced appends", keep)
			checkLog(t, filepath.Join(clone, LogFile), r.acked, r.inflight, true)
		}
	})
}

// checkLog checks the log at path against what its writer was told; see
// sweepLog. inflight events may be there only after a crash (non-nil),
// and so may a torn tail (or one that was there before the work began).
func checkLog(t *testing.T, path string, acked, inflight []session.Event, tornOK bool) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
	evs, tail, err := ReadFile(path)
	if len(acked) == 0 {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Create failed, yet the log is there: %d events, %v", len(evs), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("the log does not read back: %v", err)
	}
	if tail.Torn && !tornOK {
		t.Errorf("the log has a torn tail (%d bytes) after a failure the writer saw", tail.FileSize-tail.GoodSize)
	}
	if len(evs) < len(acked) {
		t.Fatalf("the log lost acknowledged events: %d read, %d acknowledged", len(evs), len(acked))
	}
	extra := evs[len(acked):]
	if len(extra) > len(inflight) {
		t.Fatalf("the log has %d events that were never acknowledged (%d after a crash could be)", len(extra), len(inflight))
	}
	same := func(a, b session.Event) bool { return a.Seq == b.Seq && a.Kind == b.Kind && a.Text == b.Text }
	for i := range acked {
		if !same(evs[i], acked[i]) {
			t.Fatalf("event %d: read seq %d %s, acknowledged seq %d %s", i, evs[i].Seq, evs[i].Kind, acked[i].Seq, acked[i].Kind)
		}
	}
	for i := range extra {
		if !same(extra[i], inflight[i]) {
			t.Fatalf("unacknowledged event %d is not the failed call's: seq %d", i, extra[i].Seq)
		}
	}
	// It reopens and takes more.
	w, _, err := OpenWriter(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("the log does not reopen: %v", err)
	}
	if w.LastSeq() != evs[len(evs)-1].Seq {
		t.Errorf("reopened at seq %d, the log ends at %d", w.LastSeq(), evs[len(evs)-1].Seq)
	}
	if _, err := w.Append(session.Event{Kind: session.KindUserMessage, Text: "after"}); err != nil {
		t.Fatalf("append after reopen: %v", err)
	}
	w.Close()
	again, tail, err := ReadFile(path)
	if err != nil || tail.Torn || len(again) != len(evs)+1 {
		t.Fatalf("after reopen and append: %d events (want %d), torn %v, %v", len(again), len(evs)+1, tail.Torn, err)
	}
}

// TestFaultSweepCreate: Create, five events in three Appends, Close, with
// each operation failed, cut short or crashed at.
func TestFaultSweepCreate(t *testing.T) {
	n := sweepLog(t,
		func(*testing.T, string) []session.Event { return nil },
		func(fsys vfs.FS, path string, _ []session.Event) logRun {
			w, err := Create(path, session.Event{Name: "sweep"}, Options{FS: fsys})
			if err != nil {
				return logRun{inflight: []session.Event{{Seq: 1, Kind: session.KindSessionStarted}}, err: err}
			}
			r := logRun{acked: []session.Event{w.Header()}}
			r.appendAll(w)
			return r
		})
	t.Logf("recorder create+append+close: %d fault points", n)
}

// TestFaultSweepResume: OpenWriter of a log with a torn tail (which copies
// it to .broken, cuts the tail and syncs), then the same Appends and Close.
func TestFaultSweepResume(t *testing.T) {
	n := sweepLog(t,
		func(t *testing.T, dir string) []session.Event {
			path := filepath.Join(dir, LogFile)
			w, err := Create(path, session.Event{Name: "resume"}, Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := w.Append(session.Event{Kind: session.KindUserMessage, Text: fmt.Sprint("before ", i)}); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			// A torn tail: half of a frame.
			p, _ := encode(session.Event{Seq: 5, Kind: session.KindUserMessage, Text: "torn"})
			frame := appendFrame(nil, RecordEvent, p)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(frame[:len(frame)/2])
			f.Close()
			evs, tail, err := ReadFile(path)
			if err != nil || !tail.Torn || len(evs) != 4 {
				t.Fatalf("setup: %d events, torn %v, %v", len(evs), tail.Torn, err)
			}
			return evs
		},
		func(fsys vfs.FS, path string, before []session.Event) logRun {
			r := logRun{acked: before}
			w, _, err := OpenWriter(path, Options{FS: fsys})
			if err != nil {
				r.err = err
				return r
			}
			r.appendAll(w)
			return r
		})
	t.Logf("recorder resume with a torn tail: %d fault points", n)
}

// TestFaultSweepStoreCreate: a first session in a fresh home (the sessions
// folder and the session's are made and synced up to the home), its
// Appends and Close.
func TestFaultSweepStoreCreate(t *testing.T) {
	const id = "5e55000000000001"
	n := vfstest.Sweep(t, func(t *testing.T, p vfstest.Point) {
		dir := t.TempDir()
		st := Store{Root: filepath.Join(dir, "home")}
		base, crash := vfstest.Base(t, p, dir)
		var r logRun
		s, err := st.Create(session.Event{SessionID: id, Name: "fresh"}, Options{FS: p.FS(base)})
		if err != nil {
			r = logRun{inflight: []session.Event{{Seq: 1, Kind: session.KindSessionStarted}}, err: err}
		} else {
			r.acked = []session.Event{s.Header()}
			r.appendAll(s.Writer)
			s.Lease.Release()
		}
		vfstest.CheckErr(t, p, r.err)
		rel, _ := filepath.Rel(dir, st.LogPath(id))
		if crash == nil {
			checkLog(t, filepath.Join(dir, rel), r.acked, nil, false)
			return
		}
		for _, keep := range []float64{0, 0.5} {
			clone := filepath.Join(t.TempDir(), "clone")
			if err := crash.Clone(clone, vfs.CloneOptions{KeepUnsynced: keep}); err != nil {
				t.Fatal(err)
			}
			t.Logf("crash clone keeping %v of unsynced appends", keep)
			checkLog(t, filepath.Join(clone, rel), r.acked, r.inflight, true)
		}
	})
	t.Logf("recorder store create in a fresh home: %d fault points", n)
}
