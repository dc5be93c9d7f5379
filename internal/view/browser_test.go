package view_test

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	cbrowser "github.com/agentctl/agentctl/internal/testenv/browser"
)

// browser is the shared chromium harness with the view tests' own verbs:
// a view is a file, opened by path, that may ask for nothing but itself.
type browser struct{ b *cbrowser.Browser }

func newBrowser(t testing.TB) *browser { return &browser{cbrowser.New(t)} }

// tab is one page loaded in its own tab.
type tab struct {
	*cbrowser.Tab
	t   testing.TB
	url string
}

// open loads the page at path (with a #fragment, if it ends in one) in a
// new tab and waits until its script has drawn it and the browser has
// painted that (body[data-painted]).
func (b *browser) open(t testing.TB, path string) *tab {
	t.Helper()
	path, frag, _ := strings.Cut(path, "#")
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	nav := u
	if frag != "" {
		nav += "#" + frag
	}
	return &tab{Tab: b.b.Open(t, nav, "body[data-painted]"), t: t, url: u}
}

func (tb *tab) eval(expr string, out any) { tb.t.Helper(); tb.Eval(expr, out) }
func (tb *tab) click(sel string)          { tb.t.Helper(); tb.Click(sel) }
func (tb *tab) close()                    { tb.Close() }

// drawAll scrolls to the end of the timeline until every row is drawn,
// as a reader scrolling down would, and returns the rows drawn.
func (tb *tab) drawAll() int {
	tb.t.Helper()
	var n int
	tb.eval(`(async () => {
		for (let i = 0; i < 2000; i++) {
			window.scrollTo(0, document.body.scrollHeight);
			await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
			const c = document.querySelector('.count');
			if (!c || c.dataset.drawn === String(document.querySelectorAll('#rows .ev').length) &&
			    document.querySelectorAll('#rows .ev').length >= JSON.parse(document.getElementById('data').textContent).session.events.length) break;
		}
		return document.querySelectorAll('#rows .ev').length;
	})()`, &n)
	return n
}

// clean fails the test if the page reported an error or a warning, or
// asked for anything but itself: a view fetches nothing.
func (tb *tab) clean() {
	tb.t.Helper()
	tb.Clean(func(u string) bool { return u == tb.url })
}

// screenshot keeps a full-page PNG in testdata/out (ignored by git), the
// test's artifact for a human to look at.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	tb.Screenshot(filepath.Join("testdata", "out"), name)
}
