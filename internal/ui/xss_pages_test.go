package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/redteam"
)

// pagesHostile is the red-team corpus (package redteam): recorded text that
// would run if a page wrote it as HTML.
var pagesHostile = redteam.Text("")

// pagesHostileID is the session writeHostile records.
const pagesHostileID = "bad0000000000001"

// writeHostile records a finished session whose every recorded string a
// page may show (session name, model, user text, tool args, tool output,
// tags) is the hostile markup, with tokens and cost so the cost page
// counts it.
func writeHostile(t *testing.T, home string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"path": pagesHostile})
	tags, _ := json.Marshal(map[string]any{"tags": map[string]string{"team": pagesHostile}, "user": pagesHostile})
	evs := []session.Event{
		{Kind: session.KindSessionStarted, SessionID: pagesHostileID, Name: pagesHostile, Provider: "scripted", Model: pagesHostile, Attrs: tags},
		{Kind: session.KindUserMessage, Text: pagesHostile},
		{Kind: session.KindAssistantMessage, Text: pagesHostile, ToolCalls: []session.ToolCall{{ID: "c1", Name: "read_file", Args: args}}},
		{Kind: session.KindModelCall, Provider: "scripted", Model: pagesHostile, InputTokens: 1000, OutputTokens: 200, CostUSD: 0.5},
		{Kind: session.KindToolIntent, CallID: "c1", Tool: "read_file", Args: args},
		{Kind: session.KindToolResult, CallID: "c1", Tool: "read_file", Status: "ok", Output: pagesHostile},
		{Kind: session.KindAssistantMessage, Text: pagesHostile},
		{Kind: session.KindModelCall, Provider: "scripted", Model: pagesHostile, InputTokens: 500, OutputTokens: 50, CostUSD: 0.25},
		{Kind: session.KindSessionFinished, Status: "done"},
	}
	if _, err := (recorder.Store{Root: home}).WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	return pagesHostileID
}

// assertPageInert fails when the hostile markup ran or became an element in
// the tab, or when it is not on the page as text (a page that dropped it
// would pass the first checks for nothing).
func assertPageInert(t *testing.T, tab *browser.Tab, wantText bool) {
	t.Helper()
	var got struct {
		Pwned, Title  string
		Imgs, Scripts int
		Shown         bool
	}
	tab.Eval(`({Pwned: String(window.__pwned), Title: document.title,
		Imgs: document.querySelectorAll('img[onerror], img[src="x"]').length,
		Scripts: Array.from(document.scripts).filter(s => !s.src).length,
		Shown: document.body.textContent.includes('<script>window.__pwned=1')})`, &got)
	if got.Pwned != "undefined" || got.Title == "pwned" {
		t.Errorf("the recorded markup ran: window.__pwned=%s, title %q", got.Pwned, got.Title)
	}
	if got.Imgs != 0 || got.Scripts != 0 {
		t.Errorf("the recorded markup made elements: %d <img>, %d inline <script>", got.Imgs, got.Scripts)
	}
	if wantText && !got.Shown {
		t.Errorf("the hostile string is not shown as text on the page")
	}
}

// get fetches an app path as a script does (the bearer token) and returns
// the status and body.
func (s *served) get(t *testing.T, path string, q url.Values) (int, string) {
	t.Helper()
	u := s.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
