package ui_test

import (
	"testing"

	"github.com/agentctl/agentctl/internal/testenv/browser"
)

// TestRunsPageInChromium loads the runs page as a user opens the printed
// URL and finds the recorded run in it, with no console error, CSP
// violation or request outside the server.
func TestRunsPageInChromium(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	id := runDefault(t, home)
	s := serve(t, home)
	tab := s.open(t, b, "/runs", nil)
	if n := tab.Count(`tr[data-session="` + id + `"]`); n != 1 {
		t.Fatalf("runs page has %d rows for %s, want 1", n, id)
	}
	tab.Screenshot(shots, "runs-one")
	tab.Clean(s.ownOrPicker)
}
