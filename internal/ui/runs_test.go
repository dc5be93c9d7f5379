package ui_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/redteam"
)

// runsSession is a session written event by event (recorder.Store.WriteSession),
// with the fields the runs page shows and filters on.
type runsSession struct {
	id, name, model, status, reason, text, user string
	origin                                      string // "", "proxy", "collect", "import"
	started                                     time.Time
	cost                                        float64
	tags                                        map[string]string
}

func (c runsSession) write(t testing.TB, home string) {
	t.Helper()
	attrs := map[string]any{}
	switch c.origin {
	case "proxy":
		attrs["recorded_by"] = "proxy"
	case "collect":
		attrs["otlp_source"] = "collect"
	case "import":
		attrs["imported_from"] = "codex"
	}
	if len(c.tags) > 0 {
		attrs["tags"] = c.tags
	}
	if c.user != "" {
		attrs["user_id"] = c.user
	}
	raw, _ := json.Marshal(attrs)
	ts := c.started
	evs := []session.Event{
		{TS: ts, Kind: session.KindSessionStarted, SessionID: c.id, Name: c.name, Provider: "scripted", Model: c.model, Attrs: raw},
		{TS: ts.Add(time.Millisecond), Kind: session.KindUserMessage, Text: c.text},
		{TS: ts.Add(2 * time.Millisecond), Kind: session.KindAssistantMessage, Text: "answer to " + c.text},
		{TS: ts.Add(3 * time.Millisecond), Kind: session.KindModelCall, Model: c.model, InputTokens: 100, OutputTokens: 20, CostUSD: c.cost},
		{TS: ts.Add(2 * time.Second), Kind: session.KindSessionFinished, Status: c.status, Reason: c.reason},
	}
	if _, err := (recorder.Store{Root: home}).WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
}

// ownOrPicker is ownOnly, and the icon chromium draws in a date field (a
// data: URL of its own, no request to anywhere).
func (s *served) ownOrPicker(u string) bool {
	return s.ownOnly(u) || strings.HasPrefix(u, "data:image/svg+xml;")
}

var day0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.Local)

// filterHome records sessions that differ in each filtered field.
func filterHome(t *testing.T) string {
	home := newHome(t)
	for _, c := range []runsSession{
		{id: "f000000000000001", name: "fix-typo", model: "gpt-4o-mini", status: "done", text: "fix the typo in README", started: day0, cost: 0.002, tags: map[string]string{"env": "ci"}, user: "ana"},
		{id: "f000000000000002", name: "fix-typo", model: "claude-sonnet-4-5", status: "failed", reason: "max_turns", text: "fix the typo in main.go", started: day0.AddDate(0, 0, 1), cost: 0.30, tags: map[string]string{"env": "dev"}},
		{id: "f000000000000003", name: "refactor", model: "gpt-4o-mini", status: "done", text: "rename the package", started: day0.AddDate(0, 0, 2), cost: 0.05, origin: "proxy", user: "bo"},
		{id: "f000000000000004", name: "chat", model: "llama-3", status: "done", text: "hello there", started: day0.AddDate(0, 0, 3), cost: 0, origin: "collect", tags: map[string]string{"env": "ci", "team": "web"}},
		{id: "f000000000000005", name: "imported", model: "gpt-5", status: "done", text: "an imported transcript", started: day0.AddDate(0, 0, 4), cost: 1.5, origin: "import"},
	} {
		c.write(t, home)
	}
	return home
}

// rows is the session ids a runs page lists, in order.
func rows(tab *browser.Tab) []string {
	var ids []string
	tab.Eval(`Array.from(document.querySelectorAll('#runs tr[data-session]')).map(r => r.dataset.session)`, &ids)
	return ids
}

