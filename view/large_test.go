package view_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/cli"
	"github.com/agentctl/agentctl/crashtest"
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
