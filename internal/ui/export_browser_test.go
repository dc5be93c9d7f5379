package ui_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
	"github.com/agentctl/agentctl/internal/ui"
)

// TestExportOpensFromFile exports two of three sessions with `agentctl ui
// --export DIR --session ...` and opens every written page from file://
// in chromium with no server: no console error, no CSP violation, no
// request outside DIR; the runs page lists the two; a row's link opens
// that session's file; the runsHostile strings stay text.
func TestExportOpensFromFile(t *testing.T) {
	defer ui.StubSessionPage()()
	b := browser.New(t)
	home := filterHome(t)
	runsSession{id: "bad0000000000001", name: runsHostile, model: runsHostile, status: "failed", reason: runsHostile, text: runsHostile,
		started: day0.AddDate(0, 0, 9), tags: map[string]string{"x": runsHostile}, user: runsHostile}.write(t, home)
	dir := filepath.Join(t.TempDir(), "export")
	r := testcli.Must(t, home, "ui", "--export", dir, "--session", "f000000000000002", "--session", "bad0000000000001")
	if !strings.Contains(r.Stdout, filepath.Join(dir, "index.html")) {
		t.Errorf("ui --export printed %q, want the index's path", r.Stdout)
	}
	var pages []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".html") {
			rel, _ := filepath.Rel(dir, p)
			pages = append(pages, rel)
		}
		return err
	})
	want := []string{"cost.html", "evals.html", "index.html", "sessions-bad0000000000001.html", "sessions-f000000000000002.html"}
	if !slices.Equal(pages, want) {
		t.Errorf("exported pages %v, want %v", pages, want)
	}
	inDir := func(u string) bool { return strings.HasPrefix(u, "file://"+dir+"/") }
	for _, p := range pages {
		tab := b.Open(t, "file://"+filepath.Join(dir, p), "body[data-painted]")
		var pwned string
		tab.Eval(`String(window.__pwned)`, &pwned)
		if pwned != "undefined" || tab.Count("img") != 0 {
			t.Errorf("%s: recorded markup ran (window.__pwned=%s) or was injected (%d img)", p, pwned, tab.Count("img"))
		}
		if p == "index.html" {
			if got := rows(tab); !slices.Equal(got, []string{"bad0000000000001", "f000000000000002"}) {
				t.Errorf("exported runs page lists %v, want the two exported sessions", got)
			}
			if tab.Count("form") != 0 || tab.Count(".pager") != 0 {
				t.Errorf("the exported runs page has a form or a pager, which need the server")
			}
			tab.Screenshot(shots, "export-runs")
			tab.Clean(inDir)
			tab.Eval(`document.body.setAttribute('data-old', ''), true`, nil)
			tab.Click(`tr[data-session="f000000000000002"] a`)
			tab.WaitFor("body[data-painted]:not([data-old])")
			var href string
			tab.Eval(`location.href`, &href)
			if href != "file://"+filepath.Join(dir, "sessions-f000000000000002.html") {
				t.Errorf("the row's link opened %s", href)
			}
		}
		tab.Clean(inDir)
	}
	// The CSP travels with the files, in a meta element.
	b0, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(b0), `http-equiv="Content-Security-Policy"`) {
		t.Errorf("the exported page carries no CSP")
	}
	for _, a := range []string{"ui.css", "ui.js", "favicon.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "assets", a)); err != nil {
			t.Errorf("asset %s not exported: %v", a, err)
		}
	}

	// An unknown id is an error that names it, and writes nothing.
	r = testcli.Run(t, home, "ui", "--export", filepath.Join(t.TempDir(), "x"), "--session", "0000000000000bad")
	if r.Code == 0 || !strings.Contains(r.Stderr, "0000000000000bad") {
		t.Errorf("export of an unknown session: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
