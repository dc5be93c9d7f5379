package replaymatch

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

func loadEvents(t testing.TB, name string) []session.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "fixtures", "sessions", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []session.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		e, err := session.Decode(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs
}

// TestRecordingTurns: the expected request of each turn is the session's
// conversation up to that turn's answer, as package session projects it,
// with the header's system text and tools.
func TestRecordingTurns(t *testing.T) {
	evs := loadEvents(t, "5e55100000000001-done.jsonl")
	rec := NewRecording(evs)
	if rec.Turns() != 2 || !rec.Captured() {
		t.Fatalf("Turns = %d, Captured = %t; want 2, true", rec.Turns(), rec.Captured())
	}
	// Out of order too: the cursors fold again or go on.
	for _, n := range []int{2, 1, 2} {
		want := session.Project(evs[:map[int]int{1: 2, 2: 6}[n]], "")
		got := rec.Expected(n)
		if got.System != "You are a careful coding agent." || len(got.Messages) != len(want) {
			t.Fatalf("turn %d: %+v, want system and %d messages", n, got, len(want))
		}
		for i := range want {
			if !session.SameMessage(got.Messages[i], want[i]) {
				t.Errorf("turn %d message %d = %+v, want %+v", n, i+1, got.Messages[i], want[i])
			}
		}
	}
	turn2 := rec.Expected(2)
	if d, _ := Compare(turn2, turn2, Options{}); d != nil {
		t.Errorf("a turn against itself: %s", d)
	}
	changed := turn2
	changed.Messages = append([]session.Message(nil), turn2.Messages...)
	changed.Messages[2].Content = "We receive mail."
	d, _ := Compare(turn2, changed, Options{})
	if d == nil || d.Message != 3 || d.Role != session.RoleTool || d.Field != "content" || !strings.Contains(d.Recorded, "recieve") || !strings.Contains(d.Replayed, "receive") {
		t.Errorf("a changed tool result: %v, want message 3 (tool content) with both texts", d)
	}
}

// TestCompareFields: each part of a request is compared, and the
// difference names it.
func TestCompareFields(t *testing.T) {
	call := func(args string) session.Message {
		return session.Message{Role: session.RoleAssistant, ToolCalls: []session.ToolCall{{ID: "toolu_1", Name: "Edit", Args: json.RawMessage(args)}}}
	}
	base := Request{Model: "claude-sonnet-4-20250514", System: "Be brief.", Tools: []string{"Read", "Edit"},
		Messages: []session.Message{{Role: session.RoleUser, Content: "Fix it."}, call(`{"file_path":"a.md","old_string":"x","new_string":"y"}`)}}
	with := func(f func(r *Request)) Request {
		r := base
		r.Tools = append([]string(nil), base.Tools...)
		r.Messages = append([]session.Message(nil), base.Messages...)
		f(&r)
		return r
	}
	tests := []struct {
		name   string
		got    Request
		strict bool
		field  string // "" for a match
		count  string
	}{
		{"same", base, false, "", ""},
		{"model asked without its date", with(func(r *Request) { r.Model = "claude-sonnet-4" }), false, "", ""},
		{"another model", with(func(r *Request) { r.Model = "claude-sonnet-4-5" }), false, "model", ""},
		{"an alias the user ignores", with(func(r *Request) { r.Model = "claude-sonnet-latest" }), false, "", `ignore:claude-sonnet-\S+`},
		{"another tool list", with(func(r *Request) { r.Tools = []string{"Read"} }), false, "tools", ""},
		{"other system text", with(func(r *Request) { r.System = "Be thorough." }), false, "system", ""},
		{"a message more", with(func(r *Request) {
			r.Messages = append(r.Messages, session.Message{Role: session.RoleUser, Content: "And?"})
		}), false, "messages", ""},
		{"a message less", with(func(r *Request) { r.Messages = r.Messages[:1] }), false, "messages", ""},
		{"another role", with(func(r *Request) { r.Messages[0].Role = session.RoleSystem }), false, "role", ""},
		{"args in another order", with(func(r *Request) { r.Messages[1] = call(`{"new_string":"y","old_string":"x","file_path":"a.md"}`) }), true, "", ""},
		{"args with a default", with(func(r *Request) {
			r.Messages[1] = call(`{"file_path":"a.md","old_string":"x","new_string":"y","replace_all":false}`)
		}), false, "", DefaultArgs},
		{"args with a default, strict", with(func(r *Request) {
			r.Messages[1] = call(`{"file_path":"a.md","old_string":"x","new_string":"y","replace_all":false}`)
		}), true, "tool_calls", ""},
		{"args with a real value more", with(func(r *Request) {
			r.Messages[1] = call(`{"file_path":"a.md","old_string":"x","new_string":"y","replace_all":true}`)
		}), false, "tool_calls", ""},
		{"other args", with(func(r *Request) { r.Messages[1] = call(`{"file_path":"b.md","old_string":"x","new_string":"y"}`) }), false, "tool_calls", ""},
		{"another call id", with(func(r *Request) {
			m := call(`{"file_path":"a.md","old_string":"x","new_string":"y"}`)
			m.ToolCalls[0].ID = "toolu_2"
			r.Messages[1] = m
		}), false, "tool_calls", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ig, _ := Ignore(`claude-sonnet-\S+`)
			opts := Options{Strict: tt.strict}
			if strings.HasPrefix(tt.count, "ignore:") {
				opts.Ignore = []Normaliser{ig}
			}
			d, counts := Compare(base, tt.got, opts)
			switch {
			case tt.field == "" && d != nil:
				t.Errorf("Compare = %s, want a match", d)
			case tt.field != "" && (d == nil || d.Field != tt.field):
				t.Errorf("Compare = %v, want a difference in %s", d, tt.field)
			case tt.count != "" && counts[tt.count] == 0:
				t.Errorf("counts = %v, want %s counted", counts, tt.count)
			}
		})
	}
}

