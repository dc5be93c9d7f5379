package view_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// TestBrowser records sessions with the real command tree (a scripted
// run with hostile output, a fork, compactions, approvals, a crash and
// resume, an interruption and resume), writes their pages with `agentctl
// view` and checks them in headless chromium: the DOM, not the HTML text.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("records sessions and drives chromium")
	}
	b := newBrowser(t)
	h := recorded(t)
	out := t.TempDir()

	t.Run("rich", func(t *testing.T) {
		page := h.view(out, idRich)
		tb := b.open(t, page)
		tb.screenshot("rich")
		checkHeader(t, tb, h.summary(idRich))

		// The hostile output is text: nothing ran, no element was made of
		// it, the escapes show as escapes, the secret is redacted.
		var got struct {
			Pwned, Title    string
			Scripts, Imgs   int
			Text            string
			HasEsc, HasBidi bool
			SecretInDOM     bool
			SecretInHTML    bool
			RedactedShown   bool
		}
		raw, _ := os.ReadFile(page)
		tb.eval(`(() => {
			const pre = [...document.querySelectorAll('#e6 pre')].map(p => p.textContent).join('\n');
			return {
				Pwned: String(window.__pwned), Title: document.title,
				Scripts: document.scripts.length, Imgs: document.images.length,
				Text: pre, HasEsc: pre.includes('\\x1b[31m'), HasBidi: pre.includes('\\u202e'),
				SecretInDOM: document.documentElement.innerHTML.includes('`+secret+`'),
				RedactedShown: pre.includes('[REDACTED'),
			};
		})()`, &got)
		got.SecretInHTML = strings.Contains(string(raw), secret)
		if got.Pwned != "undefined" || strings.Contains(got.Title, "pwned") {
			t.Errorf("the recorded <script> ran: window.__pwned=%s, title %q", got.Pwned, got.Title)
		}
		if got.Scripts != 2 || got.Imgs != 0 {
			t.Errorf("page has %d scripts and %d images, want its own 2 and none: recorded markup became elements", got.Scripts, got.Imgs)
		}
		if !strings.Contains(got.Text, `<script>window.__pwned=1;document.title="pwned"</script> <img src=x`) {
			t.Errorf("tool output not shown as text; #e6 pre = %q", got.Text)
		}
		if !got.HasEsc || !got.HasBidi {
			t.Errorf("control characters not shown as escapes (\\x1b %v, \\u202e %v): %q", got.HasEsc, got.HasBidi, got.Text)
		}
		if got.SecretInDOM || got.SecretInHTML || !got.RedactedShown {
			t.Errorf("secret in DOM %v, in HTML %v; redaction shown %v", got.SecretInDOM, got.SecretInHTML, got.RedactedShown)
		}

		// A tool call expands to its arguments and result.
		var card struct {
			Cards int
			Text  string
		}
		tb.click(`#e5 .call-toggle`)
		tb.eval(`({Cards: document.querySelectorAll('#e5 .call-card').length, Text: (document.querySelector('#e5 .call-card') || {}).textContent || ''})`, &card)
		if card.Cards != 1 || !strings.Contains(card.Text, `"command": "sh hostile.sh"`) || !strings.Contains(card.Text, "seq 6 result") {
			t.Errorf("expanding the call of seq 5: %d cards, text %q", card.Cards, card.Text)
		}

		// The failed call and its error are highlighted.
		var errRow bool
		tb.eval(`document.querySelector('#e10').classList.contains('lvl-error')`, &errRow)
		if !errRow {
			t.Error("the failed read_file result (seq 10) is not highlighted")
		}

		// Long output is collapsed and expands.
		var long struct{ Before, After int }
		tb.eval(`(() => { const b = document.querySelector('#e14 button.more'); const pre = () => document.querySelector('#e14 .long pre').textContent.split('\n').length;
			const before = pre(); b.click(); return {Before: before, After: pre()}; })()`, &long)
		if long.Before > 14 || long.After < 400 {
			t.Errorf("seq 14's 400 lines: %d shown collapsed, %d expanded", long.Before, long.After)
		}

		// The whole output of the huge call is linked relative to the page,
		// and the link reaches the artifact.
		var href string
		tb.eval(`(document.querySelector('#e18 a[href*="artifacts/"]') || {}).href || ''`, &href)
		if u, err := url.Parse(href); err != nil || u.Scheme != "file" {
			t.Errorf("artifact link of seq 18 = %q", href)
		} else if fi, err := os.Stat(u.Path); err != nil || fi.Size() < 300000 {
			t.Errorf("artifact link %s: %v", href, err)
		}

		checkChart(t, tb)
		checkFindingJump(t, tb)
		if n := tb.drawAll(); n != int(h.summary(idRich)["events"].(float64)) {
			t.Errorf("timeline drew %d rows, want one per event", n)
		}
		tb.clean()
	})

	t.Run("compaction", func(t *testing.T) {
		tb := b.open(t, h.view(out, idCompact))
		tb.screenshot("compaction")
		checkHeader(t, tb, h.summary(idCompact))
		fold := fold(t, h, idCompact)
		tb.drawAll()
		var got struct {
			Rows, Goals, Marks int
			Goal               string
		}
		tb.eval(`({Rows: document.querySelectorAll('#rows .k-compaction').length,
			Goals: [...document.querySelectorAll('#rows .k-compaction .goal pre')].filter(p => p.textContent.startsWith('Rename the type Foo to Bar in pkg/. Constraint: never edit anything under vendor/.')).length,
			Marks: document.querySelectorAll('#chart .mk.m-compaction').length})`, &got)
		if got.Rows != fold.Compactions || got.Goals != fold.Compactions || got.Marks != fold.Compactions || fold.Compactions < 2 {
			t.Errorf("%d compactions folded; page: %d rows, %d with the pinned goal, %d chart marks", fold.Compactions, got.Rows, got.Goals, got.Marks)
		}
		tb.clean()
	})

	t.Run("approvals", func(t *testing.T) {
		tb := b.open(t, h.view(out, idApproval))
		tb.screenshot("approvals")
		checkHeader(t, tb, h.summary(idApproval))
		tb.drawAll()
		var got struct {
			Requests, Session, Once, Denied, Resumes int
			Grant                                    string
		}
		tb.eval(`({Requests: document.querySelectorAll('#rows .k-approval_request').length,
			Session: [...document.querySelectorAll('#rows .k-approval_granted')].filter(r => r.textContent.includes('scope session')).length,
			Once: [...document.querySelectorAll('#rows .k-approval_granted')].filter(r => r.textContent.includes('scope once')).length,
			Denied: [...document.querySelectorAll('#rows .k-approval_denied.lvl-warn')].filter(r => r.textContent.includes('run it in staging first')).length,
			Resumes: document.querySelectorAll('#rows .mark.m-resume').length,
			Grant: (document.querySelector('[data-k=grants] dd') || {}).textContent || ''})`, &got)
		if got.Requests != 3 || got.Session != 1 || got.Once != 1 || got.Denied != 1 || got.Resumes != 3 || got.Grant != "write_file" {
			t.Errorf("approvals page: %+v, want 3 requests, one grant for the session and one once, one denial, 3 resumes, write_file granted", got)
		}
		tb.clean()
	})

	t.Run("crash and resume", func(t *testing.T) {
		tb := b.open(t, h.view(out, idCrash))
		tb.screenshot("crash")
		checkHeader(t, tb, h.summary(idCrash))
		tb.drawAll()
		var got struct{ Crash, Resume, ChartCrash, ChartResume, Reconciled int }
		tb.eval(`({Crash: document.querySelectorAll('#rows .mark.m-crash').length, Resume: document.querySelectorAll('#rows .mark.m-resume').length,
			ChartCrash: document.querySelectorAll('#chart .mk.m-crash').length, ChartResume: document.querySelectorAll('#chart .mk.m-resume').length,
			Reconciled: document.querySelectorAll('#rows .k-reconciled').length})`, &got)
		if got.Crash != 1 || got.Resume != 1 || got.ChartCrash != 1 || got.ChartResume != 1 || got.Reconciled != 1 {
			t.Errorf("crash page: %+v, want one crash, one resume, one reconciliation", got)
		}
		tb.clean()
	})

	t.Run("interruption", func(t *testing.T) {
		tb := b.open(t, h.view(out, idInterrupt))
		checkHeader(t, tb, h.summary(idInterrupt))
		var got struct{ Interrupted, Warn, Resume int }
		tb.eval(`({Interrupted: document.querySelectorAll('#rows .k-interrupted.lvl-warn').length,
			Warn: document.querySelectorAll('#chart .mk.m-interrupted').length, Resume: document.querySelectorAll('#rows .mark.m-resume').length})`, &got)
		if got.Interrupted != 1 || got.Warn != 1 || got.Resume != 1 {
			t.Errorf("interruption page: %+v", got)
		}
		tb.clean()
	})

	t.Run("fork links", func(t *testing.T) {
		tb := b.open(t, h.view(out, idFork))
		var got struct{ Parent, Fork, Source string }
		tb.eval(`({Parent: (document.querySelector('.rel a') || {}).getAttribute?.('href') || '',
			Fork: document.querySelector('#rows .mark.m-fork') ? 'yes' : '', Source: document.querySelector('[data-k=source] dd').textContent})`, &got)
		if got.Parent != "./"+idRich+".html" || got.Fork != "yes" || got.Source != "fork of "+idRich+" at seq 6" {
			t.Errorf("fork page: %+v", got)
		}
		tb.clean()
		tb = b.open(t, h.view(out, idRich))
		var forks string
		tb.eval(`document.querySelector('.rel').textContent`, &forks)
		if !strings.Contains(forks, "forks: "+idFork+" (at seq 6)") {
			t.Errorf("parent page links no fork: %q", forks)
		}
	})

	t.Run("compare", func(t *testing.T) {
		var diff struct {
			FirstDiff int `json:"first_diff"`
		}
		out0 := h.runAny("replay", "diff", idRich, idFork, "--json")
		if err := json.Unmarshal([]byte(out0), &diff); err != nil || diff.FirstDiff == 0 {
			t.Fatalf("replay diff: %v %s", err, out0)
		}
		tb := b.open(t, h.view(out, "--compare", idRich, idFork))
		tb.screenshot("compare")
		var got struct {
			Verdict, Rel string
			First        []string
			Rows         int
		}
		tb.eval(`({Verdict: document.getElementById('verdict').textContent, Rel: (document.querySelector('.rel') || {}).textContent || '',
			First: [...document.querySelectorAll('tr.first')].map(r => r.id), Rows: document.querySelectorAll('table.cmp tbody tr').length})`, &got)
		want := fmt.Sprintf("First difference at turn %d", diff.FirstDiff)
		if !strings.HasPrefix(got.Verdict, want) || len(got.First) != 1 || got.First[0] != fmt.Sprintf("t%d", diff.FirstDiff) || got.Rel != "B is a fork of A at seq 6" {
			t.Errorf("compare page: %+v, want %q on row t%d", got, want, diff.FirstDiff)
		}
		tb.click(`#verdict a`)
		var inView bool
		tb.eval(fmt.Sprintf(`(() => { const r = document.getElementById('t%d').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()`, diff.FirstDiff), &inView)
		if !inView {
			t.Error("the first-difference link does not bring its row into view")
		}
		tb.clean()
	})

	t.Run("imported without a model", func(t *testing.T) {
		// The Cursor IDE's transcript (internal/transcript/testdata)
		// records no model: the page says so, never "undefined".
		src := filepath.Join(h.fixtures, "..", "internal", "transcript", "testdata", "cursor", "txt", "02-readme-and-deployment.txt")
		h.run(cli.ExitOK, "import", "cursor", src)
		page := h.view(out, "8dbe2f7a81d31b56")
		tb := b.open(t, page)
		tb.screenshot("imported-no-model")
		var text string
		tb.eval(`document.body.innerText`, &text)
		if strings.Contains(text, "undefined") || !strings.Contains(text, "cursor (model not recorded)") {
			t.Errorf("a session with no model: the page shows %q", regexp.MustCompile(`.*(undefined|model).*`).FindAllString(text, 5))
		}
		// Nor tokens, cost or times: said, not shown as measured zeros.
		var figs map[string]string
		tb.eval(`Object.fromEntries([...document.querySelectorAll('.fig')].map(d => [d.dataset.k, d.querySelector('dd').textContent]))`, &figs)
		for _, k := range []string{"tokens", "cost", "duration"} {
			if figs[k] != "not recorded by the source" {
				t.Errorf("figure %s = %q, want it said not recorded", k, figs[k])
			}
		}
		if !strings.Contains(text, "Not recorded: the source (import from cursor) holds no token counts") || strings.Contains(text, "0 (in 0, out 0)") {
			t.Errorf("the tokens section of a source with no usage: %q", regexp.MustCompile(`.*(Not recorded|in 0).*`).FindAllString(text, 5))
		}
		tb.clean()
	})

	t.Run("bundle on a laptop", func(t *testing.T) {
		// The bundle is carried away from the home, which is gone.
		laptop := t.TempDir()
		bpath := filepath.Join(laptop, idRich+".tar.zst")
		h.run(cli.ExitOK, "bundle", idRich, "-o", bpath)
		want := h.summary(idRich)
		away := &home{t: t, dir: filepath.Join(laptop, "no-home"), fixtures: h.fixtures}
		page := filepath.Join(laptop, "pages", "rich.html")
		os.MkdirAll(filepath.Dir(page), 0o755)
		away.run(cli.ExitOK, "view", "--bundle", bpath, "-o", page)
		// Unpacked where the page says, the artifact link reaches it.
		t.Chdir(laptop)
		away.run(cli.ExitOK, "bundle", "open", bpath)
		tb := b.open(t, page)
		tb.screenshot("bundle")
		checkHeader(t, tb, want)
		var href string
		tb.eval(`(document.querySelector('#e18 a[href*="artifacts/"]') || {}).href || ''`, &href)
		u, err := url.Parse(href)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(u.Path); err != nil || fi.Size() < 300000 {
			t.Errorf("artifact link %q in the bundle's page: %v", href, err)
		}
		var findings int
		tb.eval(`document.querySelectorAll('.finding a.cite').length`, &findings)
		if findings == 0 {
			t.Error("no diagnose finding cites an event in the bundle's page")
		}
		tb.clean()
	})
}