// TestRunsFiltersInChromium fills the runs page's form as a user does:
// each filter narrows the list to the sessions it names, the URL keeps
// the filters (pasting it gives the same list), and a row's link opens
// the session.
func TestRunsFiltersInChromium(t *testing.T) {
	b := browser.New(t)
	home := filterHome(t)
	s := serve(t, home)
	tab := s.open(t, b, "/runs", nil)
	all := []string{"f000000000000005", "f000000000000004", "f000000000000003", "f000000000000002", "f000000000000001"}
	if got := rows(tab); !slices.Equal(got, all) {
		t.Fatalf("unfiltered runs page lists %v, want %v (newest first)", got, all)
	}
	// The figures of a row: turns, tools, tokens, cost, duration.
	var cells []string
	tab.Eval(`Array.from(document.querySelectorAll('tr[data-session="f000000000000002"] td:not(:has(input))')).map(td => td.textContent)`, &cells)
	if want := []string{"fix-typo", "failed max_turns", "run", "claude-sonnet-4-5", "1", "0", "120", "$0.30", "2.0s"}; len(cells) < 10 || !slices.Equal(cells[1:10], want) {
		t.Errorf("row cells %q, want %q after the id", cells, want)
	}
	tab.Screenshot(shots, "runs") // the README's docs/ui-runs.png
	tab.Clean(s.ownOrPicker)

	for _, tc := range []struct {
		name   string
		fields map[string]string // form field name -> value
		want   []string
	}{
		{"status", map[string]string{"status": "failed"}, []string{"f000000000000002"}},
		{"origin", map[string]string{"origin": "proxy"}, []string{"f000000000000003"}},
		{"model", map[string]string{"model": "gpt-4o-mini"}, []string{"f000000000000003", "f000000000000001"}},
		{"agent", map[string]string{"agent": "fix-typo"}, []string{"f000000000000002", "f000000000000001"}},
		{"date range", map[string]string{"since": day0.AddDate(0, 0, 1).Format("2006-01-02"), "until": day0.AddDate(0, 0, 2).Format("2006-01-02")}, []string{"f000000000000003", "f000000000000002"}},
		{"cost above", map[string]string{"cost": "0.04"}, []string{"f000000000000005", "f000000000000003", "f000000000000002"}},
		{"text in messages", map[string]string{"q": "TYPO"}, []string{"f000000000000002", "f000000000000001"}},
		{"text with a LIKE wildcard", map[string]string{"q": "t%o"}, nil},
		{"tag", map[string]string{"tag": "env=ci"}, []string{"f000000000000004", "f000000000000001"}},
		{"two tags", map[string]string{"tag": "env=ci team=web"}, []string{"f000000000000004"}},
		{"tag key", map[string]string{"tag": "team"}, []string{"f000000000000004"}},
		{"user", map[string]string{"user": "bo"}, []string{"f000000000000003"}},
		{"model and status", map[string]string{"model": "gpt-4o-mini", "status": "done", "agent": "refactor"}, []string{"f000000000000003"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab.Navigate(s.page("/runs", nil), "body[data-painted]")
			js, _ := json.Marshal(tc.fields)
			tab.Eval(fmt.Sprintf(`(() => { const f = %s; for (const k in f) document.querySelector('#filters [name="' + k + '"]').value = f[k];
				document.body.setAttribute('data-old', ''); return true })()`, js), nil)
			tab.Click(`#filters button[type=submit]`)
			tab.WaitFor("body[data-painted]:not([data-old])")
			if got := rows(tab); !slices.Equal(got, tc.want) {
				t.Errorf("filtered by %v: %v, want %v", tc.fields, got, tc.want)
			}
			var href string
			tab.Eval(`location.href`, &href)
			u, err := url.Parse(href)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.fields {
				if u.Query().Get(k) != v {
					t.Errorf("the URL %s does not keep %s=%s", href, k, v)
				}
			}
			// The URL, pasted (without the token: the cookie has it),
			// lists the same sessions.
			tab.Navigate(href, "body[data-painted]")
			if got := rows(tab); !slices.Equal(got, tc.want) {
				t.Errorf("the pasted URL %s lists %v, want %v", href, got, tc.want)
			}
			for k, v := range tc.fields {
				var shown string
				tab.Eval(`document.querySelector('#filters [name="`+k+`"]').value`, &shown)
				if shown != v {
					t.Errorf("the form shows %s=%q after the filter, want %q", k, shown, v)
				}
			}
			tab.Clean(s.ownOrPicker)
		})
	}

	tab.Navigate(s.page("/runs", url.Values{"model": {"gpt-4o-mini"}}), "body[data-painted]")
	tab.Screenshot(shots, "runs-filtered")
	tab.Click(`tr[data-session="f000000000000003"] a`)
	var path string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if tab.Eval(`location.pathname`, &path); path != "/runs" {
			break
		}
	}
	if path != "/sessions/f000000000000003" {
		t.Errorf("clicking the row's link opened %s, want /sessions/f000000000000003", path)
	}
}

