package ui_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/leanmem"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
	"github.com/agentctl/agentctl/internal/ui"
)

// TestSessionPageInChromium opens a recorded run's page: its figures,
// every event in the timeline, the diagnosis, a model call row and the
// commands, with nothing reported by the page.
func TestSessionPageInChromium(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	id := runDefault(t, home)
	sum := recorder.Store{Root: home}.Summary(id)
	s := serve(t, home)
	tab := s.open(t, b, "/sessions/"+id[:6], nil)
	tab.WaitFor("#figures[data-loaded]")
	if n := tab.Count("#timeline tbody tr"); int64(n) != sum.Events {
		t.Errorf("timeline has %d rows, want the %d events", n, sum.Events)
	}
	if got := tab.Text("#status"); got != string(sum.Status) {
		t.Errorf("status %q, want %q", got, sum.Status)
	}
	tab.WaitFor("#diagnosis-box[data-loaded]")
	if tab.Count("#diagnosis li[data-kind]") == 0 {
		t.Error("no diagnosis finding")
	}
	// A cited seq on this page links to its row.
	var dangling []string
	tab.Eval(`Array.from(document.querySelectorAll('#diagnosis a')).map(a => a.getAttribute('href')).filter(h => !h.startsWith('#e') || !document.getElementById(h.slice(1)))`, &dangling)
	if len(dangling) > 0 || tab.Count(`#diagnosis a[href^="#e"]`) == 0 {
		t.Errorf("diagnosis links %v do not go to rows of the page", dangling)
	}
	if tab.Count("#model-calls tbody tr[data-seq]") == 0 {
		t.Error("no model call row")
	}
	if got := tab.Text("#cmd-verify"); got != "agentctl replay verify "+id {
		t.Errorf("verify command %q", got)
	}
	tab.Screenshot(shots, "session")
	tab.Clean(s.ownOnly)
}

// TestSessionPageXSS records the red-team corpus in a session's user
// text, tool arguments and output, model, name and tags and opens its page:
// nothing runs, no element of it is made, and the text is shown as text.
func TestSessionPageXSS(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	id := crafted(t, home, "5e55000000000bad", 3, true)
	s := serve(t, home)
	tab := s.open(t, b, "/sessions/"+id, nil)
	tab.WaitFor("#diagnosis-box[data-loaded]")
	tab.WaitFor("#figures[data-loaded]")
	assertInert(t, tab)
	if !strings.Contains(tab.Text("#timeline"), `<img src=x onerror="window.__pwned=2">`) {
		t.Error("the recorded markup is not shown as text in the timeline")
	}
	tab.Clean(s.ownOnly)
}

// assertInert fails if the corpus ran or made an element.
func assertInert(t *testing.T, tab *browser.Tab) {
	t.Helper()
	var got struct {
		Pwned string
		Title string
		Bad   int
	}
	tab.Eval(`({Pwned: String(window.__pwned), Title: document.title,
		Bad: document.querySelectorAll('img[src="x"], svg[onload], main script, [onerror], [onload]').length})`, &got)
	if got.Pwned != "undefined" || got.Title == "pwned" || got.Bad != 0 {
		t.Errorf("the corpus ran or made elements: __pwned=%s title=%q elements=%d", got.Pwned, got.Title, got.Bad)
	}
}