// runAny runs agentctl and returns stdout whatever the exit code.
func (h *home) runAny(args ...string) string {
	r := testcli.Run(h.t, h.dir, args...)
	return r.Stdout + r.Stderr
}

func fold(t *testing.T, h *home, id string) *session.State {
	st, _, err := recorder.Store{Root: h.dir}.Fold(id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// checkHeader holds the header to `agentctl sessions --json`: the data
// the page embeds and the figures it shows.
func checkHeader(t *testing.T, tb *tab, want map[string]any) {
	t.Helper()
	var got struct {
		Summary map[string]any
		Shown   map[string]string
	}
	tb.eval(`({Summary: JSON.parse(document.getElementById('data').textContent).session.summary,
		Shown: Object.fromEntries([...document.querySelectorAll('.fig')].map(f => [f.dataset.k, f.querySelector('dd').textContent]))})`, &got)
	for _, k := range []string{"session_id", "name", "provider", "model", "status", "started", "ended", "events", "input_tokens", "output_tokens", "cost_usd", "tool_calls", "errors", "torn"} {
		if k == "started" || k == "ended" {
			// The log keeps nanoseconds; the views' timestamps (DuckDB) keep microseconds.
			g, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(got.Summary[k]))
			w, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(want[k]))
			if !g.Truncate(time.Microsecond).Equal(w) {
				t.Errorf("summary %s = %v, sessions --json says %v", k, got.Summary[k], want[k])
			}
			continue
		}
		if fmt.Sprint(got.Summary[k]) != fmt.Sprint(want[k]) {
			t.Errorf("summary %s = %v, sessions --json says %v", k, got.Summary[k], want[k])
		}
	}
	n := func(k string) string { return fmt.Sprintf("%.0f", want[k].(float64)) }
	shown := map[string]string{
		"status":     fmt.Sprint(want["status"]),
		"events":     n("events"),
		"tool_calls": n("tool_calls"),
		"errors":     n("errors"),
		"cost":       fmt.Sprintf("$%.4f", want["cost_usd"].(float64)),
	}
	for k, w := range shown {
		if g := digits(got.Shown[k]); g != w {
			t.Errorf("header shows %s %q, sessions --json says %q", k, g, w)
		}
	}
	tok := want["input_tokens"].(float64) + want["output_tokens"].(float64)
	if g := digits(got.Shown["tokens"]); !strings.HasPrefix(g, fmt.Sprintf("%.0f (in %s, out %s)", tok, n("input_tokens"), n("output_tokens"))) {
		t.Errorf("header shows tokens %q, sessions --json says %.0f", g, tok)
	}
}

