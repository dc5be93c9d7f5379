package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/session"
)

// conversation is one agent's history as the proxy has seen it, and the
// session it is recorded in.
type conversation struct {
	// mu is held for the whole of a call (calls of one conversation are
	// served one at a time). hmu guards history and first for readers
	// that route other calls (Server.conversation, under Server.mu): they
	// must not wait for a call in flight, and the lock order is
	// Server.mu → hmu, never the other way; writers hold mu and hmu.
	mu    sync.Mutex
	hmu   sync.Mutex
	id    string
	sink  Sink
	keyed bool // named by the base URL or the Config's Sink: never matched by prefix

	n       int               // model calls so far
	history []session.Message // the last request's messages and its answer
	first   string            // the first user message, pinned
	tools   map[string]string // tool call id → tool name
	spent   Spent
	lastSeq int64
	// model is the model in force: the header's, then a fork's live one.
	model string
	// calls folds the model calls recorded: Finish ends the session by
	// them (failed when a replay diverged or every call failed).
	calls session.ModelCalls
	// digester hashes only what each request adds to the last one.
	digester *session.Digester
	// header holds the system text and tool names the session's header
	// recorded (headerSet: this proxy opened it). The log records them
	// once: a request with others cannot be projected from it.
	header struct {
		system string
		tools  []string
	}
	headerSet bool

	// Side threads (session.Route): system and toolNames are the last
	// request's, which the rule compares with; sides are the side
	// threads of a keyed conversation, each a conversation of its own
	// recorded in its own session; a side thread has root (the
	// conversation it belongs to) and thread (its number, from 1). All
	// threads of a conversation are served under the root's mu.
	system    string
	toolNames []string
	sides     []*conversation
	root      *conversation
	thread    int
}

// threadFor returns the thread of cv (a keyed conversation: the side
// thread rule needs to know the session) that c belongs to: cv itself,
// one of its side threads, or a new side thread (session.Route). A
// conversation whose side threads cannot be opened (a Config.Sink without
// OpenSide) is one thread, as before side threads were told apart. cv.mu
// is held.
func (cv *conversation) threadFor(s *Server, c *Call) *conversation {
	if !cv.keyed || cv.root != nil || (cv == s.fixed && s.cfg.OpenSide == nil) {
		return cv
	}
	ts := make([]session.Thread, 0, 1+len(cv.sides))
	for _, t := range append([]*conversation{cv}, cv.sides...) {
		ts = append(ts, session.Thread{System: t.system, Tools: t.toolNames, History: t.history})
	}
	switch i := session.Route(ts, session.Request{System: c.System, Tools: c.Tools, Messages: c.Messages}); i {
	case 0:
		return cv
	case session.NewSideThread:
		side := &conversation{root: cv, thread: len(cv.sides) + 1, keyed: true}
		cv.sides = append(cv.sides, side)
		return side
	default:
		return cv.sides[i-1]
	}
}

// budget is the conversation whose spend a call counts to: a side
// thread's calls are the session's spend.
func (cv *conversation) budget() *conversation {
	if cv.root != nil {
		return cv.root
	}
	return cv
}

