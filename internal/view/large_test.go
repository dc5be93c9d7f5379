package view_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/crashtest"
	"github.com/agentctl/agentctl/internal/heappeak"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/view"
)

// idLarge is the session of largeSession.
const idLarge = "7e57000000010000"

// largeSession records, with the real command tree, a scripted run of
// turns turns of one read_file each (4 events a turn): every 50th reads a
// file that is not there, and a small compaction window compacts it now
// and then. 2,500 turns make 10,000-odd events. fsync is off
// (crashtest.NoSyncEnv): it is most of a run's time and not what is
// measured.
func largeSession(tb testing.TB, turns int) *home {
	tb.Setenv(crashtest.NoSyncEnv, "1")
	h := newHome(tb)
	dir := tb.TempDir()
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	os.WriteFile(filepath.Join(dir, "ws", "a.txt"), []byte("alpha\nbeta\n"), 0o644)
	var m strings.Builder
	m.WriteString("turns:\n")
	for i := range turns {
		path := "a.txt"
		if i%50 == 7 {
			path = fmt.Sprintf("missing-%d.txt", i)
		}
		fmt.Fprintf(&m, "  - text: \"Step %d: reading %s.\"\n    tool_calls:\n      - {name: read_file, args: {path: %s}}\n", i, path, path)
	}
	m.WriteString("  - text: \"Done.\"\n")
	os.WriteFile(filepath.Join(dir, "model.yaml"), []byte(m.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(fmt.Sprintf(`name: large
model: {provider: scripted, id: claude-sonnet-4-5, script: model.yaml}
prompt: "Read a.txt again and again."
workspace: {from: ws}
mode: write
tools: [read_file]
max_turns: %d
compaction: {window: 40000, threshold: 0.75}
`, turns+10)), 0o644)
	h.run(cli.ExitOK, "run", filepath.Join(dir, "spec.yaml"), "-q", "--session-id", idLarge)
	return h
}

// TestBrowserLarge: a 10,000-event session stays usable. The page is a
// few megabytes, opens with one chunk of the timeline drawn, draws every
// row as it is scrolled, jumps to an event far down (a diagnose citation,
// the seq box), and filters to the problems. How fast it opens is
// measured by BenchmarkView10k, not asserted here.
func TestBrowserLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("records a 10,000-event session and drives chromium")
	}
	b := newBrowser(t)
	h := largeSession(t, 2500)
	page := h.view(t.TempDir(), idLarge)
	fi, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4<<20 {
		t.Errorf("the page of 10,000 events is %d bytes, want a few MB at most", fi.Size())
	}
	start := time.Now()
	tb := b.open(t, page)
	var ready float64
	tb.eval(`Number(document.body.dataset.ready)`, &ready)
	t.Logf("%d bytes; drawn %.0f ms after navigation started in the page, %v from the test's navigate", fi.Size(), ready, time.Since(start))
	want := h.summary(idLarge)
	checkHeader(t, tb, want)
	var first int
	tb.eval(`document.querySelectorAll('#rows .ev').length`, &first)
	if first != 200 {
		t.Errorf("opened with %d rows drawn, want the first chunk of 200", first)
	}

	// A citation far down the log: the rows up to it are drawn on demand.
	tb.click(`.finding.f-loop button.more`)
	checkFindingJump(t, tb)
	var far struct {
		Seq    string
		InView bool
	}
	tb.eval(`document.getElementById('goto').value = '9000'`, new(string))
	tb.click(`.bar button`)
	tb.eval(`(() => { const e = document.getElementById('e9000'); if (!e) return {}; const r = e.getBoundingClientRect();
		return {Seq: e.dataset.seq, InView: r.top >= 0 && r.top < innerHeight && e.classList.contains('target')}; })()`, &far)
	if far.Seq != "9000" || !far.InView {
		t.Errorf("go to seq 9000: %+v", far)
	}

	if n := tb.drawAll(); n != int(want["events"].(float64)) {
		t.Errorf("scrolled to the end: %d rows drawn, want %v", n, want["events"])
	}
	var probs struct{ Rows, Want int }
	tb.click(`#problems`)
	tb.eval(`(() => { const d = JSON.parse(document.getElementById('data').textContent).session; const m = new Set(d.marks.map(x => x.seq));
		return {Rows: document.querySelectorAll('#rows .ev').length, Want: d.events.filter(e => e.lvl || m.has(e.seq)).length}; })()`, &probs)
	if probs.Rows != probs.Want || probs.Want < 50 {
		t.Errorf("problems only: %d rows, want %d (the 50 failed reads among them)", probs.Rows, probs.Want)
	}
	tb.screenshot("large")
	tb.clean()

	// A link to an event far down (#eSEQ, as a finding's link or a
	// colleague's message has it) opens the page at that event.
	tb = b.open(t, page+"#e7777")
	var deep struct {
		Seq    string
		InView bool
	}
	tb.eval(`(() => { const e = document.querySelector('.ev.target'); if (!e) return {}; const r = e.getBoundingClientRect();
		return {Seq: e.dataset.seq, InView: r.top >= 0 && r.top < innerHeight}; })()`, &deep)
	if deep.Seq != "7777" || !deep.InView {
		t.Errorf("opening #e7777: %+v", deep)
	}
	tb.clean()
}