// digits drops the thousands separators of shown numbers.
func digits(s string) string { return regexp.MustCompile(`,(\d{3})`).ReplaceAllString(s, "$1") }

// checkChart: the chart is drawn, its token line ends at the session's
// tokens, and every error the timeline marks is on it.
func checkChart(t *testing.T, tb *tab) {
	t.Helper()
	var got struct {
		Points, Errors, Marks int
		Label                 string
		Cost                  bool
	}
	tb.eval(`(() => { const d = JSON.parse(document.getElementById('data').textContent).session;
		return {Points: document.querySelector('#chart polyline.tok').points.length,
			Errors: document.querySelectorAll('#chart .mk.m-error').length,
			Marks: d.marks.filter(m => m.kind === 'error').length,
			Label: document.querySelector('#chart .tokl').textContent,
			Cost: !!document.querySelector('#chart polyline.cost')}; })()`, &got)
	if got.Points < 3 || got.Errors == 0 || got.Errors != got.Marks || !got.Cost {
		t.Errorf("chart: %+v", got)
	}
}

// checkFindingJump clicks the last event a diagnose finding cites (drawn
// lazily, so possibly not yet drawn) and checks that it is drawn, in view
// and marked as the target.
func checkFindingJump(t *testing.T, tb *tab) {
	t.Helper()
	var seq string
	tb.eval(`(() => { const a = [...document.querySelectorAll('.finding a.cite')]; if (!a.length) return '';
		a[a.length-1].dataset.pick = '1'; return a[a.length-1].textContent; })()`, &seq)
	if seq == "" {
		t.Fatal("no diagnose finding cites an event")
	}
	tb.click(`a.cite[data-pick]`)
	var got struct {
		Target string
		InView bool
		Hash   string
	}
	tb.eval(`(() => { const e = document.querySelector('.ev.target'); if (!e) return {};
		const r = e.getBoundingClientRect(); return {Target: e.dataset.seq, InView: r.top >= 0 && r.top < innerHeight, Hash: location.hash}; })()`, &got)
	if got.Target != seq || !got.InView || got.Hash != "#e"+seq {
		t.Errorf("clicking a finding's seq: target %+v", got)
	}
}
