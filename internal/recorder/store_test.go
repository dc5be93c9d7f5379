package recorder

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

func TestNewSessionID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{16}$`)
	a, b := NewSessionID(), NewSessionID()
	if !re.MatchString(a) || a == b {
		t.Errorf("NewSessionID = %q, %q; want two different 16-hex-digit ids", a, b)
	}
}

func TestStoreCreateOpen(t *testing.T) {
	st := Store{Root: filepath.Join(t.TempDir(), ".agentctl")}
	if ids, err := st.IDs(); err != nil || len(ids) != 0 {
		t.Fatalf("IDs of an empty home = %v, %v", ids, err)
	}
	s, err := st.Create(session.Event{Kind: session.KindSessionStarted, Name: "n"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir != st.SessionDir(s.ID) || s.Path() != st.LogPath(s.ID) || st.LogPath(s.ID) != filepath.Join(st.Root, "sessions", s.ID, "events.log") {
		t.Errorf("session %s at %s, log %s", s.ID, s.Dir, s.Path())
	}
	if _, _, err := st.Open(s.ID, Options{}); !errors.Is(err, ErrLeaseHeld) {
		t.Errorf("Open of a session being written = %v, want ErrLeaseHeld", err)
	}
	if _, err := s.Append(session.Event{Kind: session.KindUserMessage, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, rec, err := st.Open(s.ID, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Truncated || s2.LastSeq() != 2 || s2.Lease.Previous != nil {
		t.Errorf("Open = LastSeq %d, %+v, previous lease %+v", s2.LastSeq(), rec, s2.Lease.Previous)
	}
	s2.Close()

	evs, _, err := st.Load(s.ID)
	if err != nil || len(evs) != 2 || evs[0].SessionID != s.ID {
		t.Errorf("Load = %d events, %v; header %+v", len(evs), err, evs[0])
	}
	if _, _, err := st.Open("nope", Options{}); err == nil {
		t.Error("Open of a missing session succeeded")
	}
	if _, err := st.Create(session.Event{SessionID: "../x"}, Options{}); err == nil {
		t.Error("Create with id ../x succeeded")
	}
}

func TestResolve(t *testing.T) {
	st := Store{Root: t.TempDir()}
	for _, id := range []string{"ab12000000000000", "ab34000000000000", "cd00000000000000", "ab"} {
		os.MkdirAll(st.SessionDir(id), 0o755)
	}
	tests := []struct {
		ref     string
		want    string
		wantErr error
	}{
		{"cd00000000000000", "cd00000000000000", nil},
		{"c", "cd00000000000000", nil},
		{"ab1", "ab12000000000000", nil},
		{"ab", "ab", nil}, // exact match wins over prefix
		{"a", "", ErrAmbiguous},
		{"zz", "", ErrNoSession},
		{"", "", ErrNoSession},
	}
	for _, tt := range tests {
		got, err := st.Resolve(tt.ref)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("Resolve(%q) = %q, %v; want %q, %v", tt.ref, got, err, tt.want, tt.wantErr)
		}
	}
	_, err := st.Resolve("zz")
	if want := `recorder: no session matches "zz" in the home ` + st.Root + `; run 'agentctl sessions' to list them (--home or AGENTCTL_HOME chooses another home)`; err.Error() != want {
		t.Errorf("Resolve error = %q, want %q", err, want)
	}
	_, err = st.Resolve("a")
	if !strings.Contains(err.Error(), "ab12000000000000") || !strings.Contains(err.Error(), "ab34000000000000") {
		t.Errorf("ambiguous error %q does not list the matches", err)
	}
}

// TestResolveLatest: "latest" names the session that started last (the
// first line of 'agentctl sessions'), whatever its id sorts as; a session
// with no log is passed over, an id that is "latest" itself still wins,
// and a relative home is named absolutely when nothing matches.
func TestResolveLatest(t *testing.T) {
	ts := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	mk := func(st Store, id string, at time.Time) {
		t.Helper()
		s, err := st.Create(session.Event{Kind: session.KindSessionStarted, SessionID: id, TS: at}, Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st := Store{Root: t.TempDir()}
	mk(st, "ff00000000000000", ts(0))
	mk(st, "0a00000000000000", ts(20)) // newest, though its id sorts first
	mk(st, "5500000000000000", ts(10))
	mk(st, "0b00000000000000", ts(20))                    // same start: ties go to the smaller id, as in List
	os.MkdirAll(st.SessionDir("fe00000000000000"), 0o755) // never started: no log
	if got, err := st.Resolve("latest"); got != "0a00000000000000" || err != nil {
		t.Errorf("Resolve(latest) = %q, %v; want 0a00000000000000", got, err)
	}
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if list[0].SessionID != "0a00000000000000" {
		t.Errorf("List()[0] = %s; latest must be the first session listed", list[0].SessionID)
	}
	mk(st, "latest", ts(-10))
	if got, err := st.Resolve("latest"); got != "latest" || err != nil {
		t.Errorf("Resolve(latest) with a session named latest = %q, %v; want it", got, err)
	}

	empty := Store{Root: t.TempDir()}
	if _, err := empty.Resolve("latest"); !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), empty.Root) {
		t.Errorf("Resolve(latest) in an empty home = %v; want ErrNoSession naming %s", err, empty.Root)
	}
	t.Chdir(t.TempDir())
	rel := Store{Root: ".agentctl"}
	abs, _ := filepath.Abs(".agentctl")
	if _, err := rel.Resolve("zz"); !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), " "+abs+";") {
		t.Errorf("Resolve in a relative home = %v; want the home named as %s", err, abs)
	}
}

func TestSummarize(t *testing.T) {
	ts := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	evs := []session.Event{
		{Seq: 1, TS: ts(0), Kind: session.KindSessionStarted, Name: "n", Provider: "p", Model: "m"},
		{Seq: 2, TS: ts(1), Kind: session.KindModelCall, InputTokens: 10, OutputTokens: 2, CostUSD: 0.25},
		{Seq: 3, TS: ts(2), Kind: session.KindToolIntent, CallID: "a"},
		{Seq: 4, TS: ts(2), Kind: session.KindToolResult, CallID: "a", Status: session.ResultOK},
		// refused before dispatch: a result and no intent, still a call
		{Seq: 5, TS: ts(3), Kind: session.KindToolResult, CallID: "b", Status: session.ResultError},
		{Seq: 6, TS: ts(4), Kind: session.KindModelCall, InputTokens: 5, OutputTokens: 1, CostUSD: 0.5},
		{Seq: 7, TS: ts(5), Kind: session.KindError, Error: "boom"},
		{Seq: 8, TS: ts(6), Kind: session.KindModelChanged, Provider: "p2", Model: "m2"},
		{Seq: 9, TS: ts(7), Kind: session.KindSessionFinished, Status: string(session.StatusDone)},
	}
	tests := []struct {
		name string
		evs  []session.Event
		tail Tail
		want Summary
	}{
		{"finished", evs, Tail{}, Summary{SessionID: "id", Name: "n", Provider: "p2", Model: "m2", Status: session.StatusDone,
			Started: ts(0), Ended: ts(7), Events: 9, InputTokens: 15, OutputTokens: 3, CostUSD: 0.75, ToolCalls: 2, Errors: 2}},
		// Summarize takes the log as one no process writes: no end is a crash.
		{"crashed, torn", evs[:3], Tail{Torn: true}, Summary{SessionID: "id", Name: "n", Provider: "p", Model: "m", Status: session.StatusCrashed,
			Started: ts(0), Events: 3, InputTokens: 10, OutputTokens: 2, CostUSD: 0.25, ToolCalls: 1, Torn: true}},
		{"empty", nil, Tail{}, Summary{SessionID: "id", Status: session.StatusCrashed}},
	}
	for _, tt := range tests {
		if got := Summarize("id", tt.evs, tt.tail); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Summarize = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	b, _ := json.Marshal(Summary{})
	for _, key := range []string{"session_id", "name", "provider", "model", "status", "started", "ended", "events",
		"input_tokens", "output_tokens", "cost_usd", "tool_calls", "errors", "torn"} {
		if !strings.Contains(string(b), `"`+key+`":`) {
			t.Errorf("Summary JSON %s lacks %q", b, key)
		}
	}
	if strings.Contains(string(b), `"err"`) {
		t.Errorf("Summary JSON %s has err though it is empty", b)
	}
}

func TestList(t *testing.T) {
	st := Store{Root: t.TempDir()}
	var ids []string
	for i := range 3 {
		s, err := st.Create(session.Event{Kind: session.KindSessionStarted, TS: t0.Add(time.Duration(i) * time.Minute)}, Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		s.Append(session.Event{Kind: session.KindUserMessage})
		s.Close()
		ids = append(ids, s.ID)
	}
	// Corrupt the oldest session's first record.
	path := st.LogPath(ids[0])
	b, _ := os.ReadFile(path)
	b[FileHeaderSize+FrameHeaderSize+2] ^= 0xff
	os.WriteFile(path, b, 0o644)
	readOnly(t, path)

	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list {
		got = append(got, s.SessionID)
	}
	if want := []string{ids[2], ids[1], ids[0]}; !reflect.DeepEqual(got, want) {
		t.Errorf("List order = %v, want %v (newest first, unreadable last)", got, want)
	}
	if list[2].Err == "" || !strings.Contains(list[2].Err, "corrupt") {
		t.Errorf("corrupt session listed with Err %q", list[2].Err)
	}
	if list[0].Err != "" || list[0].Events != 2 {
		t.Errorf("good session listed as %+v", list[0])
	}
}

// witnessAt is a Witness that recorded every session durable through seq.
type witnessAt struct {
	seq   int64
	asked *int
}

func (w witnessAt) Beyond(id string, last int64) (Durable, bool) {
	*w.asked++
	if w.seq <= last {
		return Durable{}, false
	}
	return Durable{Seq: w.seq, By: "the test's witness"}, true
}

// TestReadersCheckEnd: Load, Stream, Scan and Fold of a log with no end
// that a witness recorded as longer report a *ShortLogError (corrupt)
// after the events the log holds, as Open does; a finished log is believed
// without asking, and a log that is as long as its witness says is a crash.
func TestReadersCheckEnd(t *testing.T) {
	write := func(t *testing.T, st Store, finish bool) string {
		s, err := st.Create(session.Event{Kind: session.KindSessionStarted, Name: "n"}, Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		s.Append(session.Event{Kind: session.KindUserMessage, Text: "hi"})
		if finish {
			s.Append(session.Event{Kind: session.KindSessionFinished})
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	for _, tc := range []struct {
		name      string
		witness   int64 // the seq the witness recorded; 0: no witness
		finish    bool
		short     bool
		wantAsked bool
	}{
		{name: "no witness", short: false},
		{name: "witness beyond an unfinished log", witness: 5, short: true, wantAsked: true},
		{name: "witness at the end: a crash", witness: 2, short: false, wantAsked: true},
		{name: "finished: not asked", witness: 9, finish: true, short: false, wantAsked: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			st := Store{Root: t.TempDir()}
			id := write(t, st, tc.finish)
			if tc.witness > 0 {
				st.Witnesses = []Witness{witnessAt{seq: tc.witness, asked: &asked}}
			}
			check := func(what string, n int, err error) {
				t.Helper()
				var short *ShortLogError
				if got := errors.As(err, &short); got != tc.short || (tc.short && !errors.Is(err, ErrCorrupt)) {
					t.Errorf("%s: err = %v, want short %v", what, err, tc.short)
				}
				if want := 2 + map[bool]int{true: 1}[tc.finish]; n != want {
					t.Errorf("%s: %d events, want %d (the events are kept)", what, n, want)
				}
			}
			evs, _, err := st.Load(id)
			check("Load", len(evs), err)
			n, _, err := st.Stream(id, func(session.Event) {})
			check("Stream", n, err)
			n, _, err = st.Scan(id, func(session.Event) {})
			check("Scan", n, err)
			fold, _, err := st.Fold(id)
			check("Fold", int(fold.Events), err)
			if fold.Corrupt != tc.short {
				t.Errorf("Fold: Corrupt = %v, want %v", fold.Corrupt, tc.short)
			}
			if (asked > 0) != tc.wantAsked {
				t.Errorf("witness asked %d times, want asked %v", asked, tc.wantAsked)
			}
		})
	}
}

// TestCheckEndGrowingLog: a reader that raced the log's writer (it read a
// prefix, then the writer appended and its checkpoint recorded the new
// end) is not told the log is short: the log grew since it was read.
func TestCheckEndGrowingLog(t *testing.T) {
	st := Store{Root: t.TempDir()}
	s, err := st.Create(session.Event{Kind: session.KindSessionStarted, Name: "n"}, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, tail, err := st.Load(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	s.Append(session.Event{Kind: session.KindUserMessage, Text: "hi"})
	asked := 0
	st.Witnesses = []Witness{witnessAt{seq: 2, asked: &asked}}
	if err := st.CheckEnd(s.ID, evs[len(evs)-1], tail); err != nil {
		t.Errorf("CheckEnd of a prefix of a growing log = %v, want nil", err)
	}
	// the same log cut back to what was read: now it is short
	if err := os.Truncate(st.LogPath(s.ID), tail.FileSize); err != nil {
		t.Fatal(err)
	}
	var short *ShortLogError
	if err := st.CheckEnd(s.ID, evs[len(evs)-1], tail); !errors.As(err, &short) {
		t.Errorf("CheckEnd of the log cut back = %v, want a *ShortLogError", err)
	}
}
