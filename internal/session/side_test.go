package session

import "testing"

// TestRoute is the side-thread rule on the shapes real clients send:
// opencode's title call (own system prompt, no tools, its own first
// message), Claude Code's quota check (a one-word haiku call), a
// summariser; and the compactions that must stay compactions (sharing
// the system text, a tool or the pinned first message).
func TestRoute(t *testing.T) {
	user := func(s string) Message { return Message{Role: RoleUser, Content: s} }
	asst := func(s string) Message { return Message{Role: RoleAssistant, Content: s} }
	agent := Thread{System: "You are opencode, an interactive CLI tool.", Tools: []string{"bash", "read", "edit"},
		History: []Message{user(`"Say hello"`), asst("Hello there.")}}
	title := Thread{System: "You are a title generator.", History: []Message{user("Generate a title for this conversation:\n"), user(`"Say hello"`), asst("Greeting Test")}}
	for _, tc := range []struct {
		name    string
		threads []Thread
		req     Request
		want    int
	}{
		{"first call", nil, Request{System: "x", Messages: []Message{user("hi")}}, 0},
		{"the agent goes on", []Thread{agent}, Request{System: agent.System, Tools: agent.Tools, Messages: append(append([]Message{}, agent.History...), user("Now say goodbye"))}, 0},
		{"opencode's title call", []Thread{agent}, Request{System: "You are a title generator.", Messages: []Message{user("Generate a title for this conversation:\n"), user(`"Say hello"`)}}, NewSideThread},
		{"Claude Code's quota check", []Thread{agent}, Request{Messages: []Message{user("quota")}}, NewSideThread},
		{"a second title call is a new side thread", []Thread{agent, title}, Request{System: "You are a title generator.", Messages: []Message{user("Generate a title for this conversation:\n"), user(`"Other"`)}}, NewSideThread},
		{"a side thread goes on", []Thread{agent, title}, Request{System: "You are a title generator.", Messages: append(append([]Message{}, title.History...), user("shorter"))}, 1},
		{"the agent after the side thread", []Thread{agent, title}, Request{System: agent.System, Tools: agent.Tools, Messages: append(append([]Message{}, agent.History...), user("more"))}, 0},
		{"compaction: same system text", []Thread{agent}, Request{System: agent.System, Messages: []Message{user("Summary: said hello.")}}, 0},
		{"compaction: a shared tool", []Thread{agent}, Request{System: "You summarise.", Tools: []string{"read"}, Messages: []Message{user("Summary: said hello.")}}, 0},
		{"compaction: the first message pinned", []Thread{agent}, Request{System: "You summarise.", Messages: []Message{user(`"Say hello"`), user("Summary: said hello.")}}, 0},
		{"compaction: the first message pinned after system messages", []Thread{agent}, Request{Messages: []Message{{Role: RoleSystem, Content: "Session so far: hello"}, user(`"Say hello"`)}}, 0},
		{"compaction: the client says so, sharing nothing", []Thread{agent}, Request{System: "You summarise.", Messages: []Message{user("Summary: said hello.")}, Compacted: true}, 0},
		{"empty system texts are not shared", []Thread{{History: []Message{user("a"), asst("b")}}}, Request{Messages: []Message{user("c")}}, NewSideThread},
	} {
		if got := Route(tc.threads, tc.req); got != tc.want {
			t.Errorf("%s: Route = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSideThreadHeader(t *testing.T) {
	h := SideThreadHeader(Event{Kind: KindSessionStarted, ParentSessionID: "orig", ForkedFrom: 9, Attrs: []byte(`{"replay_of":"orig"}`)}, "s1", 2)
	if of, n := SideThreadOf(h); of != "s1" || n != 2 || h.ForkedFrom != 0 {
		t.Fatalf("SideThreadOf = %q %d (forked_from %d), want s1 2 0", of, n, h.ForkedFrom)
	}
	// A header whose parent is not the one its attrs name is no side thread.
	h.ParentSessionID = "other"
	if of, _ := SideThreadOf(h); of != "" {
		t.Fatalf("SideThreadOf of a mismatched header = %q, want none", of)
	}
}