// TestSessionPage100k measures the page of a 100,000-event session: time
// to first paint in chromium and the peak RSS of the server, a process of
// its own (this test binary re-run as TestServeHome). The goals are 1 s
// and 150 MB: it fails when the server's answer passes either, or the
// paint in chromium three times the goal, and logs the figures.
func TestSessionPage100k(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("writes a 100,000-event session and times it (not with -short or -race)")
	}
	b := browser.New(t)
	home := newHome(t)
	id := crafted(t, home, "5e55000000100000", 25000, false)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestServeHome$")
	cmd.Env = append(os.Environ(), serveHomeEnv+"="+home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the server printed no URL: %v", err)
	}
	u, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	base := u.Scheme + "://" + u.Host
	tok := u.Query().Get("token")
	// The page alone first, from a fresh server: its time and the peak
	// RSS it takes (the query database not yet open).
	req, _ := http.NewRequest("GET", base+"/sessions/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	serverTime := time.Since(t0)
	pagePeak := procPeakRSS(t, cmd.Process.Pid)
	// Then in chromium, the page with its figures and diagnosis: the
	// session page's whole cost. (The runs page comes after: its query
	// database over this unsealed 100,000-event log is DuckDB's, not the
	// session page's, and is logged apart.)
	tab := b.Open(t, base+"/sessions/"+id+"?token="+tok, "body[data-painted]")
	// The browser's own clock, from the navigation's start (the token's
	// redirect included) to its first contentful paint; then to the
	// figures of the whole log.
	var fcp float64
	// The paint entry can come after body[data-painted] on a loaded
	// machine: wait for it (buffered, so one already there counts).
	tab.Eval(`new Promise(r => {
		new PerformanceObserver(l => { const e = l.getEntriesByName('first-contentful-paint')[0]; if (e) r(e.startTime); }).observe({type: 'paint', buffered: true});
		setTimeout(() => r(-1), 15000);
	})`, &fcp)
	if fcp < 0 {
		t.Fatal("chromium reported no first contentful paint")
	}
	paint := time.Duration(fcp * float64(time.Millisecond))
	tab.WaitFor("#figures[data-loaded]")
	var loaded float64
	tab.Eval(`performance.now()`, &loaded)
	figures := time.Duration(loaded * float64(time.Millisecond))
	tab.WaitFor("#diagnosis-box[data-loaded]")
	peak := procPeakRSS(t, cmd.Process.Pid)
	b.Open(t, base+"/runs", "body[data-painted]")
	runsPeak := procPeakRSS(t, cmd.Process.Pid)
	if n := tab.Count("#timeline tbody tr"); n != 500 {
		t.Errorf("first page has %d rows, want 500", n)
	}
	if got := tab.Text("#event-count"); got != "100003" {
		t.Errorf("event count %q, want 100003", got)
	}
	t.Logf("session page of 100,003 events: server time %v, peak RSS %d MB; in chromium: first paint %v (goal 1 s), figures of the whole log in %v; server peak RSS %d MB with the figures and diagnosis fetched too (goal 150 MB), %d MB once the runs page opened the query database",
		serverTime.Round(time.Millisecond), pagePeak>>20, paint.Round(time.Millisecond), figures.Round(time.Millisecond), peak>>20, runsPeak>>20)
	// The server's part is the goal's; chromium's own paint on a loaded
	// machine is logged, and fails only far off it.
	if serverTime > time.Second {
		t.Errorf("the server took %v for the page, want at most 1 s", serverTime)
	}
	if paint > 3*time.Second {
		t.Errorf("first paint took %v, want about 1 s", paint)
	}
	if pagePeak > 150<<20 || peak > 150<<20 {
		t.Errorf("the page took the server to a peak RSS of %d MB, %d MB with its figures and diagnosis, want at most 150 MB", pagePeak>>20, peak>>20)
	}
}

// serveHomeEnv makes TestServeHome serve the home it names.
const serveHomeEnv = "AGENTCTL_UI_TEST_SERVE"

