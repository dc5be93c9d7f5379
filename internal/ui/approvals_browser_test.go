package ui_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// migration is the fixture whose runs stop on approvals: write_file under
// migrations/, then bash.
var migration = filepath.Join("..", "..", "fixtures", "agents", "run-migration.yaml")

// TestApprovalsPageResumesAsTheCLI stops two runs on the same approval,
// approves one with `agentctl approve` and the other with a click in the
// page, resumes both, and finds the same events in both logs: kinds and
// the recorded fields, ids and times aside.
func TestApprovalsPageResumesAsTheCLI(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	const viaCLI, viaPage = "a9900000000000c1", "a9900000000000b1"
	for _, id := range []string{viaCLI, viaPage} {
		if r := testcli.Run(t, home, "run", migration, "-q", "--session-id", id); r.Code != 3 {
			t.Fatalf("run %s: exit %d, want 3 (awaiting approval): %s", id, r.Code, r.Stderr)
		}
	}
	testcli.Must(t, home, "approve", viaCLI)

	s := serve(t, home)
	tab := s.open(t, b, "/approvals", nil)
	row := `section.approval[data-session="` + viaPage + `"][data-call="call_2_0"]`
	if tab.Count(row) != 1 {
		t.Fatalf("the page does not list %s's waiting call; it shows: %s", viaPage, tab.Text("main"))
	}
	if n := tab.Count(`section.approval[data-session="` + viaCLI + `"]`); n != 0 {
		t.Errorf("the call approved by the CLI is still listed (%d)", n)
	}
	// A write under migrations/ shows the file it would make, as a diff.
	if d := tab.Text(row + " pre.diff"); !strings.Contains(d, "+CREATE INDEX users_email ON users(email);") {
		t.Errorf("no diff for the write: %q", d)
	}
	tab.Screenshot(shots, "approvals")
	tab.Click(row + ` button[data-action="approve-once"]`)
	tab.WaitFor("#decided")
	if !strings.Contains(tab.Text("#cmd-resume"), "agentctl resume "+viaPage) {
		t.Errorf("after the click the page says %q", tab.Text("main"))
	}
	tab.Clean(s.ownOnly)

	for _, id := range []string{viaCLI, viaPage} {
		if r := testcli.Run(t, home, "resume", id, "-q"); r.Code != 3 {
			t.Fatalf("resume %s: exit %d, want 3 (the bash call waits next): %s", id, r.Code, r.Stderr)
		}
	}
	a, b2 := comparable(t, home, viaCLI), comparable(t, home, viaPage)
	if len(a) != len(b2) {
		t.Fatalf("the CLI's session has %d events, the page's %d", len(a), len(b2))
	}
	for i := range a {
		if a[i] != b2[i] {
			t.Errorf("event %d differs:\n cli:  %s\n page: %s", i+1, a[i], b2[i])
		}
	}
}

// comparable is a session's events as JSON without what differs between
// two runs of one spec: ids, times, durations, the workspace path.
func comparable(t *testing.T, home, id string) []string {
	t.Helper()
	evs, _, err := recorder.Store{Root: home}.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		b, _ := session.Encode(e)
		var m map[string]any
		json.Unmarshal(b, &m)
		for _, k := range []string{"ts", "session_id", "latency_ms", "workspace", "duration_ms"} {
			delete(m, k)
		}
		c, _ := json.Marshal(m)
		out = append(out, strings.ReplaceAll(string(c), id, "ID"))
	}
	return out
}

// TestApprovalsPageXSS: a waiting call whose arguments carry the corpus
// is shown inert.
func TestApprovalsPageXSS(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	args, _ := json.Marshal(map[string]string{"command": hostile("cmd")})
	edit, _ := json.Marshal(map[string]string{"path": hostile("path"), "old": hostile("old"), "new": hostile("new")})
	evs := []session.Event{
		{Kind: session.KindSessionStarted, SessionID: "a9900000000000ba", Name: hostile("name"), Provider: "scripted", Model: hostile("model")},
		{Kind: session.KindUserMessage, Text: hostile("user")},
		{Kind: session.KindAssistantMessage, Text: hostile("text"), ToolCalls: []session.ToolCall{{ID: "call_1_0", Name: "bash", Args: args}, {ID: "call_1_1", Name: "edit_file", Args: edit}}},
		{Kind: session.KindModelCall, Provider: "scripted", Model: hostile("model"), InputTokens: 10, OutputTokens: 5},
		{Kind: session.KindApprovalRequest, CallID: "call_1_0", Tool: "bash", Args: args, Reason: "rule bash"},
		{Kind: session.KindApprovalRequest, CallID: "call_1_1", Tool: "edit_file", Args: edit, Reason: "rule edit_file"},
		{Kind: session.KindSessionFinished, Status: string(session.StatusAwaitingApproval), Reason: hostile("reason")},
	}
	if _, err := (recorder.Store{Root: home}).WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	s := serve(t, home)
	tab := s.open(t, b, "/approvals", nil)
	if tab.Count(`section.approval[data-session="a9900000000000ba"]`) != 2 {
		t.Fatalf("the crafted waiting call is not listed: %s", tab.Text("main"))
	}
	assertInert(t, tab)
	if !strings.Contains(tab.Text("pre.command"), `<img src=x onerror="window.__pwned=2">`) {
		t.Errorf("the command is not shown as text: %q", tab.Text("pre.command"))
	}
	if !strings.Contains(tab.Text("pre.diff"), `-old <script>window.__pwned=1;`) {
		t.Errorf("the edit's diff is not shown as text: %q", tab.Text("pre.diff"))
	}
	tab.Clean(s.ownOnly)
}
