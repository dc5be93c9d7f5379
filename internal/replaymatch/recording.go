package replaymatch

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// IsTurn reports whether e is a model call a replay serves: every
// model_call but a compaction's (the summary an agentctl run asked for,
// which the program being replayed never sends).
func IsTurn(e session.Event) bool {
	if e.Kind != session.KindModelCall {
		return false
	}
	var a struct {
		Purpose string `json:"purpose"`
	}
	_ = json.Unmarshal(e.Attrs, &a)
	return a.Purpose != "compaction"
}

// Recording is what a session's events hold of the request at each of its
// turns, whatever recorded it (the proxy, collect or import otlp, a
// transcript import, agentctl run): the conversation as package session
// projects it up to the turn's answer, the session's system text, the
// tools its header lists, the model. It folds the events lazily and keeps
// a few cursors, so asking for the turns in order costs one fold. Safe
// for concurrent use.
type Recording struct {
	events   []session.Event
	system   string
	tools    []string // nil: the header lists none
	model    string   // the header's (pinned or first asked) model
	captured bool
	dir      string
	turns    []turnAt

	mu      sync.Mutex
	cursors []*cursor
}

// turnAt is where a turn's request stands in the events: the projection
// of events[:at] is its conversation.
type turnAt struct {
	at    int
	seq   int64
	model string
}

type cursor struct {
	at int
	p  *session.Projector
}

// maxCursors bounds the folds a Recording keeps: conversations replayed
// at once (an app that runs several) each read theirs in order.
const maxCursors = 4

// NewRecording reads the turns of a session's events (the header first).
func NewRecording(events []session.Event) *Recording {
	r := &Recording{events: events, captured: true}
	if len(events) > 0 && events[0].Kind == session.KindSessionStarted {
		h := events[0]
		r.system, r.model = h.System, h.Model
		var a struct {
			Tools    *[]string `json:"tools"`
			Captured *bool     `json:"content_captured"`
			Cwd      string    `json:"source_cwd"`
		}
		if len(h.Attrs) > 0 && json.Unmarshal(h.Attrs, &a) == nil {
			if a.Tools != nil {
				r.tools = append([]string{}, *a.Tools...)
			}
			if a.Captured != nil && !*a.Captured {
				r.captured = false
			}
			r.dir = a.Cwd
		}
		if h.Workspace != "" {
			r.dir = h.Workspace
		}
	}
	answer := -1 // the index of the answer the next model_call pairs with
	for i, e := range events {
		switch e.Kind {
		case session.KindAssistantMessage:
			if !fromRequest(e.Attrs) {
				answer = i
			}
		case session.KindModelCall:
			if !IsTurn(e) {
				answer = -1
				continue
			}
			at := i
			if answer >= 0 {
				at = answer
			}
			r.turns = append(r.turns, turnAt{at: at, seq: e.Seq, model: e.Model})
			answer = -1
		}
	}
	return r
}

func fromRequest(attrs json.RawMessage) bool {
	var a struct {
		FromRequest bool `json:"from_request"`
	}
	return len(attrs) > 0 && json.Unmarshal(attrs, &a) == nil && a.FromRequest
}

// Turns is how many turns the recording holds.
func (r *Recording) Turns() int { return len(r.turns) }

// Captured reports whether the session recorded content: false for one
// collected with content capture off (its header's content_captured).
func (r *Recording) Captured() bool { return r.captured }

// Dir is the folder the recorded program ran in, when the session knows
// it (its workspace, or an import's source_cwd): the recorded side of
// Env.
func (r *Recording) Dir() string { return r.dir }

// Span is the time of the recording's first and last events (zero when
// its events carry none): the days its clock showed.
func (r *Recording) Span() (first, last time.Time) {
	for _, e := range r.events {
		if !e.TS.IsZero() {
			first = e.TS
			break
		}
	}
	for i := len(r.events) - 1; i >= 0; i-- {
		if !r.events[i].TS.IsZero() {
			last = r.events[i].TS
			break
		}
	}
	return first, last
}

// Expected is the request the recording holds at turn n (1-based; n must
// be within Turns).
func (r *Recording) Expected(n int) Request {
	t := r.turns[n-1]
	req := Request{Model: t.model, System: r.system, Tools: r.tools, NoContent: !r.captured}
	if r.model != "" && r.model != t.model {
		req.models = []string{r.model}
	}
	if r.captured {
		req.Messages = r.messages(t.at)
	}
	return req
}

// messages is the projection of events[:at], from the cursor nearest
// before it.
func (r *Recording) messages(at int) []session.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var c *cursor
	for _, k := range r.cursors {
		if k.at <= at && (c == nil || k.at > c.at) {
			c = k
		}
	}
	if c == nil {
		if len(r.cursors) < maxCursors {
			c = &cursor{}
			r.cursors = append(r.cursors, c)
		} else {
			c = r.cursors[0]
			for _, k := range r.cursors {
				if k.at > c.at {
					c = k // the furthest on: the likeliest done
				}
			}
		}
		c.at, c.p = 0, session.NewProjector("")
	}
	for ; c.at < at; c.at++ {
		c.p.Add(r.events[c.at])
	}
	return c.p.Messages()
}