// TestServeHome is the server of TestSessionPage100k when re-run with
// serveHomeEnv set: it prints its URL and serves until killed.
func TestServeHome(t *testing.T) {
	home := os.Getenv(serveHomeEnv)
	if home == "" {
		t.Skip("the server of TestSessionPage100k, run in a process of its own")
	}
	srv, err := ui.New(ui.Options{Store: recorder.Store{Root: home}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(srv.URL(ln))
	defer leanmem.Set()() // as agentctl ui serves
	srv.Serve(context.Background(), ln)
}

// procPeakRSS is process pid's RSS high-water mark (Linux).
func procPeakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no peak RSS: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/PID/status")
	return 0
}

// TestSessionPageLive opens the page of a run while its scripted model
// waits, then sees the events it records next appear in the page, each
// within a second of being in the log.
func TestSessionPageLive(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "slow.yaml"), []byte(`turns:
  - text: "Listing first."
    tool_calls:
      - {name: list_files, args: {path: "."}}
  - text: "Now the second turn, after a pause."
    delay: 2500ms
`), 0o644)
	os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(`name: slow
model: {provider: scripted, id: scripted-1, script: slow.yaml}
prompt: "List, pause, answer."
tools: [list_files]
`), 0o644)
	const id = "5e55000000001111"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan testcli.Result, 1)
	go func() {
		ran <- testcli.RunContext(ctx, t, home, "run", filepath.Join(dir, "spec.yaml"), "-q", "--session-id", id)
	}()
	st := recorder.Store{Root: home}
	// Wait until the first turn's result is durable: the model now waits.
	var shown int64
	deadline := time.Now().Add(20 * time.Second)
	for shown == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run recorded no tool result")
		}
		time.Sleep(20 * time.Millisecond)
		st.Stream(id, func(e session.Event) {
			if e.Kind == session.KindToolResult {
				shown = e.Seq
			}
		})
	}
	s := serve(t, home)
	tab := s.open(t, b, "/sessions/"+id, nil)
	if tab.Count("#timeline[data-events]") != 1 {
		t.Fatal("the page of a running session does not follow it")
	}
	last := int64(tab.Count("#timeline tbody tr"))
	// Each event the run appends from now on: when it is in the log, and
	// when its row is in the page.
	inLog := map[int64]time.Time{}
	inPage := map[int64]time.Time{}
	deadline = time.Now().Add(20 * time.Second)
	finished := false
	for !finished || len(inPage) < len(inLog) {
		if time.Now().After(deadline) {
			t.Fatalf("events in the log %v, in the page %v", keys(inLog), keys(inPage))
		}
		now := time.Now()
		st.Stream(id, func(e session.Event) {
			if _, ok := inLog[e.Seq]; !ok && e.Seq > last {
				inLog[e.Seq] = now
			}
			if e.Kind == session.KindSessionFinished {
				finished = true
			}
		})
		var seqs []int64
		tab.Eval(`Array.from(document.querySelectorAll('#timeline tbody tr')).map(r => +r.dataset.seq)`, &seqs)
		now = time.Now()
		for _, q := range seqs {
			if _, ok := inPage[q]; !ok && q > last {
				inPage[q] = now
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(inLog) < 3 {
		t.Fatalf("the run appended %d events after the page opened, want the second turn's", len(inLog))
	}
	for q, at := range inLog {
		lag := inPage[q].Sub(at)
		if lag > time.Second {
			t.Errorf("event %d appeared in the page %v after it was in the log, want under 1 s", q, lag)
		}
	}
	t.Logf("live: %d new events, each in the page within a second", len(inLog))
	// The figures follow: the second model call's tokens are counted,
	// and the status is the end's.
	sum := st.Summary(id)
	tab.WaitFor("#live-note")
	deadline = time.Now().Add(5 * time.Second)
	for tab.Text("#status") != string(sum.Status) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := tab.Text("#status"); got != string(sum.Status) {
		t.Errorf("status shown %q after the end, want %q", got, sum.Status)
	}
	if got := tab.Text("#fig-out"); got != fmt.Sprint(sum.OutputTokens) {
		t.Errorf("output tokens shown %q, want the fold's %d", got, sum.OutputTokens)
	}
	if r := <-ran; r.Code != 0 {
		t.Fatalf("run: exit %d: %s", r.Code, r.Stderr)
	}
	tab.Screenshot(shots, "session-live")
	tab.Clean(s.ownOnly)
}

func keys(m map[int64]time.Time) string {
	var out []string
	for k := range m {
		out = append(out, fmt.Sprint(k))
	}
	return strings.Join(out, ",")
}
