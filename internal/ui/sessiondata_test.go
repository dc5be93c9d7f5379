package ui_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/redteam"
)

// hostile is the red-team corpus after prefix, as one recorded text.
func hostile(prefix string) string { return redteam.Text(prefix) }

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