// TestRunsPaging walks 120 sessions a page at a time, older then newer:
// pages of 50, newest first, every session once, and back.
func TestRunsPaging(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	var want []string
	for i := range 120 {
		// Pairs share a start time: the cursor must order by id too.
		c := runsSession{id: fmt.Sprintf("a0000000000%05d", i), name: "p", model: "m", status: "done", text: "x", started: day0.Add(time.Duration(i/2) * time.Minute)}
		c.write(t, home)
	}
	for i := 119; i >= 0; i -= 2 {
		want = append(want, fmt.Sprintf("a0000000000%05d", i-1), fmt.Sprintf("a0000000000%05d", i))
	}
	s := serve(t, home)
	tab := s.open(t, b, "/runs", nil)
	var pages [][]string
	next := func(sel string) {
		tab.Eval(`document.body.setAttribute('data-old', ''), true`, nil)
		tab.Click(sel)
		tab.WaitFor("body[data-painted]:not([data-old])")
	}
	pages = append(pages, rows(tab))
	if tab.Count("#newer") != 0 {
		t.Errorf("the first page links to newer sessions")
	}
	next("#older")
	pages = append(pages, rows(tab))
	next("#older")
	pages = append(pages, rows(tab))
	if tab.Count("#older") != 0 {
		t.Errorf("the last page links to older sessions")
	}
	if got := slices.Concat(pages...); !slices.Equal(got, want) {
		t.Fatalf("pages list %v, want %v", got, want)
	}
	if n := []int{len(pages[0]), len(pages[1]), len(pages[2])}; !slices.Equal(n, []int{50, 50, 20}) {
		t.Errorf("page sizes %v, want 50 50 20", n)
	}
	if !strings.Contains(tab.Text("#count"), "120 sessions") {
		t.Errorf("count says %q, want 120 sessions", tab.Text("#count"))
	}
	next("#newer")
	if got := rows(tab); !slices.Equal(got, pages[1]) {
		t.Errorf("newer from the last page lists %v, want the second page %v", got, pages[1])
	}
	next("#newer")
	if got := rows(tab); !slices.Equal(got, pages[0]) {
		t.Errorf("newer from the second page lists %v, want the first %v", got, pages[0])
	}
	if tab.Count("#newer") != 0 {
		t.Errorf("the first page, reached going newer, links to newer sessions")
	}
	tab.Clean(s.ownOrPicker)
}

// runsHostile is the red-team corpus (package redteam), for every
// string the runs page shows.
var runsHostile = redteam.Text("")

// TestRunsXSSCorpus records a session whose name, model, message, reason,
// tags and user are markup and script, and loads the runs page (and a
// search for the same text): nothing runs, no element is injected, and
// the strings show as text.
func TestRunsXSSCorpus(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	runsSession{id: "bad0000000000001", name: runsHostile, model: runsHostile, status: "failed", reason: runsHostile, text: runsHostile,
		started: day0, cost: 0.01, tags: map[string]string{"x": runsHostile}, user: runsHostile}.write(t, home)
	runDefault(t, home)
	s := serve(t, home)
	for _, q := range []url.Values{nil, {"q": {runsHostile}}, {"model": {runsHostile}, "tag": {"x"}}} {
		tab := s.open(t, b, "/runs", q)
		var got struct {
			Pwned   string
			Title   string
			Images  int
			SVGs    int
			Scripts int
			Text    string
		}
		tab.Eval(`({Pwned: String(window.__pwned), Title: document.title, Images: document.querySelectorAll('img').length,
			SVGs: document.querySelectorAll('svg').length, Scripts: document.querySelectorAll('script').length,
			Text: document.querySelector('tr[data-session="bad0000000000001"]').textContent})`, &got)
		if got.Pwned != "undefined" || strings.Contains(got.Title, "pwned") || got.Images != 0 || got.SVGs != 0 {
			t.Errorf("query %v: the recorded markup ran or was injected: %+v", q, got)
		}
		if got.Scripts != 1 {
			t.Errorf("query %v: %d script elements, want the page's own one", q, got.Scripts)
		}
		if !strings.Contains(got.Text, `<script>window.__pwned=1`) {
			t.Errorf("query %v: the row does not show the recorded text as text: %q", q, got.Text)
		}
		if q == nil {
			tab.Screenshot(shots, "runs-xss")
		}
		tab.Clean(s.ownOrPicker)
	}
}

