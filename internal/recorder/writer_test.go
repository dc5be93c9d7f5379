package recorder

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

func newLog(t *testing.T, opts Options) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), LogFile)
	w, err := Create(path, session.Event{Kind: session.KindSessionStarted, Model: "m"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, path
}

func TestCreateAndAppend(t *testing.T) {
	w, path := newLog(t, Options{Clock: fixedClock()})
	if w.LastSeq() != 1 {
		t.Fatalf("LastSeq after Create = %d, want 1", w.LastSeq())
	}
	given := t0.Add(-time.Hour)
	in := []session.Event{
		{Kind: session.KindUserMessage, Text: "hi"},
		{Kind: session.KindAssistantMessage, Text: "hello", TS: given},
	}
	got, err := w.Append(in...)
	if err != nil {
		t.Fatal(err)
	}
	if in[0].Seq != 0 || !in[0].TS.IsZero() {
		t.Errorf("Append modified its argument: %+v", in[0])
	}
	if s := seqs(got); s[0] != 2 || s[1] != 3 {
		t.Errorf("Append seqs = %v, want [2 3]", s)
	}
	if want := t0.Add(2 * time.Second); !got[0].TS.Equal(want) {
		t.Errorf("Append TS = %v, want the clock's %v", got[0].TS, want)
	}
	if !got[1].TS.Equal(given) {
		t.Errorf("Append TS = %v, want the given %v kept", got[1].TS, given)
	}
	if got, err := w.Append(); err != nil || got != nil {
		t.Errorf("Append() = %v, %v; want nothing", got, err)
	}
	evs, tail, err := ReadFile(path)
	if err != nil || tail.Torn || len(evs) != 3 {
		t.Fatalf("ReadFile = %d events, %+v, %v", len(evs), tail, err)
	}
	if evs[0].Kind != session.KindSessionStarted || evs[0].Seq != 1 || !evs[0].TS.Equal(t0.Add(time.Second)) {
		t.Errorf("header = %+v", evs[0])
	}
	if evs[2].Text != "hello" || !evs[2].TS.Equal(given) {
		t.Errorf("event 3 = %+v", evs[2])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(session.Event{Kind: session.KindUserMessage}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	// No temp files are left behind.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the log", len(ents))
	}
}

func TestCreateExisting(t *testing.T) {
	_, path := newLog(t, Options{})
	before, _ := os.ReadFile(path)
	_, err := Create(path, session.Event{}, Options{})
	if !errors.Is(err, os.ErrExist) {
		t.Errorf("Create of an existing log = %v, want ErrExist", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("Create changed an existing log")
	}
	if _, err := Create(filepath.Join(t.TempDir(), "x"), session.Event{Kind: session.KindUserMessage}, Options{}); err == nil {
		t.Error("Create with a user_message header succeeded")
	}
}

func TestAppendTooLarge(t *testing.T) {
	w, _ := newLog(t, Options{NoSync: true})
	_, err := w.Append(session.Event{Kind: session.KindUserMessage, Text: strings.Repeat("x", MaxRecordSize)})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append of a huge event = %v, want ErrTooLarge", err)
	}
	got, err := w.Append(session.Event{Kind: session.KindUserMessage})
	if err != nil || got[0].Seq != 2 {
		t.Errorf("Append after a rejected event = %v, %v; want seq 2", seqs(got), err)
	}
}

func TestWriterStaysFailed(t *testing.T) {
	w, path := newLog(t, Options{})
	w.f.Close() // the next write fails
	_, err1 := w.Append(session.Event{Kind: session.KindUserMessage})
	if err1 == nil {
		t.Fatal("Append on a broken file succeeded")
	}
	_, err2 := w.Append(session.Event{Kind: session.KindUserMessage})
	if err2 == nil || err2.Error() != err1.Error() {
		t.Errorf("second Append = %v, want the first failure %v", err2, err1)
	}
	if evs, _, err := ReadFile(path); err != nil || len(evs) != 1 {
		t.Errorf("ReadFile = %d events, %v; want the header only", len(evs), err)
	}
}

func TestOpenWriterTornTail(t *testing.T) {
	b, ends := encodeLog(t, sampleEvents(3))
	torn := append(bytes.Clone(b[:ends[3]-4]), 0, 0) // frame 3 cut short
	path := writeFile(t, torn)

	w, rec, err := OpenWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := Recovery{Truncated: true, TornBytes: int64(len(torn)) - ends[2], GoodSize: ends[2], BrokenCopy: path + ".broken"}
	if rec != want {
		t.Errorf("Recovery = %+v, want %+v", rec, want)
	}
	if broken, _ := os.ReadFile(path + ".broken"); !bytes.Equal(broken, torn) {
		t.Error(".broken copy differs from the original file")
	}
	if w.LastSeq() != 2 {
		t.Errorf("LastSeq = %d, want 2", w.LastSeq())
	}
	got, err := w.Append(session.Event{Kind: session.KindUserMessage, Text: "again"})
	if err != nil || got[0].Seq != 3 {
		t.Fatalf("Append = %v, %v; want seq 3", seqs(got), err)
	}
	evs, tail, err := ReadFile(path)
	if err != nil || tail.Torn || len(evs) != 3 || evs[2].Text != "again" {
		t.Errorf("ReadFile after recovery = %v, %+v, %v", seqs(evs), tail, err)
	}
	w.Close()

	// A second recovery keeps the first copy.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{1, 2, 3})
	f.Close()
	w, rec, err = OpenWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if rec.BrokenCopy != path+".broken.2" || rec.TornBytes != 3 {
		t.Errorf("second Recovery = %+v, want a .broken.2 copy of 3 torn bytes", rec)
	}
}

func TestOpenWriterTornHeader(t *testing.T) {
	path := writeFile(t, []byte("AGCT"))
	w, rec, err := OpenWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !rec.Truncated || rec.GoodSize != int64(FileHeaderSize) || rec.TornBytes != 4 {
		t.Errorf("Recovery = %+v", rec)
	}
	got, err := w.Append(session.Event{Kind: session.KindSessionStarted})
	if err != nil || got[0].Seq != 1 {
		t.Fatalf("Append = %v, %v; want seq 1", seqs(got), err)
	}
	if evs, tail, err := ReadFile(path); err != nil || tail.Torn || len(evs) != 1 {
		t.Errorf("ReadFile = %d events, %+v, %v", len(evs), tail, err)
	}
}

func TestOpenWriterCorrupt(t *testing.T) {
	b, ends := encodeLog(t, sampleEvents(3))
	b[ends[1]+FrameHeaderSize+1] ^= 0xff
	path := writeFile(t, b)
	readOnly(t, path)
	_, _, err := OpenWriter(path, Options{})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != ends[1] {
		t.Fatalf("OpenWriter of a corrupt log = %v, want CorruptError at %d", err, ends[1])
	}
	if _, err := os.Stat(path + ".broken"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenWriter of a corrupt log made a .broken copy (%v)", err)
	}
}

func TestOpenWriterClean(t *testing.T) {
	w, path := newLog(t, Options{})
	w.Append(session.Event{Kind: session.KindUserMessage})
	w.Close()
	w, rec, err := OpenWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if rec.Truncated || rec.BrokenCopy != "" || w.LastSeq() != 2 {
		t.Errorf("OpenWriter = LastSeq %d, %+v; want 2 and no recovery", w.LastSeq(), rec)
	}
}

// TestConcurrentAppend runs many appenders; go test -race checks the
// locking, and the log must hold every event once with dense seqs.
func TestConcurrentAppend(t *testing.T) {
	w, path := newLog(t, Options{})
	const goroutines, perG = 32, 20
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				evs := make([]session.Event, 1+(g+i)%3)
				for j := range evs {
					evs[j] = session.Event{Kind: session.KindUserMessage, Text: "x"}
				}
				got, err := w.Append(evs...)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for j, ev := range got {
					if seen[ev.Seq] || (j > 0 && ev.Seq != got[j-1].Seq+1) {
						t.Errorf("seq %d reused or not contiguous in %v", ev.Seq, seqs(got))
					}
					seen[ev.Seq] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, tail, err := ReadFile(path)
	if err != nil || tail.Torn {
		t.Fatal(err, tail)
	}
	if int64(len(evs)) != w.LastSeq() || len(evs) != len(seen)+1 {
		t.Errorf("log has %d events, LastSeq %d, %d acknowledged", len(evs), w.LastSeq(), len(seen))
	}
}
