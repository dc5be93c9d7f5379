// Package browser drives a headless Debian chromium for the tests of the
// pages agentctl serves or writes: it loads a page, collects every console
// error, exception, CSP violation and network request, clicks, evaluates
// and keeps screenshots for people to look at.
//
// It is a package of its own (not a _test file) so the tests of view and
// ui share one harness.
package browser

import (
	"context"
	"encoding/json"
	"fmt"
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

// Env names a chromium binary to use instead of the one on PATH.
const Env = "AGENTCTL_CHROMIUM"

// Chromium finds Debian's chromium, or skips: .ci/run installs it and sets
// Env, so CI always runs the browser tests.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(Env); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skipf("no chromium on PATH (set %s, or apt-get install -y chromium; .ci/run installs it): the page is not checked in a browser", Env)
	return ""
}

// Browser is one headless chromium with a fresh profile that reaches
// nothing on the network by itself.
type Browser struct {
	ctx    context.Context
	cancel func()
}

// New starts chromium for the test; it is stopped when the test ends.
func New(t testing.TB) *Browser {
	exe := Chromium(t)
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
	b := &Browser{ctx: ctx, cancel: func() { cancel(); acancel() }}
	t.Cleanup(b.cancel)
	return b
}

// Tab is one tab, with what it asked of the network and what it reported
// as an error.
type Tab struct {
	t        testing.TB
	ctx      context.Context
	Close    func()
	mu       sync.Mutex
	requests []string
	problems []string
}

// Open loads u (http:// or file://) in a new tab and waits until ready
// (a CSS selector, e.g. "body[data-painted]") matches.
func (b *Browser) Open(t testing.TB, u, ready string) *Tab {
	t.Helper()
	tb := b.NewTab(t)
	tb.Navigate(u, ready)
	return tb
}

// NewTab opens an empty tab that records from the start.
func (b *Browser) NewTab(t testing.TB) *Tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	tb := &Tab{t: t, ctx: ctx, Close: cancel}
	err := chromedp.Listen(ctx, func(ev any) {
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
			// CSP violations arrive here ("Refused to ...", source security).
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				tb.problems = append(tb.problems, fmt.Sprintf("log %s %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tb.Do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
		return err
	}))
	return tb
}

// Navigate loads u and waits until ready matches.
func (tb *Tab) Navigate(u, ready string) {
	tb.t.Helper()
	tb.Do(chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS(ready)))
}

// WaitFor waits until sel matches (after a click that loads a page).
func (tb *Tab) WaitFor(sel string) {
	tb.t.Helper()
	tb.Do(chromedp.WaitReady(chromedp.CSS(sel)))
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

// Do runs actions in the tab, each within a minute.
func (tb *Tab) Do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("chromium: %v", err)
	}
}

// Click clicks the first element sel selects with the mouse, at the
// middle of the element scrolled into view. (chromedp.Click would find it
// through the DOM domain, which copies the whole DOM of a 10,000-row page
// into the test first.)
func (tb *Tab) Click(sel string) {
	tb.t.Helper()
	var at struct {
		Found bool
		X, Y  float64
	}
	q, _ := json.Marshal(sel)
	tb.Eval(`(() => { const e = document.querySelector(`+string(q)+`); if (!e) return {Found: false};
		e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();
		return {Found: true, X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`, &at)
	if !at.Found {
		tb.t.Fatalf("click: nothing matches %s", sel)
	}
	tb.Do(chromedp.MouseClickXY(at.X, at.Y))
}

// Eval evaluates a JavaScript expression in the page into out (awaiting
// a promise).
func (tb *Tab) Eval(expr string, out any) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("chromium: evaluate: %v\n%s", err, expr)
	}
	if out == nil {
		return
	}
	if err := json.Unmarshal(raw, out); err != nil {
		tb.t.Fatalf("evaluate: %v: %s", err, raw)
	}
}

// Text is the textContent of the first element sel selects ("" if none).
func (tb *Tab) Text(sel string) string {
	tb.t.Helper()
	q, _ := json.Marshal(sel)
	var s string
	tb.Eval(`(() => { const e = document.querySelector(`+string(q)+`); return e ? e.textContent : ''; })()`, &s)
	return s
}

// Count is how many elements sel selects.
func (tb *Tab) Count(sel string) int {
	tb.t.Helper()
	q, _ := json.Marshal(sel)
	var n int
	tb.Eval(`document.querySelectorAll(`+string(q)+`).length`, &n)
	return n
}

// Problems are the errors, warnings and CSP violations the tab reported.
func (tb *Tab) Problems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.problems...)
}

// Requests are the URLs the tab asked for.
func (tb *Tab) Requests() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.requests...)
}

// Clean fails the test if the tab reported an error, a warning or a CSP
// violation, or asked for a URL allowed refuses.
func (tb *Tab) Clean(allowed func(u string) bool) {
	tb.t.Helper()
	for _, p := range tb.Problems() {
		tb.t.Errorf("page reported: %s", p)
	}
	for _, u := range tb.Requests() {
		if allowed != nil && !allowed(u) {
			tb.t.Errorf("page requested %s", u)
		}
	}
}

// Screenshot keeps a full-page PNG in dir (testdata/out, ignored by git),
// the test's artifact for a human to look at.
func (tb *Tab) Screenshot(dir, name string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("chromium: screenshot: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", p)
	return p
}
