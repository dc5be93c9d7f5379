package session

import (
	"encoding/json"
	"fmt"
)

// Side threads: the one rule that tells a client's side conversation (its
// title or quota call, a summariser) from the agent's own conversation on
// the same session, for the proxy's grouping (internal/proxy) and the
// OTLP mapping (internal/otelsession) alike.
//
// A session is one linear conversation: its projection, replay verify
// and diagnose read its events as one history. A client that makes other
// calls on the same session (opencode asks for a title with its own
// system prompt, no tools and a message of its own; Claude Code checks
// its quota with a one-word haiku call) would break that history, and
// used to be recorded as a compaction of it ("the goal may be lost"). So
// a request that shares nothing with the session's conversation is
// recorded as a side thread: a session of its own (SideThreadID), whose
// header names the session it belongs to (ParentSessionID and attrs
// side_thread_of, side_thread), as a subagent's names its parent. Each
// thread stays a linear conversation that verify, diagnose and replay
// read as they read any session, and a replay serves each thread from
// its own recording, whatever order the calls interleave in.

// Thread is one conversation of a session as the rule sees it: what its
// last request asked (system text, tool names) and its history (that
// request's messages and the answer).
type Thread struct {
	System  string
	Tools   []string
	History []Message
}

// Request is a model call's request as the rule sees it.
type Request struct {
	System   string
	Tools    []string
	Messages []Message
	// Compacted is the client's own word that this request is a compacted
	// view of the session's conversation (OpenTelemetry's
	// gen_ai.conversation.compacted): a summariser's request may share
	// nothing with the history it replaces, and is still that history.
	Compacted bool
}

// NewSideThread is what Route returns for a request that starts a new side
// thread.
const NewSideThread = -1

// Route picks the thread of a session a request belongs to. threads[0] is
// the session's conversation (the first thread it recorded), the others
// its side threads in the order they started. It returns:
//
//   - the thread whose history the request's messages extend (Extends),
//     the session's conversation first: the request continues it;
//   - else 0 when the client marks the request compacted, or when it
//     shares the system text, a tool or its first message with the
//     session's conversation: the agent rewrote its own history (a
//     compaction);
//   - else NewSideThread: the request shares neither the system text, nor
//     the tools, nor a message prefix with the session's conversation.
//
// A side thread is continued only by a request that extends it: a second
// title call is a side thread of its own, never a compaction of the first.
func Route(threads []Thread, req Request) int {
	if len(threads) == 0 || len(threads[0].History) == 0 {
		return 0
	}
	if Extends(threads[0].History, req.Messages) {
		return 0
	}
	best, bestLen := NewSideThread, 0
	for i, t := range threads[1:] {
		if len(t.History) > bestLen && Extends(t.History, req.Messages) {
			best, bestLen = i+1, len(t.History)
		}
	}
	if best != NewSideThread {
		return best
	}
	if req.Compacted || Shares(threads[0], req) {
		return 0
	}
	return NewSideThread
}

// Shares reports whether req has something of t's conversation: the same
// (non-empty) system text, a tool name t offered, or the same first
// message (leading system messages aside: some wire formats carry the
// system text as messages).
func Shares(t Thread, req Request) bool {
	if t.System != "" && t.System == req.System {
		return true
	}
	offered := make(map[string]bool, len(t.Tools))
	for _, n := range t.Tools {
		offered[n] = true
	}
	for _, n := range req.Tools {
		if offered[n] {
			return true
		}
	}
	a, b := skipSystem(t.History), skipSystem(req.Messages)
	return len(a) > 0 && len(b) > 0 && SameMessage(a[0], b[0])
}

func skipSystem(msgs []Message) []Message {
	for len(msgs) > 0 && msgs[0].Role == RoleSystem {
		msgs = msgs[1:]
	}
	return msgs
}

// SideThreadID is the id of the n-th side thread (from 1) of session id:
// derived, so that a replay, show and a collector that read the session
// again find its side threads without an index.
func SideThreadID(id string, n int) string { return fmt.Sprintf("%s-side%d", id, n) }

// SideThreadHeader lays the marks of the n-th side thread of session
// parent into the header h of its session.
func SideThreadHeader(h Event, parent string, n int) Event {
	h.ParentSessionID, h.ForkedFrom, h.ParentSeq = parent, 0, 0
	a := map[string]any{}
	if len(h.Attrs) > 0 {
		_ = json.Unmarshal(h.Attrs, &a)
	}
	a["side_thread_of"], a["side_thread"] = parent, n
	h.Attrs, _ = json.Marshal(a)
	return h
}

// SideThreadOf returns the session a header says it is a side thread of
// and which one (from 1), or "" and 0.
func SideThreadOf(h Event) (parent string, n int) {
	if h.Kind != KindSessionStarted || len(h.Attrs) == 0 {
		return "", 0
	}
	var a struct {
		Of string `json:"side_thread_of"`
		N  int    `json:"side_thread"`
	}
	if json.Unmarshal(h.Attrs, &a) != nil || a.Of == "" || a.Of != h.ParentSessionID || a.N < 1 {
		return "", 0
	}
	return a.Of, a.N
}
