package ui_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/ui"
)

// scriptedSpec is testenv.ScriptedSpec.
func scriptedSpec(t *testing.T, name, turns string) string {
	return testenv.ScriptedSpec(t, name, turns)
}

const (
	turnsReadme = `  - text: "Reading."
    tool_calls: [{name: read_file, args: {path: README.md}}]
  - text: "Reading again."
    tool_calls: [{name: read_file, args: {path: README.md}}]
  - text: "Done."
`
	turnsMain = `  - text: "Reading."
    tool_calls: [{name: read_file, args: {path: README.md}}]
  - text: "Reading the code."
    tool_calls: [{name: read_file, args: {path: main.go}}]
  - text: "Done."
`
)

// TestComparePage: two runs of scripted models that part at turn 2 are
// named as differing at turn 2, two runs of one script as the same, and a
// third session is aligned with the first; the hostile session's strings
// stay text.
func TestComparePage(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	a := scriptedSpec(t, "look-readme", turnsReadme)
	m := scriptedSpec(t, "look-main", turnsMain)
	id1 := runDefault(t, home, a)
	id2 := runDefault(t, home, m)
	id3 := runDefault(t, home, a)
	bad := writeHostile(t, home)
	s := serve(t, home)

	tab := s.open(t, b, "/compare", url.Values{"s": {id1, id2, id3}})
	if got := tab.Text("#verdict"); !strings.Contains(got, "first differ at turn 2") {
		t.Errorf("verdict %q, want it to name turn 2", got)
	}
	if n := tab.Count(`tr[data-turn="2"].differ`); n != 1 {
		t.Errorf("turn 2 is not marked as differing (%d rows)", n)
	}
	if n := tab.Count(`tr[data-turn="1"].differ`); n != 0 {
		t.Errorf("turn 1 is marked as differing")
	}
	var firsts []string
	tab.Eval(`Array.from(document.querySelectorAll('td.first-diff')).map(e => e.textContent.trim())`, &firsts)
	if len(firsts) != 3 || !strings.HasPrefix(firsts[1], "turn 2 (") || firsts[2] != "none" {
		t.Errorf("first differences per session %q, want [- turn 2 (...) none]", firsts)
	}
	if n := tab.Count(`#compare-summary a[href="/sessions/` + id2 + `"]`); n != 1 {
		t.Errorf("no link to session %s", id2)
	}
	tab.Screenshot(shots, "compare")
	tab.Clean(s.ownOnly)

	same := s.open(t, b, "/compare", url.Values{"s": {id1 + " " + id3}})
	if got := same.Text("#verdict"); !strings.Contains(got, "No difference") {
		t.Errorf("identical runs: verdict %q, want no difference", got)
	}
	same.Clean(s.ownOnly)

	x := s.open(t, b, "/compare", url.Values{"s": {bad, id1}})
	assertPageInert(t, x, true)
	x.Clean(s.ownOnly)
}

// TestCompareBounds: one session, nine sessions and an unknown one are
// refused with a message saying what to give.
func TestCompareBounds(t *testing.T) {
	home := newHome(t)
	id := writeHostile(t, home)
	s := serve(t, home)
	nine := make([]string, 9)
	for i := range nine {
		nine[i] = id
	}
	for _, tt := range []struct {
		refs []string
		code int
		want string
	}{
		{nine, 400, "compare takes 2 to 8 sessions, got 9"},
		{[]string{id}, 400, "compare takes 2 to 8 sessions, got 1"},
		{[]string{id, "ffff0000ffff0000"}, 404, "ffff0000ffff0000"},
		{[]string{id, id}, 400, "more than the page reads (0 MB): compare it with agentctl replay diff"},
	} {
		if tt.code == 400 && len(tt.refs) == 2 {
			old := ui.SetCompareMaxLog(100)
			defer ui.SetCompareMaxLog(old)
		}
		code, body := s.get(t, "/compare", url.Values{"s": tt.refs})
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%d sessions: %d %s, want %d with %q", len(tt.refs), code, body, tt.code, tt.want)
		}
	}
}
