package ui_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// evalSuite writes suite "pages" with scenario "reads" (passes) and
// "hostile" (whose assertion, named with the red-team markup, fails unless
// fixed), and returns its path.
func evalSuite(t *testing.T, spec string, fixed bool) string {
	t.Helper()
	hostileAssert := fmt.Sprintf("called: %q", pagesHostile)
	if fixed {
		hostileAssert = "called: read_file"
	}
	s := fmt.Sprintf(`name: pages
scenarios:
  - name: reads
    agent: %s
    assert:
      - status: done
      - called: read_file
  - name: %q
    agent: %s
    assert:
      - %s
`, spec, "x "+pagesHostile, spec, hostileAssert)
	p := filepath.Join(t.TempDir(), "pages.yaml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEvalsPages runs a real suite twice (main, where one scenario fails;
// then a branch against main's report as its baseline, where it passes)
// and reads the evals pages: the suites, the reports by time and branch
// with pass rate, cost and tokens as agentctl query has them, the baseline
// verdicts, a scenario's history with links to its sessions; the hostile
// scenario name and failure stay text.
func TestEvalsPages(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	spec := scriptedSpec(t, "look-readme", turnsReadme)
	if r := testcli.Run(t, home, "eval", evalSuite(t, spec, false), "--branch", "main", "--commit", "aaaa1111", "-q"); r.Code != 6 {
		t.Fatalf("eval on main: exit %d, want 6\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := testcli.Run(t, home, "eval", evalSuite(t, spec, true), "--branch", "feature", "--commit", "bbbb2222", "--baseline", "history:main", "-q"); r.Code != 0 {
		t.Fatalf("eval on feature: exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	s := serve(t, home)

	// The export writes the suite's page and links the index to it.
	dir := filepath.Join(t.TempDir(), "export")
	testcli.Must(t, home, "ui", "--export", dir)
	if _, err := os.Stat(filepath.Join(dir, "evals-pages.html")); err != nil {
		t.Errorf("ui --export wrote no page for suite pages: %v", err)
	}
	ex := b.Open(t, "file://"+filepath.Join(dir, "evals.html"), "body[data-painted]")
	ex.Click(`tr[data-suite="pages"] a`)
	ex.WaitFor("#reports")
	ex.Clean(func(u string) bool { return strings.HasPrefix(u, "file://"+dir+"/") })

	idx := s.open(t, b, "/evals", nil)
	if got := idx.Text(`tr[data-suite="pages"]`); !strings.Contains(got, "feature, main") {
		t.Errorf("suites row %q, want both branches", got)
	}
	idx.Click(`tr[data-suite="pages"] a`)
	idx.WaitFor("#reports")
	idx.Clean(s.ownOnly)

	tab := s.open(t, b, "/evals/pages", nil)
	type report struct {
		Digest, Branch, Baseline   string
		Runs, RunsOK, Cost, Tokens float64
	}
	var reps []report
	tab.Eval(`Array.from(document.querySelectorAll('#reports tbody tr')).map(r => ({Digest: r.dataset.report, Branch: r.dataset.branch,
		Runs: +r.dataset.runs, RunsOk: +r.dataset.runsOk, Cost: +r.dataset.cost, Tokens: +r.dataset.tokens,
		Baseline: r.querySelector('td.baseline').textContent}))`, &reps)
	want := queryRows(t, home, `SELECT r.report_digest AS d, r.branch, r.runs, r.runs_ok, sum(x.cost_usd) AS cost, sum(x.tokens) AS tokens
		FROM eval_runs r JOIN eval_results x USING (report_digest) WHERE r.suite = 'pages'
		GROUP BY r.report_digest, r.branch, r.runs, r.runs_ok, r.started ORDER BY r.started DESC`)
	if len(reps) != 2 || len(want) != 2 {
		t.Fatalf("reports on the page %+v, agentctl query %v", reps, want)
	}
	// Two reports may start within the same second: match them by digest.
	byBranch := map[string]report{}
	for _, g := range reps {
		byBranch[g.Branch] = g
	}
	for _, w := range want {
		g := byBranch[fmt.Sprint(w["branch"])]
		if g.Digest != w["d"] || g.Runs != f64(t, w["runs"]) || g.RunsOK != f64(t, w["runs_ok"]) ||
			g.Cost != f64(t, w["cost"]) || g.Tokens != f64(t, w["tokens"]) {
			t.Errorf("report of %v: page %+v, agentctl query %v", w["branch"], g, w)
		}
	}
	if b := byBranch["feature"].Baseline; !strings.Contains(b, "0 regressed, 1 improved, 1 unchanged") || !strings.Contains(b, "vs main") {
		t.Errorf("the feature report's baseline verdicts: %q", b)
	}
	if b := byBranch["main"].Baseline; !strings.Contains(b, "no baseline") {
		t.Errorf("main's report ran with no baseline: %q", b)
	}
	if n := tab.Count("#branches tbody tr"); n != 2 {
		t.Errorf("%d branches, want 2", n)
	}
	for _, c := range []string{"#chart-pass-rate", "#chart-cost", "#chart-tokens"} {
		if n := tab.Count(c + " g.bar"); n != 2 {
			t.Errorf("chart %s has %d bars, want 2 (one a report)", c, n)
		}
	}
	assertPageInert(t, tab, true)
	tab.Screenshot(shots, "evals")
	tab.Clean(s.ownOnly)

	// A scenario's history: one row a report, the verdict of the run with
	// a baseline, and the session each result ran.
	sc := s.open(t, b, "/evals/pages", url.Values{"scenario": {"x " + pagesHostile}})
	var hist []struct{ Branch, Passed, Verdict, Session string }
	sc.Eval(`Array.from(document.querySelectorAll('#scenario-history tbody tr')).map(r => ({Branch: r.dataset.branch, Passed: r.dataset.passed, Verdict: r.dataset.verdict, Session: r.dataset.session}))`, &hist)
	got := map[string]string{}
	for _, h := range hist {
		got[h.Branch] = h.Passed + "/" + h.Verdict
	}
	if len(hist) != 2 || got["feature"] != "true/improved" || got["main"] != "false/" {
		t.Fatalf("scenario history %+v, want feature passed/improved and main failed with no verdict", hist)
	}
	for _, h := range hist {
		if n := sc.Count(`#scenario-history a[href="/sessions/` + h.Session + `"]`); h.Session == "" || n != 1 {
			t.Errorf("no link to the session %q of a result", h.Session)
		}
		if _, err := os.Stat(filepath.Join(home, "sessions", h.Session)); err != nil {
			t.Errorf("the linked session is not in the home: %v", err)
		}
	}
	assertPageInert(t, sc, true)
	sc.Screenshot(shots, "evals-scenario")
	// The two runs of the scenario (its assertion differs, its agent's
	// turns do not) open side by side.
	sc.Click("#compare-runs")
	sc.WaitFor("#verdict")
	if got := sc.Text("#verdict"); !strings.Contains(got, "No difference") {
		t.Errorf("comparing the scenario's two runs: %q", got)
	}
	sc.Clean(s.ownOnly)

	if code, _ := s.get(t, "/evals/nosuch", nil); code != 404 {
		t.Errorf("an unknown suite answers %d, want 404", code)
	}
}