// TestRunsListsNewSessions records a session while the server runs: the
// next load of the runs page lists it (the database is opened again and
// the page's table made again), and a load with nothing new does not
// reopen it.
func TestRunsListsNewSessions(t *testing.T) {
	b := browser.New(t)
	home := filterHome(t)
	s := serve(t, home)
	tab := s.open(t, b, "/runs", nil)
	if n := len(rows(tab)); n != 5 {
		t.Fatalf("runs page lists %d sessions, want 5", n)
	}
	runsSession{id: "f000000000000009", name: "late", model: "m", status: "done", text: "x", started: day0.AddDate(0, 1, 0)}.write(t, home)
	tab.Navigate(s.page("/runs", nil), "body[data-painted]")
	if got := rows(tab); len(got) != 6 || got[0] != "f000000000000009" {
		t.Errorf("after a new session the runs page lists %v, want it first of 6", got)
	}
	tab.Clean(s.ownOrPicker)
}

// TestRunsCompareSelected ticks two rows of the runs page and compares
// them: the compare page opens with exactly those sessions.
func TestRunsCompareSelected(t *testing.T) {
	b := browser.New(t)
	home := filterHome(t)
	s := serve(t, home)
	tab := s.open(t, b, "/runs", nil)
	tab.Click(`input[name="s"][value="f000000000000001"]`)
	tab.Click(`input[name="s"][value="f000000000000003"]`)
	tab.Eval(`document.body.setAttribute('data-old', ''), true`, nil)
	tab.Click("#compare-selected")
	tab.WaitFor("body[data-painted]:not([data-old])")
	var loc string
	tab.Eval(`location.pathname + location.search`, &loc)
	// The form sends the ticked rows in the page's order, newest first.
	if loc != "/compare?s=f000000000000003&s=f000000000000001" {
		t.Errorf("compare selected went to %s", loc)
	}
	for _, id := range []string{"f000000000000001", "f000000000000003"} {
		if tab.Count(`a[href="/sessions/`+id+`"]`) == 0 {
			t.Errorf("the compare page does not link session %s", id)
		}
	}
	tab.Clean(s.ownOrPicker)
}

// TestRunsShowsAFinishedRun: a session running when the page first loads
// (its lease held) and finished since shows done on the next load, though
// no session was added (the page had kept it running until one was).
func TestRunsShowsAFinishedRun(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	st := recorder.Store{Root: home}
	sess, err := st.Create(session.Event{Kind: session.KindSessionStarted, SessionID: "a110000000000002", Name: "long", Provider: "scripted", Model: "m"}, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(session.Event{Kind: session.KindUserMessage, Text: "go"}); err != nil {
		t.Fatal(err)
	}
	s := serve(t, home)
	tab := s.open(t, b, "/runs", nil)
	status := func() string { return tab.Text(`tr[data-session="a110000000000002"] .status`) }
	if got := status(); got != "running" {
		t.Fatalf("status %q, want running", got)
	}
	if _, err := sess.Append(session.Event{Kind: session.KindSessionFinished, Status: "done"}); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	tab.Navigate(s.page("/runs", nil), "body[data-painted]")
	if got := status(); got != "done" {
		t.Errorf("after the run finished the runs page says %q, want done", got)
	}
	tab.Clean(s.ownOrPicker)
}