// TestNoContent: a session collected with content capture off compares
// its turn count, tools and model, says so, and --strict refuses it.
func TestNoContent(t *testing.T) {
	evs := loadEvents(t, "5e55100000000001-done.jsonl")
	evs[0].Attrs = json.RawMessage(`{"content_captured":false,"tools":["read_file"]}`)
	rec := NewRecording(evs)
	if rec.Captured() {
		t.Fatal("Captured = true")
	}
	if _, err := NewMatcher(rec, Options{Strict: true}); !errors.Is(err, ErrNoContent) || !strings.Contains(err.Error(), "without --strict") {
		t.Errorf("strict: err = %v, want ErrNoContent with a hint", err)
	}
	m, err := NewMatcher(rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Model: "scripted-1", Tools: []string{"read_file"}, Messages: []session.Message{{Role: session.RoleUser, Content: "whatever"}}}
	if d := m.Check(1, req); d != nil {
		t.Errorf("content not recorded: %s, want a match", d)
	}
	req.Tools = []string{"bash"}
	if d := m.Check(1, req); d == nil || d.Field != "tools" || d.Turn != 1 {
		t.Errorf("another tool: %v, want the tools named at turn 1", d)
	}
}

// TestExcerpts: a difference shows both texts around the first differing
// character, cut with "…", on a rune boundary.
func TestExcerpts(t *testing.T) {
	long := strings.Repeat("é", 100) + " Where is my order A-1042? " + strings.Repeat("ü", 100)
	d, _ := Compare(user(long), user(strings.Replace(long, "A-1042", "A-1043", 1)), Options{})
	if d == nil {
		t.Fatal("no difference")
	}
	for _, s := range []string{d.Recorded, d.Replayed} {
		if !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") || !strings.Contains(s, "order A-104") || strings.ContainsRune(s, '\uFFFD') {
			t.Errorf("excerpt %s: want a cut window around the order id", s)
		}
	}
	if want := `turn 0, message 1 (user content): log has `; !strings.HasPrefix(d.String(), want) {
		t.Errorf("String = %s, want it to start %s", d, want)
	}
}

// TestMatcherConcurrent: conversations replayed at once ask the one
// Matcher for their turns in parallel (the proxy serves them so); each
// gets its own turn's answer and the tally adds up. Run with -race.
func TestMatcherConcurrent(t *testing.T) {
	evs, reqs := benchSession(40)
	m, err := NewMatcher(NewRecording(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const convs = 6
	errs := make(chan error, convs)
	for c := 0; c < convs; c++ {
		go func() {
			for n := 1; n <= len(reqs); n++ {
				if d := m.Check(n, reqs[n-1]); d != nil {
					errs <- errors.New(d.String())
					return
				}
			}
			errs <- nil
		}()
	}
	for c := 0; c < convs; c++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var date, dur int
	for _, ch := range m.Changes() {
		if want := len(reqs); ch.Name == "date-time" && (len(ch.Turns) != want || ch.Turns[0] != 1 || ch.Turns[want-1] != want) {
			t.Errorf("date-time turns %v, want 1..%d once each", ch.Turns, want)
		}
		switch ch.Name {
		case "date-time":
			date = ch.Count
		case "duration":
			dur = ch.Count
		}
	}
	// The system text's date at every turn; turn n has n-1 tool results.
	if date != convs*len(reqs) || dur != convs*len(reqs)*(len(reqs)-1)/2 {
		t.Errorf("date-time %d, duration %d; want %d and %d", date, dur, convs*len(reqs), convs*len(reqs)*(len(reqs)-1)/2)
	}
}