// conversation finds or makes the conversation a call belongs to: the
// Config's Sink; the /s/<id>/ of its base URL; else the open conversation
// whose history the call's messages extend (the longest), or whose first
// user message it repeats (the agent compacted its history); else a new
// one.
func (s *Server) conversation(rt route, c *Call) (*conversation, error) {
	if s.fixed != nil {
		return s.fixed, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rt.session != "" {
		if cv := s.byID[rt.session]; cv != nil {
			return cv, nil
		}
		cv := &conversation{id: rt.session, keyed: true}
		s.byID[rt.session] = cv
		s.convs = append(s.convs, cv)
		return cv, nil
	}
	var best *conversation
	bestLen := -1
	for _, cv := range s.convs {
		if cv.keyed {
			continue
		}
		cv.hmu.Lock()
		h, first := cv.history, cv.first
		cv.hmu.Unlock()
		if len(h) > 0 && len(h) > bestLen && isPrefix(h, c.Messages) {
			best, bestLen = cv, len(h)
		}
		if best == nil && first != "" && firstUser(c.Messages) == first {
			best, bestLen = cv, 0
		}
	}
	if best != nil {
		return best, nil
	}
	cv := &conversation{}
	s.convs = append(s.convs, cv)
	return cv, nil
}

// open makes the conversation's session on its first call.
func (cv *conversation) open(s *Server, c *Call) error {
	if cv.sink != nil {
		return nil
	}
	h := s.cfg.Header
	h.Kind = session.KindSessionStarted
	open := s.cfg.Open
	if h.Name == "" {
		h.Name = "proxy"
	}
	h.Provider, h.Model, h.System = c.Provider, c.Model, c.System
	cv.model = c.Model
	h.Text = firstUser(c.Messages)
	attrs := map[string]any{}
	if len(h.Attrs) > 0 {
		_ = json.Unmarshal(h.Attrs, &attrs)
	}
	attrs["recorded_by"] = "proxy"
	attrs["api"] = string(c.API)
	// The tool names in the order request digests hash them, as the
	// runner's header has them: replay verify re-projects with them.
	attrs["tools"] = append([]string{}, c.Tools...)
	h.Attrs = marshal(attrs)
	cv.header.system, cv.header.tools, cv.headerSet = c.System, append([]string{}, c.Tools...), true
	if cv.root != nil {
		// A side thread: its own session, named after the session it
		// belongs to, whose header says so.
		cv.id = session.SideThreadID(cv.root.id, cv.thread)
		h = session.SideThreadHeader(h, cv.root.id, cv.thread)
		if s.cfg.OpenSide != nil {
			open = s.cfg.OpenSide
		}
	}
	sink, err := open(cv.id, h)
	if err != nil {
		return fmt.Errorf("open session: %w", err)
	}
	s.mu.Lock()
	cv.sink, cv.id = sink, sink.SessionID()
	if cv.root == nil {
		s.byID[cv.id] = cv
	} else {
		s.convs = append(s.convs, cv)
	}
	s.mu.Unlock()
	if cv.root != nil {
		s.logf("proxy: session %s, side thread %d of %s (%s %s)", cv.id, cv.thread, cv.root.id, c.Provider, c.Model)
		return nil
	}
	s.logf("proxy: session %s (%s %s)", cv.id, c.Provider, c.Model)
	return nil
}

func firstUser(msgs []session.Message) string {
	for _, m := range msgs {
		if m.Role == session.RoleUser {
			return m.Content
		}
	}
	return ""
}

// sameMessage, sameJSON and isPrefix are the history-prefix rule, which
// lives in package session (SameMessage, SameJSON, Extends) because the
// OTLP mapping groups traces into conversations by the same rule.
func sameMessage(a, b session.Message) bool { return session.SameMessage(a, b) }

func sameJSON(a, b json.RawMessage) bool { return session.SameJSON(a, b) }

func isPrefix(prefix, msgs []session.Message) bool { return session.Extends(prefix, msgs) }

// inputs returns the events for what the call's messages add to the
// history: user_message for user text, tool_result for each tool message
// (the agent ran the tool between the two calls), assistant_message for
// an assistant turn the client wrote itself. A history that no longer
// extends the last one is a compaction: what the agent put in place of
// the dropped messages is its summary.
func (cv *conversation) inputs(c *Call) []session.Event {
	var evs []session.Event
	from := 0
	if len(cv.history) == 0 {
		cv.digester = nil
	} else {
		if isPrefix(cv.history, c.Messages) {
			from = len(cv.history)
			// The messages the history has are the call's, as recorded:
			// a client that sends a call's arguments back normalised
			// (Claude Code adds Edit's "replace_all": false) sent no new
			// history, and the request digest must be the one replay
			// verify projects from the log, not of the client's copy.
			copy(c.Messages[:from], cv.history)
		} else {
			// The Digester trusts a payload to extend the last one when
			// its last hashed message looks the same; this one does not
			// extend it, so it starts over.
			cv.digester = nil
			k := 0
			for k < len(cv.history) && k < len(c.Messages) && sameMessage(cv.history[k], c.Messages[k]) {
				k++
			}
			var sum []string
			for _, m := range c.Messages[k:] {
				if m.Content != "" {
					sum = append(sum, m.Content)
				}
			}
			evs = append(evs, session.Event{Kind: session.KindCompaction, Through: cv.lastSeq, Summary: strings.Join(sum, "\n\n"),
				Attrs: marshal(obj{"recorded_by": "proxy", "kept_messages": k, "replaced_messages": len(cv.history) - k, "new_messages": len(c.Messages) - k})})
			from = len(c.Messages)
		}
	}
	if cv.first == "" {
		cv.hmu.Lock()
		cv.first = firstUser(c.Messages)
		cv.hmu.Unlock()
	}
	for _, m := range c.Messages[from:] {
		switch m.Role {
		case session.RoleUser:
			evs = append(evs, session.Event{Kind: session.KindUserMessage, Text: m.Content})
		case session.RoleTool:
			st := session.ResultOK
			e := session.Event{Kind: session.KindToolResult, CallID: m.ToolCallID, Tool: cv.tools[m.ToolCallID], Output: m.Content}
			if c.failed[m.ToolCallID] {
				st, e.Error = session.ResultError, m.Content
			}
			e.Status = st
			evs = append(evs, e)
		case session.RoleAssistant:
			evs = append(evs, session.Event{Kind: session.KindAssistantMessage, Text: m.Content, ToolCalls: m.ToolCalls,
				Attrs: marshal(obj{"from_request": true})})
			cv.noteCalls(m.ToolCalls)
		}
	}
	// A tool message is named after its tool, as the runner projects it
	// (request digests hash the name).
	for i, m := range c.Messages {
		if m.Role == session.RoleTool && m.Name == "" {
			c.Messages[i].Name = cv.tools[m.ToolCallID]
		}
	}
	return evs
}

func (cv *conversation) noteCalls(tcs []session.ToolCall) {
	if cv.tools == nil {
		cv.tools = map[string]string{}
	}
	for _, tc := range tcs {
		cv.tools[tc.ID] = tc.Name
	}
}

// callRecord gathers what one call records.
type callRecord struct {
	conv   *conversation
	call   *Call
	inputs []session.Event
	began  time.Time
	first  time.Time
	attrs  obj
	known  bool         // the request body is recorded bytes: no redaction
	refs   []string     // artifact references: request, response
	sync   func() error // makes the artifacts durable
}

func (rc *callRecord) modelCall(status int, red *redact.Redactor) session.Event {
	c := rc.call
	if rc.conv.digester == nil {
		rc.conv.digester = session.NewDigester()
	}
	e := session.Event{Kind: session.KindModelCall, Provider: c.Provider, Model: c.Model,
		LatencyMS: time.Since(rc.began).Milliseconds(), MaxTokens: c.MaxTokens}
	a := obj{"recorded_by": "proxy", "api": string(c.API), "path": c.Path, "stream": c.Stream, "status": status, "turn": c.Turn}
	if h := rc.conv.header; rc.conv.headerSet && (c.System != h.system || !slices.Equal(c.Tools, h.tools)) {
		// Claude Code sends another system text and more tools when it
		// retries after a 400 (and as deferred tools load): replay
		// verify projects every request with the header's, so a digest
		// of this one could only ever disagree. The request itself is
		// kept (request_artifact), which is what a replay compares.
		a["request_digest"] = "not recorded: the system text or tool set differs from the session header's, which replay verify projects with"
	} else {
		e.RequestDigest = c.digestWith(rc.conv.digester, red.String)
	}
	if c.RawQuery != "" {
		a["query"] = c.RawQuery
	}
	if !rc.first.IsZero() {
		a["ttft_ms"] = float64(rc.first.Sub(rc.began).Microseconds()) / 1000
	}
	for k, v := range rc.attrs {
		a[k] = v
	}
	rc.attrs = a
	return e
}

// bodiesArtifact is the append-only artifact holding a session's raw
// request and response bodies.
const bodiesArtifact = "proxy-bodies"

// artifacts keeps the raw bodies, redacted, and names them in attrs.
func (rc *callRecord) artifacts(s *Server, resp []byte) {
	req := rc.call.Body
	if !rc.known {
		req = []byte(s.red.String(string(req)))
	}
	parts := [][]byte{req}
	if resp != nil {
		parts = append(parts, []byte(s.red.String(string(resp))))
	}
	refs, sync, err := rc.conv.sink.AppendArtifact(bodiesArtifact, parts...)
	if err != nil {
		s.logf("proxy: %v", err)
		return
	}
	rc.refs, rc.sync = refs, sync
}

func (rc *callRecord) nameArtifacts(stream bool) {
	if len(rc.refs) > 0 {
		rc.attrs["request_artifact"] = rc.refs[0]
	}
	if len(rc.refs) > 1 {
		rc.attrs["response_artifact"] = rc.refs[1]
		rc.attrs["response_sse"] = stream
	}
}

// append appends the call's events while its artifacts are synced, and
// returns when both are durable.
func (rc *callRecord) append(s *Server, evs ...session.Event) {
	all := rc.inputs
	if m := rc.call.liveModel; m != "" && s.fixed == nil && m != rc.conv.model {
		// A fork's live call went to another model. The session's owner
		// records that for a Config.Sink (the runner); here the proxy
		// opened the session, so it does, as every fork does.
		all = append(all, session.ForkModelChanged(rc.call.Provider, m, rc.call.Provider, rc.conv.model, rc.call.Turn))
		rc.conv.model = m
	}
	all = append(all, evs...)
	synced := make(chan error, 1)
	if rc.sync != nil {
		go func() { synced <- rc.sync() }()
	} else {
		synced <- nil
	}
	out, err := rc.conv.sink.Append(all...)
	if serr := <-synced; serr != nil {
		s.logf("proxy: artifacts of call %d of session %s: %v", rc.call.Turn, rc.conv.id, serr)
	}
	if err != nil {
		s.logf("proxy: record call %d of session %s: %v", rc.call.Turn, rc.conv.id, err)
		return
	}
	if len(out) > 0 {
		rc.conv.lastSeq = out[len(out)-1].Seq
	}
	for _, e := range out {
		rc.conv.calls.Add(e)
	}
	if s.cfg.OnRecorded != nil {
		s.cfg.OnRecorded(rc.call, out)
	}
}

// fail records a call that got no answer: a malformed request, a refusal,
// an unreachable upstream. The history moves to the request's messages
// (their events are written), not past them.
func (rc *callRecord) fail(s *Server, status int, typ, msg string, body []byte) {
	e := rc.modelCall(status, s.red)
	e.Error, e.ErrorType = msg, typ
	rc.artifacts(s, body)
	rc.nameArtifacts(false)
	e.Attrs = marshal(rc.attrs)
	rc.append(s, e)
	rc.keepInputs()
}

// keepInputs moves the history to the request's messages after a call
// that got no answer: what the request added is recorded now, and a retry
// of it, or the next request that extends it, must not record it again
// (the log would hold the user's message twice, and replay verify would
// project a request the agent never sent).
func (rc *callRecord) keepInputs() {
	if len(rc.inputs) > 0 {
		h := append([]session.Message(nil), rc.call.Messages...)
		rc.conv.hmu.Lock()
		rc.conv.history = h
		rc.conv.hmu.Unlock()
		rc.conv.system, rc.conv.toolNames = rc.call.System, rc.call.Tools
	}
}

// finish records an answered call: the answer (or the partial text of a
// client that went away) and its model_call, and moves the history on.
func (rc *callRecord) finish(s *Server, status int, header http.Header, resp provider.Response, perr, serr error, disconnected bool) {
	c, cv := rc.call, rc.conv
	e := rc.modelCall(status, s.red)
	rc.nameArtifacts(strings.HasPrefix(header.Get("Content-Type"), "text/event-stream"))
	if resp.Model != "" {
		e.Model = resp.Model
	}
	e.InputTokens, e.OutputTokens, e.CostUSD = resp.InputTokens, resp.OutputTokens, resp.CostUSD
	e.CacheReadInputTokens, e.CacheCreationInputTokens = resp.CacheReadTokens, resp.CacheCreationTokens
	e.FinishReason, e.ResponseID = resp.FinishReason, resp.ResponseID
	sp := &cv.budget().spent
	sp.Calls++
	sp.InputTokens += resp.InputTokens
	sp.OutputTokens += resp.OutputTokens
	sp.CostUSD += resp.CostUSD
	if disconnected {
		e.Error, e.ErrorType, e.Text = "the client went away before the answer was complete", "client_disconnected", resp.Text
		e.Attrs = marshal(rc.attrs)
		rc.append(s, e, session.Event{Kind: session.KindInterrupted, Text: resp.Text, Reason: "client_disconnected"})
		return
	}
	if err := firstErr(serr, perr); err != nil {
		e.Error = err.Error()
		if pe, ok := err.(*provider.Error); ok {
			e.Error, e.ErrorType = pe.Message, pe.Type
		} else if dv, ok := err.(*Divergence); ok {
			e.Error, e.ErrorType = dv.Error(), session.ErrorTypeReplayDivergence
		} else if _, ok := err.(*errTooLarge); ok {
			e.ErrorType = "response_too_large"
		}
		e.Text = resp.Text
		e.Attrs = marshal(rc.attrs)
		rc.append(s, e)
		rc.keepInputs()
		return
	}
	am := session.Event{Kind: session.KindAssistantMessage, Text: resp.Text, ToolCalls: resp.ToolCalls, Refusal: resp.Refusal,
		InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens}
	if resp.FinishReason == provider.FinishLength || resp.FinishReason == provider.FinishContentFilter {
		am.FinishReason = resp.FinishReason
	}
	if resp.Thinking != "" {
		am.Attrs = marshal(obj{"thinking": resp.Thinking})
	}
	e.Attrs = marshal(rc.attrs)
	rc.append(s, am, e)
	cv.noteCalls(resp.ToolCalls)
	h := append(append([]session.Message(nil), c.Messages...),
		session.Message{Role: session.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
	cv.hmu.Lock()
	cv.history = h
	cv.hmu.Unlock()
	cv.system, cv.toolNames = c.System, c.Tools
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
