package view_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumEnv names a chromium binary to use instead of the one on PATH.
const chromiumEnv = "AGENTCTL_CHROMIUM"

// chromium finds Debian's chromium, or skips: .ci/run installs it, so CI
// always runs the browser tests.
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(chromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skipf("no chromium on PATH (set %s, or apt-get install -y chromium; .ci/run installs it): the page is not checked in a browser", chromiumEnv)
	return ""
}

// browser is one headless chromium, with a fresh profile, that reaches
// nothing on the network by itself.
type browser struct {
	ctx    context.Context
	cancel func()
}

func newBrowser(t testing.TB) *browser {
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // tests run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		// Without these chromium calls Google on start and fails.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		acancel()
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	b := &browser{ctx: ctx, cancel: func() { cancel(); acancel() }}
	t.Cleanup(b.cancel)
	return b
}

// tab is one page loaded in its own tab, with what it asked of the
// network and what it reported as an error.
type tab struct {
	t        testing.TB
	ctx      context.Context
	close    func() // closes the tab
	url      string
	mu       sync.Mutex
	requests []string
	problems []string
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
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx, close: cancel, url: (&url.URL{Scheme: "file", Path: abs}).String()}
	nav := tb.url
	if frag != "" {
		nav += "#" + frag
	}
	err = chromedp.Listen(ctx, func(ev any) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			tb.requests = append(tb.requests, ev.Request.URL)
		case *runtime.EventConsoleAPICalled:
			switch ev.Type {
			case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeWarning, runtime.ConsoleAPICalledTypeAssert:
				tb.problems = append(tb.problems, fmt.Sprintf("console.%s: %v", ev.Type, args(ev.Args)))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			tb.problems = append(tb.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				tb.problems = append(tb.problems, fmt.Sprintf("log %s %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tb.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
		return err
	}), chromedp.Navigate(nav), chromedp.WaitReady(chromedp.CSS("body[data-painted]")))
	return tb
}

func args(as []*runtime.RemoteObject) string {
	var out []string
	for _, a := range as {
		if len(a.Value) > 0 {
			out = append(out, string(a.Value))
		} else {
			out = append(out, a.Description)
		}
	}
	return strings.Join(out, " ")
}

// do runs actions in the tab, each within a minute.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("chromium: %v", err)
	}
}

// click clicks the first element sel selects with the mouse, at the
// middle of the element scrolled into view. (chromedp.Click would find it
// through the DOM domain, which copies the whole DOM of a 10,000-row page
// into the test first.)
func (tb *tab) click(sel string) {
	tb.t.Helper()
	var at struct {
		Found bool
		X, Y  float64
	}
	q, _ := json.Marshal(sel)
	tb.eval(`(() => { const e = document.querySelector(`+string(q)+`); if (!e) return {Found: false};
		e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();
		return {Found: true, X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`, &at)
	if !at.Found {
		tb.t.Fatalf("click: nothing matches %s", sel)
	}
	tb.do(chromedp.MouseClickXY(at.X, at.Y))
}

// eval evaluates a JavaScript expression in the page into out (awaiting
// a promise).
func (tb *tab) eval(expr string, out any) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("chromium: evaluate: %v\n%s", err, expr)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		tb.t.Fatalf("evaluate: %v: %s", err, raw)
	}
}

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
// asked for anything but itself.
func (tb *tab) clean() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, p := range tb.problems {
		tb.t.Errorf("page reported: %s", p)
	}
	for _, u := range tb.requests {
		if u != tb.url {
			tb.t.Errorf("page requested %s; a view fetches nothing", u)
		}
	}
}

// screenshot keeps a full-page PNG in testdata/out (ignored by git), the
// test's artifact for a human to look at.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("chromium: screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Join("testdata", "out"), 0o755); err != nil {
		tb.t.Fatal(err)
	}
	p := filepath.Join("testdata", "out", name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", p)
}
