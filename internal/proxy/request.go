package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/session"
)

// API is the name under which a request's route records its calls
// (modelapi.Route.API): "chat_completions", "responses", "messages" for
// model calls, "models" and "count_tokens" for the other operations. The
// registry (modelapi.LookupWire) says which wire speaks it.
type API string

// Call is one model request as the proxy parsed it, handed to the Policy
// and to the Backend. Messages is the provider-neutral history (roles
// user, assistant, tool; system text apart in System), the same shape the
// runner projects, so request digests mean the same thing for both.
type Call struct {
	API API
	// Provider is the provider whose wire API is (modelapi.API.Provider).
	Provider string
	// Path is the request's path below the proxy's prefixes
	// ("/v1/messages"), RawQuery its query string (?beta=true).
	Path     string
	RawQuery string
	// SessionID is the conversation's session (set before the Policy and
	// the Backend see the call).
	SessionID string
	// Turn numbers the model calls of the conversation from 1.
	Turn int
	// Thread is 0 for a call of the session's conversation, n for one of
	// its n-th side thread (session.Route), whose session is SessionID
	// and which belongs to session ThreadOf. Turn counts the thread's
	// calls.
	Thread    int
	ThreadOf  string
	Model     string
	MaxTokens int64
	Stream    bool
	System    string
	Messages  []session.Message
	Tools     []string
	// Metadata is the request's metadata object (volatile: a user or
	// session id), compared by replay only under --strict.
	Metadata json.RawMessage
	// Body and Header are the request as the client sent it. Header holds
	// the client's credentials: it is forwarded, never recorded.
	Body   []byte
	Header http.Header
	// Spent is what the conversation had spent before this call.
	Spent Spent

	// failed holds the ids of tool results the client marked as errors
	// (Anthropic's is_error).
	failed map[string]bool
	// liveModel is the model WithModel sent the call to instead of the
	// client's (a fork's --model), "" when the client's was asked.
	liveModel string
}

// Spent is a conversation's running totals, for budget policies.
type Spent struct {
	Calls        int64
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
}

// Digest is the request digest recorded in the call's model_call:
// session.Digest over the system text (as a first system message, as the
// runner projects it), the messages and the tool names.
func (c *Call) Digest() string {
	tools := c.Tools
	if tools == nil {
		tools = []string{} // as the runner hashes a call without tools
	}
	return session.Digest(c.projection(), tools)
}

// digestWith is Digest through a conversation's Digester, of the request
// as the log holds it: every string passed through red, as the recorder
// passes every string of every event, so that replay verify, which
// projects the request from the log, computes the same digest. The
// Digester tells messages apart by seq, and a request's messages have
// none, so each gets its position as seq.
func (c *Call) digestWith(d *session.Digester, red func(string) string) string {
	msgs := c.projection()
	numbered := make([]session.Message, len(msgs))
	for i, m := range msgs {
		m.Content, m.ToolCallID, m.Name = red(m.Content), red(m.ToolCallID), red(m.Name)
		if len(m.ToolCalls) > 0 {
			calls := make([]session.ToolCall, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				tc.ID, tc.Name, tc.Args = red(tc.ID), red(tc.Name), session.MapJSONStrings(tc.Args, red)
				calls[j] = tc
			}
			m.ToolCalls = calls
		}
		m.Seq = int64(i + 1)
		numbered[i] = m
	}
	tools := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		tools[i] = red(t)
	}
	return d.Digest(numbered, tools)
}

func (c *Call) projection() []session.Message {
	if c.System == "" {
		return c.Messages
	}
	return append([]session.Message{{Role: session.RoleSystem, Content: c.System}}, c.Messages...)
}

// badRequest is a request the proxy could not read: a 400 in the
// provider's error shape.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badf(format string, args ...any) error { return &badRequest{fmt.Sprintf(format, args...)} }

// wire returns the registered wire that records calls as c.API, and the
// route c came by (the one of that API whose path c.Path matches, else
// its first). An API no registered wire speaks is an error naming the
// known ones: the proxy never guesses a wire.
func (c *Call) wire() (modelapi.API, modelapi.Route, map[string]string, error) {
	api, route, err := modelapi.LookupWire(string(c.API))
	if err != nil {
		return api, route, nil, err
	}
	for _, r := range api.Wire.Routes() {
		if r.API != route.API {
			continue
		}
		if vars, ok := r.Match(c.Path); ok {
			return api, r, vars, nil
		}
	}
	return api, route, nil, nil
}

// Op is what c's route does: a model call (modelapi.OpGenerate) is
// recorded, replayed and forked; the others are answered in passing. An
// unknown API is OpGenerate, for the proxy to refuse as a model call.
func (c *Call) Op() modelapi.Op {
	if _, r, _, err := c.wire(); err == nil {
		return r.Op
	}
	return modelapi.OpGenerate
}

// parseCall reads a model request body of c.API into c, with its wire's
// ParseRequest.
func parseCall(c *Call) error {
	if b := bytes.TrimSpace(c.Body); len(b) == 0 || b[0] != '{' {
		return badf("request body is not a JSON object")
	}
	api, route, vars, err := c.wire()
	if err != nil {
		return badf("%v", err)
	}
	mc := modelapi.Call{Body: c.Body, Path: c.Path, RawQuery: c.RawQuery, Route: route, Vars: vars}
	if err := api.Wire.ParseRequest(&mc); err != nil {
		return &badRequest{err.Error()}
	}
	c.Provider = api.Provider
	c.Model, c.Stream, c.MaxTokens, c.Metadata = mc.Model, mc.Stream || route.Stream, mc.MaxTokens, mc.Metadata
	c.System, c.Messages, c.Tools, c.failed = mc.System, mc.Messages, mc.Tools, mc.Failed
	return nil
}