// TestViewCapsLongSession: the page of a session of 60,000 events
// (recorded through the recorder) shows the first and last 10,000 with a
// note of the 40,000 left out, stays a few megabytes, and its figures
// still count every event. It was a page of every event (225 MB for a
// million).
func TestViewCapsLongSession(t *testing.T) {
	const n = 60_000
	const id = "7e57000000060000"
	h := newHome(t)
	recordFlat(t, h, id, n)
	page := h.view(t.TempDir(), id)
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page of %d events: %d bytes", n, len(b))
	if len(b) > 6<<20 {
		t.Errorf("the page of %d events is %d bytes, want under 6 MiB (it was 9 MB with every event)", n, len(b))
	}
	data := pageData(t, b)
	hd := data.Session.Header.Omitted
	if hd == nil || hd.Count != n-view.DefaultMaxEvents || hd.FromSeq != view.DefaultMaxEvents/2+1 || hd.ToSeq != n-view.DefaultMaxEvents/2 {
		t.Fatalf("omitted = %+v, want %d events, seqs %d..%d", hd, n-view.DefaultMaxEvents, view.DefaultMaxEvents/2+1, n-view.DefaultMaxEvents/2)
	}
	if got := len(data.Session.Events); got != view.DefaultMaxEvents {
		t.Errorf("%d events in the page, want %d", got, view.DefaultMaxEvents)
	}
	if data.Session.Summary.Events != n || data.Session.Summary.Events != int64(h.summary(id)["events"].(float64)) {
		t.Errorf("the header counts %d events, want %d as sessions says", data.Session.Summary.Events, n)
	}
	// Every call an event names is in the page, and only those.
	for _, e := range data.Session.Events {
		if e.Call > len(data.Session.Calls) || (e.Call > 0 && data.Session.Calls[e.Call-1].ID != e.CallID) {
			t.Fatalf("event %d names call %d (%s), not in the page's %d calls", e.Seq, e.Call, e.CallID, len(data.Session.Calls))
		}
	}
	if len(data.Session.Calls) > view.DefaultMaxEvents/4+2 {
		t.Errorf("%d calls in the page, want those of the events shown", len(data.Session.Calls))
	}
	if !bytes.Contains(b, []byte("are not in this page")) {
		t.Error("the page's script has no note of the events left out")
	}
}

