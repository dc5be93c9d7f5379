package proxy

import (
	"errors"
	"fmt"
	"os"

	"encoding/json"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Side threads in a replay. A recorded session's side threads (its
// client's title or quota calls, session.Route) are sessions of their
// own; ReplayConfig.Sides holds them, and each is served by a Replay of
// its own, as the session is. Which recorded thread serves a thread of
// the replaying program is decided at that thread's first call, by the
// rule that split them when they were recorded: the first recorded
// thread not yet taken whose first request shares the system text, a
// tool or the first message with the call (session.Shares), else the
// first not taken. So the main thread gets its own answers and the side
// call its own whatever order they come in (opencode sends its title
// request before, or after, or while the agent's first turn runs), and a
// program that changed still diverges, naming the thread's turn.

// maxSideThreads bounds how many side threads of one session a replay
// reads.
const maxSideThreads = 1000

// SideThreads reads the recorded side threads of session id from st, as
// ReplayConfigs (events and artifacts; the rest is the session's). A
// session named as a side thread whose header does not say it is that
// thread of id (a log from elsewhere) is an error, not served.
func SideThreads(st recorder.Store, id string) ([]ReplayConfig, error) {
	var out []ReplayConfig
	for n := 1; n <= maxSideThreads; n++ {
		sid := session.SideThreadID(id, n)
		if _, err := os.Stat(st.SessionDir(sid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		evs, _, err := st.Load(sid)
		if err != nil {
			return nil, fmt.Errorf("read side thread %d of %s: %w", n, id, err)
		}
		if len(evs) == 0 {
			return nil, fmt.Errorf("read side thread %d of %s: session %s is empty", n, id, sid)
		}
		if of, k := session.SideThreadOf(evs[0]); of != id || k != n {
			return nil, fmt.Errorf("session %s is named as side thread %d of %s, but its header says it is side thread %d of %q: it is not served", sid, n, id, k, of)
		}
		dir := st.SessionDir(sid)
		out = append(out, ReplayConfig{Events: evs, Artifacts: func(rel string) ([]byte, error) { return ReadArtifact(dir, rel) }})
	}
	return out, nil
}

// firstRequest is what the recording's first model call asked: its
// recorded request when the proxy kept it, else the header's system text
// and tools and the messages the events hold before the first
// model_call (a collected or imported session).
func firstRequest(evs []session.Event, turns []recordedTurn) session.Thread {
	if len(turns) > 0 && turns[0].call != nil {
		c := turns[0].call
		return session.Thread{System: c.System, Tools: c.Tools, History: c.Messages}
	}
	var t session.Thread
	for _, e := range evs {
		switch e.Kind {
		case session.KindSessionStarted:
			var a struct {
				Tools []string `json:"tools"`
			}
			_ = json.Unmarshal(e.Attrs, &a)
			t.System, t.Tools = e.System, a.Tools
		case session.KindUserMessage:
			t.History = append(t.History, session.Message{Role: session.RoleUser, Content: e.Text})
		case session.KindAssistantMessage:
			t.History = append(t.History, session.Message{Role: session.RoleAssistant, Content: e.Text, ToolCalls: e.ToolCalls})
		case session.KindToolResult:
			t.History = append(t.History, session.Message{Role: session.RoleTool, Content: e.Output, ToolCallID: e.CallID})
		case session.KindModelCall:
			return t
		}
	}
	return t
}

// threadOf returns the recorded thread that serves c's thread (r itself
// or one of r.sides), nil when every recorded thread is taken by another
// thread of the same replaying session.
func (r *Replay) threadOf(c *Call) *Replay {
	root := c.ThreadOf
	if root == "" {
		root = c.SessionID
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.threads[c.SessionID]; ok {
		return t
	}
	if r.taken[root] == nil {
		r.taken[root] = map[*Replay]bool{}
	}
	taken := r.taken[root]
	all := append([]*Replay{r}, r.sides...)
	req := session.Request{System: c.System, Tools: c.Tools, Messages: c.Messages}
	var pick *Replay
	for _, t := range all {
		if !taken[t] && session.Shares(t.first, req) {
			pick = t
			break
		}
	}
	for _, t := range all {
		if pick == nil && !taken[t] {
			pick = t
		}
	}
	if pick != nil {
		taken[pick] = true
	}
	r.threads[c.SessionID] = pick
	return pick
}
