package ui

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestSessionPageStatic renders the session page as the export does: the
// figures and the diagnosis are in the page, nothing asks the server, and
// links go through the export's link map.
func TestSessionPageStatic(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	evs := []session.Event{
		{Kind: session.KindSessionStarted, SessionID: "57a7000000000001", Name: "static", Provider: "scripted", Model: "m"},
		{Kind: session.KindUserMessage, Text: "hello"},
		{Kind: session.KindAssistantMessage, Text: "hi"},
		{Kind: session.KindModelCall, Provider: "scripted", Model: "m", InputTokens: 12, OutputTokens: 3},
		{Kind: session.KindSessionFinished, Status: string(session.StatusDone)},
	}
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := httptest.NewRequest("GET", "/sessions/57a7000000000001", nil)
	req.SetPathValue("id", "57a7000000000001")
	w := httptest.NewRecorder()
	c := &Ctx{W: w, R: req, S: s, Static: true, link: func(p string, q url.Values) string {
		return "x" + strings.ReplaceAll(p, "/", "-") + ".html"
	}}
	if err := sessionPage(c); err != nil {
		t.Fatal(err)
	}
	body := w.Body.String()
	for _, want := range []string{`<span id="fig-in">12</span>`, `id="event-count">5</span>`, `status-done`, `data-kind="exit"`, "replay fork 57a7000000000001 --from 4"} {
		if !strings.Contains(body, want) {
			t.Errorf("the exported page lacks %q", want)
		}
	}
	for _, bad := range []string{"data-src=", "data-events=", "/api/", "…"} {
		if strings.Contains(body, bad) {
			t.Errorf("the exported page has %q: it would ask a server", bad)
		}
	}
}