// recordFlat records, through the recorder, a finished session of n
// events: turns of a model call, an assistant message asking for one
// read, its intent and its result.
func recordFlat(tb testing.TB, h *home, id string, n int) {
	tb.Helper()
	st := recorder.Store{Root: h.dir}
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, err := st.Create(session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "long", Provider: "p", Model: "m"}, recorder.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	var evs []session.Event
	for i := 1; i < n-1; i++ {
		at := ts.Add(time.Duration(i) * time.Millisecond)
		call := fmt.Sprintf("c%d", i/4)
		switch i % 4 {
		case 0:
			evs = append(evs, session.Event{TS: at, Kind: session.KindModelCall, Provider: "p", Model: "m", InputTokens: 100, OutputTokens: 7})
		case 1:
			evs = append(evs, session.Event{TS: at, Kind: session.KindAssistantMessage, Text: "reading it again", ToolCalls: []session.ToolCall{{ID: call, Name: "read_file", Args: []byte(`{"path":"a.txt"}`)}}})
		case 2:
			evs = append(evs, session.Event{TS: at, Kind: session.KindToolIntent, CallID: call, Tool: "read_file", Args: []byte(`{"path":"a.txt"}`)})
		case 3:
			evs = append(evs, session.Event{TS: at, Kind: session.KindToolResult, CallID: call, Tool: "read_file", Status: session.ResultOK, Output: "alpha\nbeta\n"})
		}
	}
	evs = append(evs, session.Event{TS: ts.Add(time.Hour), Kind: session.KindSessionFinished, Status: string(session.StatusDone)})
	if _, err := s.Append(evs...); err != nil {
		tb.Fatal(err)
	}
	s.Close()
}

// pageData decodes the data a page embeds.
func pageData(t *testing.T, page []byte) (data struct{ Session view.Session }) {
	t.Helper()
	_, rest, ok := bytes.Cut(page, []byte(`<script type="application/json" id="data">`))
	raw, _, ok2 := bytes.Cut(rest, []byte("</script>"))
	if !ok || !ok2 {
		t.Fatal("the page embeds no data")
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatalf("page data: %v", err)
	}
	return data
}

// TestViewHoldsNotTheSession: `agentctl view` of a 200,000-event session
// holds the events its page shows (20,000) and the fold, not the session:
// the log is streamed into the fold and diagnose's checks, and only the
// first and last events are kept. Holding every event peaked at 438 MiB of
// heap here, streaming at 177-183 MiB, most of it the query package
// writing the unsealed log as Parquet for diagnose's SQL with a pool of
// zstd encoders of 16 MB each; with the history's one encoder of a
// window-sized history, 121 MiB. With diagnose from the log and no DuckDB
// (whose memory, 1.5 GB at 1M events, this Go heap did not count), the
// lean fold and the events shown kept encoded, 44 MiB: bound at 64.
func TestViewHoldsNotTheSession(t *testing.T) {
	if testing.Short() {
		t.Skip("records a 200,000-event session")
	}
	const id = "7e57000000200001"
	h := newHome(t)
	recordFlat(t, h, id, 200_000)
	page := filepath.Join(t.TempDir(), "long.html")
	_, peak := heappeak.During(func() { h.run(cli.ExitOK, "view", id, "-o", page) })
	t.Logf("peak heap %.0f MiB", float64(peak)/(1<<20))
	if peak > 64<<20 {
		t.Fatalf("view of 200,000 events peaked at %.0f MiB of heap, want under 64 MiB: it holds the session, a full fold, or the query package's Parquet encoders", float64(peak)/(1<<20))
	}
}

// TestViewOpensNoDuckDB: `agentctl view` of a session of the home gets its
// diagnosis from the log (diagnose.Stream) and its forks from the store's
// headers, never from DuckDB, whose plan for one session of a million
// events held ~1.6 GB; the page still shows both.
func TestViewOpensNoDuckDB(t *testing.T) {
	h := newHome(t)
	h.run(cli.ExitOK, "run", h.agent("fix-typo"), "-q", "--session-id", "f00d000000000001")
	h.run(cli.ExitOK, "replay", "fork", "f00d000000000001", "--from", "6", "-q", "--session-id", "f00d000000000002")
	opened := 0
	query.OnOpen = func() { opened++ }
	defer func() { query.OnOpen = nil }()
	page := filepath.Join(t.TempDir(), "p.html")
	h.run(cli.ExitOK, "view", "f00d000000000001", "-o", page)
	if opened != 0 {
		t.Fatalf("view opened the query package's DuckDB %d times", opened)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"budget"`, `"kind":"exit"`, `f00d000000000002`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the page lacks %s (the diagnosis, the fork)", want)
		}
	}
	h.run(cli.ExitOK, "query", "SELECT count(*) FROM events")
	if opened == 0 {
		t.Fatal("query.OnOpen is not called when a DB opens: this test cannot see DuckDB")
	}
}
