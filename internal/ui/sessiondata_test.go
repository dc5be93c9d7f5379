package ui_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// xss are the red-team strings of internal/view's tests: markup, a
// handler, a script end, terminal control and a bidi override. A page
// that runs any of them sets window.__pwned or grows an <img>.
var xss = []string{
	`<script>window.__pwned=1;document.title="pwned"</script>`,
	`<img src=x onerror="window.__pwned=2">`,
	`"><svg onload="window.__pwned=3">`,
	`</pre></div></td></tr></table><img src=x onerror=window.__pwned=4>`,
	"javascript:window.__pwned=5",
	"\x1b[31mred\x1b[0m \u202eevil",
}

// hostile joins the corpus into one string.
func hostile(prefix string) string {
	s := prefix
	for _, x := range xss {
		s += " " + x
	}
	return s
}

// crafted writes a session of turns turns (model call, assistant message
// with one tool call, intent, result: 4 events a turn) with the corpus in
// its user text, tool args and output, model name, session name and tags
// when bad is set. It returns the session id.
func crafted(t testing.TB, home, id string, turns int, bad bool) string {
	t.Helper()
	name, model, text, out := "crafted", "claude-sonnet-4-5", "Read a.txt again and again.", "alpha\nbeta"
	attrs := json.RawMessage(`{"source":"run","tags":{"team":"infra"}}`)
	if bad {
		name, model, text, out = hostile("name"), hostile("model"), hostile("user"), hostile("output")
		b, _ := json.Marshal(map[string]any{"source": "run", "tags": map[string]string{hostile("k"): hostile("v")}})
		attrs = b
	}
	evs := make([]session.Event, 0, 2+4*turns)
	evs = append(evs, session.Event{Kind: session.KindSessionStarted, SessionID: id, Name: name, Provider: "scripted", Model: model, Attrs: attrs},
		session.Event{Kind: session.KindUserMessage, Text: text})
	for i := range turns {
		callID := fmt.Sprintf("call_%d_0", i+1)
		args, _ := json.Marshal(map[string]string{"path": "a.txt"})
		if bad {
			args, _ = json.Marshal(map[string]string{"path": hostile("args")})
		}
		evs = append(evs,
			session.Event{Kind: session.KindAssistantMessage, Text: fmt.Sprintf("Step %d: reading a.txt.", i), ToolCalls: []session.ToolCall{{ID: callID, Name: "read_file", Args: args}}},
			session.Event{Kind: session.KindModelCall, Provider: "scripted", Model: model, InputTokens: 1000 + int64(i), OutputTokens: 50, CostUSD: 0.001, LatencyMS: 120},
			session.Event{Kind: session.KindToolIntent, CallID: callID, Tool: "read_file", Args: args},
			session.Event{Kind: session.KindToolResult, CallID: callID, Tool: "read_file", Status: session.ResultOK, Output: out},
		)
	}
	evs = append(evs, session.Event{Kind: session.KindSessionFinished, Status: string(session.StatusDone)})
	if _, err := (recorder.Store{Root: home}).WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	return id
}
