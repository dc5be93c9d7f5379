package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// FormatAmp is an Amp thread ($XDG_DATA_HOME/amp/threads/T-<id>.json).
const FormatAmp = "amp"

// How the Amp CLI writes a thread: one JSON object, rewritten whole
// (through a .amptmp file and a rename) as the thread changes: {v, id,
// created, messages, agentMode, nextMessageId, meta, env, title, …}.
// Each message has a role, a messageId and content blocks in Anthropic's
// shape; a user message holds the prompt (text, with meta.sentAt) or the
// tool results of the assistant message before it (tool_result, its
// toolUseID and run: {status, result | error}); an assistant message is
// one API response: text, thinking and tool_use blocks (startTime and
// finalTime in Unix ms), its usage (model, the Anthropic counts, a
// timestamp) and state {type, stopReason}. meta.traces are the agent's
// spans: a "tools" span, whose context names the assistant message whose
// calls it ran, ends when their results are in. A Task call's sub-agent
// lives in its result's run: progress, one entry per step (its message
// and tool_uses, each with status, input and result), and
// ~debug.inferences, one per step (its time, and its usage, or a
// placeholder of zeros with null cache counts when the CLI got none). No
// system prompt, tool definitions or API response ids are kept. Versions
// after 0.0.1774569934 keep threads on the Amp server only (no local
// file).

// ampMaxBytes bounds the file read: Amp itself refuses to load a thread
// over 50 MiB.
const ampMaxBytes = 64 << 20

var ampThreadID = regexp.MustCompile(`^T-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

type ampThread struct {
	V       *float64 `json:"v"`
	ID      string   `json:"id"`
	Created int64    `json:"created"`
	Title   string   `json:"title"`
	// Messages are decoded one by one: one that does not decode is
	// reported, the others imported.
	Messages []json.RawMessage `json:"messages"`
	Meta     struct {
		Traces []struct {
			Name    string `json:"name"`
			EndTime string `json:"endTime"`
			Context struct {
				MessageID *int `json:"messageId"`
			} `json:"context"`
		} `json:"traces"`
	} `json:"meta"`
	Env struct {
		Initial struct {
			Trees []struct {
				URI string `json:"uri"`
			} `json:"trees"`
			Platform struct {
				Client        string `json:"client"`
				ClientVersion string `json:"clientVersion"`
			} `json:"platform"`
		} `json:"initial"`
	} `json:"env"`
}

type ampMessage struct {
	Role      string            `json:"role"`
	MessageID int               `json:"messageId"`
	Content   []json.RawMessage `json:"content"`
	AgentMode string            `json:"agentMode"`
	Meta      struct {
		SentAt int64 `json:"sentAt"`
	} `json:"meta"`
	State *struct {
		Type       string `json:"type"`
		StopReason string `json:"stopReason"`
	} `json:"state"`
	Usage *ampUsage `json:"usage"`
}

type ampBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	StartTime int64           `json:"startTime"`
	FinalTime int64           `json:"finalTime"`
	ToolUseID string          `json:"toolUseID"`
	Run       *ampRun         `json:"run"`
}

// ampRun is a tool's run as a tool_result holds it.
type ampRun struct {
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	// A Task sub-agent's steps, and the inference of each.
	Progress []struct {
		Message   string `json:"message"`
		Reasoning string `json:"reasoning"`
		ToolUses  []struct {
			ID       string          `json:"id"`
			ToolName string          `json:"tool_name"`
			Status   string          `json:"status"`
			Input    json.RawMessage `json:"input"`
			Result   json.RawMessage `json:"result"`
			Error    json.RawMessage `json:"error"`
		} `json:"tool_uses"`
	} `json:"progress"`
	Debug struct {
		Inferences []struct {
			InferenceTimeMS float64   `json:"inferenceTimeMs"`
			Usage           *ampUsage `json:"usage"`
		} `json:"inferences"`
	} `json:"~debug"`
}

// ampUsage is the usage of one inference, Anthropic's counts.
type ampUsage struct {
	Model                    string `json:"model"`
	MaxInputTokens           int64  `json:"maxInputTokens"`
	InputTokens              int64  `json:"inputTokens"`
	OutputTokens             int64  `json:"outputTokens"`
	CacheCreationInputTokens *int64 `json:"cacheCreationInputTokens"`
	CacheReadInputTokens     *int64 `json:"cacheReadInputTokens"`
	Timestamp                string `json:"timestamp"`
}

// bill is the usage as agentctl counts it (Amp's inputTokens are
// Anthropic's, without the cached ones), or nil for the placeholder the
// CLI writes when an inference gave it none: all zeros, the cache counts
// null.
func (u *ampUsage) bill() *pricing.Usage {
	if u == nil || (u.MaxInputTokens == 0 && u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheCreationInputTokens == nil && u.CacheReadInputTokens == nil) {
		return nil
	}
	write, read := deref(u.CacheCreationInputTokens), deref(u.CacheReadInputTokens)
	return &pricing.Usage{Input: u.InputTokens + write + read, CacheRead: read, CacheCreation: write, Output: u.OutputTokens}
}

// ampImport is one Amp thread being imported.
type ampImport struct {
	b      *builder
	t      ampThread
	status string
	usage  bool
	// toolsEnd: the end of the "tools" span of each assistant message (by
	// messageId), when its calls' results were in.
	toolsEnd map[int]time.Time
	// asker: the assistant message that made each call; calls: each
	// call, for a Task's prompt; subs: the Task sub-agents, in order.
	asker map[string]int
	calls map[string]session.ToolCall
	subs  []ampSub
	file  string
	data  []byte
}

// ampSub is a Task call's sub-agent: its call and run.
type ampSub struct {
	call   session.ToolCall
	at     time.Time
	run    *ampRun
	output string
}

// importAmp maps each assistant message to one response, its tool_use
// blocks to intents at the time each was streamed whole, and the
// tool_result blocks of the user message after it to results at the end
// of the tools span that ran them; a Task's sub-agent is a child session,
// linked before the Task's result.
func importAmp(path string) ([]*Session, error) {
	data, file, err := readSourceMax(path, ampMaxBytes)
	if err != nil {
		return nil, err
	}
	a := &ampImport{b: newBuilder(FormatAmp, file, data), toolsEnd: map[int]time.Time{}, asker: map[string]int{},
		calls: map[string]session.ToolCall{}, file: file, data: data}
	// One decode: a syntax error is a file cut short (or not JSON); a
	// value of another type leaves the rest decoded, so the version and
	// id say whether it is a thread at all.
	err = json.Unmarshal(data, &a.t)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return nil, fmt.Errorf("import amp %s: not one whole JSON object (%v), as an Amp thread is; is it an Amp thread file, cut short?", path, err)
	case a.t.V == nil || !ampThreadID.MatchString(a.t.ID):
		return nil, fmt.Errorf("import amp %s: no thread version v and id T-<uuid>; is this an Amp thread file?", path)
	case err != nil:
		return nil, fmt.Errorf("import amp %s: thread %s does not decode (%v); nothing imported", path, a.t.ID, err)
	}
	a.header()
	for _, tr := range a.t.Meta.Traces {
		if end, ok := parseTime(tr.EndTime); ok && tr.Name == "tools" && tr.Context.MessageID != nil {
			a.toolsEnd[*tr.Context.MessageID] = end
		}
	}
	for i, raw := range a.t.Messages {
		a.b.records++
		var m ampMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			a.b.note(i+1, CodeBadLine, "message %d does not decode (%v); skipped", i+1, err)
			continue
		}
		a.message(i+1, m)
	}
	if !a.usage {
		a.b.notRecorded(session.NotRecordedUsage)
	}
	a.b.notRecorded("system prompt", "tool definitions", "response ids")
	a.b.endState(a.status)
	s := a.b.finish("")
	for _, sub := range a.subs {
		child := a.subagent(sub)
		at := int64(0)
		for _, e := range s.Events {
			if e.Kind == session.KindToolResult && e.CallID == sub.call.ID {
				at = e.Seq - 1
				break
			}
		}
		link(s, child, at, sub.output)
	}
	return []*Session{s}, nil
}

func (a *ampImport) header() {
	b, t := a.b, a.t
	b.hdr.Provider = "amp"
	b.hdr.Name = "amp " + t.ID
	if t.Created > 0 {
		b.hdr.TS = time.UnixMilli(t.Created).UTC()
	}
	b.attrs["source_session_id"] = t.ID
	if t.Title != "" {
		b.attrs["source_title"] = t.Title
	}
	if v := t.Env.Initial.Platform.ClientVersion; v != "" {
		b.attrs["source_version"] = v
	}
	if c := t.Env.Initial.Platform.Client; c != "" {
		b.attrs["source_client"] = c
	}
	if trees := t.Env.Initial.Trees; len(trees) > 0 {
		if u, err := url.Parse(trees[0].URI); err == nil && u.Scheme == "file" {
			b.attrs["source_cwd"] = u.Path
		}
	} else {
		b.notRecorded("the folder it ran in")
	}
	for _, raw := range t.Messages {
		var m struct {
			Usage *ampUsage `json:"usage"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Usage != nil && m.Usage.Model != "" {
			b.hdr.Model = m.Usage.Model
			break
		}
	}
}

// message imports one message of the thread.
func (a *ampImport) message(n int, m ampMessage) {
	switch m.Role {
	case "user":
		a.user(n, m)
	case "assistant":
		a.assistant(n, m)
	default:
		a.b.note(n, CodeUnknownRecord, "message %d has role %q, not one this importer knows; skipped", m.MessageID, m.Role)
	}
}

// ampTime reads Amp's Unix milliseconds (zero: no time).
func ampTime(t int64) time.Time {
	if t <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(t).UTC()
}

// user imports a prompt (its text blocks) and the tool results it
// carries.
func (a *ampImport) user(n int, m ampMessage) {
	ts := ampTime(m.Meta.SentAt)
	text := ""
	attrs := map[string]any{}
	for _, raw := range m.Content {
		var bl ampBlock
		if err := json.Unmarshal(raw, &bl); err != nil {
			a.b.note(n, CodeBadLine, "a content block of message %d that does not decode (%v); skipped", m.MessageID, err)
			continue
		}
		switch bl.Type {
		case "text":
			if text != "" {
				text += "\n"
			}
			text += bl.Text
		case "tool_result":
			a.result(n, bl)
		default: // images, mentions…: verbatim
			keepVerbatim(attrs, bl.Type, raw)
		}
	}
	if text != "" || len(attrs) > 0 {
		if m.AgentMode != "" {
			attrs["agent_mode"] = m.AgentMode
		}
		a.b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: text, Attrs: marshalAttrs(attrs)})
	}
}

// assistant imports one API response.
func (a *ampImport) assistant(n int, m ampMessage) {
	t := turn{provider: a.b.hdr.Provider, model: a.b.hdr.Model, attrs: map[string]any{}}
	if m.State != nil {
		t.finish = m.State.StopReason
		a.status = m.State.Type
	}
	if u := m.Usage; u != nil {
		if u.Model != "" {
			t.model = u.Model
		}
		t.usage = u.bill()
		a.usage = a.usage || t.usage != nil
		t.ts, _ = parseTime(u.Timestamp)
	}
	type intent struct {
		call session.ToolCall
		ts   time.Time
	}
	var intents []intent
	for _, raw := range m.Content {
		var bl ampBlock
		if err := json.Unmarshal(raw, &bl); err != nil {
			a.b.note(n, CodeBadLine, "a content block of message %d that does not decode (%v); skipped", m.MessageID, err)
			continue
		}
		// The response began when its first block did.
		if s := ampTime(bl.StartTime); !s.IsZero() && (t.ts.IsZero() || s.Before(t.ts)) {
			t.ts = s
		}
		switch bl.Type {
		case "text":
			t.appendText(bl.Text)
		case "tool_use":
			tc := session.ToolCall{ID: bl.ID, Name: bl.Name, Args: argsObject(bl.Input)}
			t.calls = append(t.calls, tc)
			intents = append(intents, intent{tc, ampTime(bl.FinalTime)})
			a.asker[bl.ID] = m.MessageID
			a.calls[bl.ID] = tc
		default: // thinking, redacted_thinking…: verbatim
			keepVerbatim(t.attrs, bl.Type, raw)
		}
	}
	if m.State != nil && m.State.Type != "complete" {
		t.attrs["source_state"] = m.State.Type
	}
	a.b.addTurn(t, n)
	for _, x := range intents {
		a.b.intent(x.call, x.ts)
	}
}

// result imports a tool_result block; a Task's sub-agent (its run's
// progress) becomes a child session.
func (a *ampImport) result(n int, bl ampBlock) {
	if bl.Run == nil {
		a.b.note(n, CodeBadLine, "a tool_result for %s without its run; skipped", bl.ToolUseID)
		return
	}
	r := bl.Run
	status, out, errText, ok := ampStatus(r.Status, r.Result, r.Error)
	if !ok {
		a.b.note(n, CodeSkipped, "the run of %s is %q, not finished; no result", bl.ToolUseID, r.Status)
		return
	}
	attrs := map[string]any{}
	if status == session.ResultOK {
		out = ampOutput(r.Result, attrs)
	} else if len(r.Result) > 0 && string(r.Result) != "null" {
		attrs["result"] = r.Result
	}
	ts := a.toolsEnd[a.asker[bl.ToolUseID]]
	a.b.result(n, bl.ToolUseID, out, status, errText, ts, a.b.latency(bl.ToolUseID, ts), attrs)
	if len(r.Progress) > 0 {
		a.subs = append(a.subs, ampSub{call: a.calls[bl.ToolUseID], at: a.intentTime(bl.ToolUseID), run: r, output: out})
	}
}

// intentTime is when call id was asked for (zero: not known).
func (a *ampImport) intentTime(id string) time.Time {
	for i := len(a.b.evs) - 1; i >= 0; i-- {
		if e := a.b.evs[i]; e.Kind == session.KindToolIntent && e.CallID == id {
			return e.TS
		}
	}
	return time.Time{}
}

// ampStatus maps a run's status: done is ok, error an error (its
// message), cancelled and rejected-by-user as such; ok is false for a run
// not finished (in progress, queued, waiting on the user: a thread saved
// mid-turn).
func ampStatus(status string, result, errRaw json.RawMessage) (st, out, errText string, ok bool) {
	switch status {
	case "done":
		return session.ResultOK, "", "", true
	case "error":
		var e struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(errRaw, &e) == nil && e.Message != "":
			errText = e.Message
		case json.Unmarshal(result, &s) == nil && s != "":
			errText = s // a sub-agent's tool error is its result
		default:
			errText = string(errRaw)
		}
		return session.ResultError, errText, errText, true
	case "cancelled":
		return session.ResultCancelled, "", "", true
	case "rejected-by-user":
		return session.ResultDenied, "", "", true
	}
	return "", "", "", false
}

// subagent imports a Task's sub-agent: its prompt, then each step one
// response at the end of its inference (with that inference's usage, when
// the CLI recorded one), its tool calls asked then, and their results in
// when the next inference began.
func (a *ampImport) subagent(sub ampSub) *Session {
	b := newBuilder(FormatAmp, a.file, a.data)
	var in struct {
		Prompt      string `json:"prompt"`
		Description string `json:"description"`
	}
	_ = json.Unmarshal(sub.call.Args, &in)
	b.hdr.Provider, b.hdr.TS = a.b.hdr.Provider, sub.at
	b.hdr.Name = "amp sub-agent " + sub.call.Name
	if in.Description != "" {
		b.hdr.Name += ": " + in.Description
	}
	b.attrs["source_session_id"] = a.t.ID
	b.attrs["source_tool_call"] = sub.call.ID
	b.records = len(sub.run.Progress)
	b.add(session.Event{Kind: session.KindUserMessage, TS: sub.at, Text: in.Prompt})
	infs := sub.run.Debug.Inferences
	// begin, end: when each step's inference began and ended.
	begin, end := make([]time.Time, len(sub.run.Progress)), make([]time.Time, len(sub.run.Progress))
	usage := false
	for i := range sub.run.Progress {
		if i < len(infs) && infs[i].Usage != nil {
			if t, ok := parseTime(infs[i].Usage.Timestamp); ok {
				end[i] = t
				begin[i] = t.Add(-time.Duration(infs[i].InferenceTimeMS * float64(time.Millisecond)))
			}
		}
	}
	if len(infs) != len(sub.run.Progress) {
		b.note(0, CodeSkipped, "%d inferences recorded for %d steps; usage and times are taken by position", len(infs), len(sub.run.Progress))
	}
	for i, step := range sub.run.Progress {
		t := turn{ts: end[i], provider: b.hdr.Provider, attrs: map[string]any{}}
		t.text = step.Message
		if step.Reasoning != "" {
			t.attrs["reasoning"] = step.Reasoning
		}
		if i < len(infs) && infs[i].Usage != nil {
			t.usage = infs[i].Usage.bill()
			t.model = infs[i].Usage.Model
		}
		usage = usage || t.usage != nil
		if t.model != "" && b.hdr.Model == "" {
			b.hdr.Model = t.model
		}
		for _, u := range step.ToolUses {
			t.calls = append(t.calls, session.ToolCall{ID: u.ID, Name: u.ToolName, Args: argsObject(u.Input)})
		}
		b.addTurn(t, i+1)
		for _, c := range t.calls {
			b.intent(c, end[i])
		}
		done := time.Time{}
		if i+1 < len(begin) {
			done = begin[i+1]
		}
		for _, u := range step.ToolUses {
			status, out, errText, ok := ampStatus(u.Status, u.Result, u.Error)
			if !ok {
				b.note(i+1, CodeSkipped, "the run of %s is %q, not finished; no result", u.ID, u.Status)
				continue
			}
			attrs := map[string]any{}
			if status == session.ResultOK {
				out = ampOutput(u.Result, attrs)
			}
			b.result(i+1, u.ID, out, status, errText, done, b.latency(u.ID, done), attrs)
		}
	}
	if !usage {
		b.notRecorded(session.NotRecordedUsage)
	}
	if b.hdr.Model == "" {
		b.notRecorded("model")
	}
	b.notRecorded("system prompt", "tool definitions", "response ids", "finish reasons")
	b.endState(sub.run.Status)
	return b.finish("task " + sub.call.ID)
}

// ampOutput is the text of a tool's result: a string as is, a shell
// run's output (its exit code in attrs), a read's content; any other
// result as its JSON.
func ampOutput(raw json.RawMessage, attrs map[string]any) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var r struct {
		Output   *string `json:"output"`
		Content  *string `json:"content"`
		ExitCode *int    `json:"exitCode"`
	}
	if json.Unmarshal(raw, &r) == nil {
		if r.ExitCode != nil {
			attrs["exit_code"] = *r.ExitCode
		}
		switch {
		case r.Output != nil:
			return *r.Output
		case r.Content != nil:
			return *r.Content
		}
	}
	return string(raw)
}

func init() {
	Register(Format{
		Name:   FormatAmp,
		Doc:    "Amp thread JSON ($XDG_DATA_HOME/amp/threads/T-<id>.json, the Amp CLI up to 0.0.1774569934)",
		Exts:   []string{".json"},
		Detect: detectAmp,
		Import: importAmp,
	})
}

// detectAmp claims a JSON object with a numeric thread version v and an
// Amp thread id (T- and a UUID) beside its messages: the shape Amp writes,
// which no other format shares.
func detectAmp(h *Head) bool {
	keys, vals, ok := h.TopKeys()
	if !ok {
		return false
	}
	var v float64
	hasMessages := false
	for _, k := range keys {
		hasMessages = hasMessages || k == "messages"
	}
	return json.Unmarshal(vals["v"], &v) == nil && ampThreadID.MatchString(StringOf(vals, "id")) && hasMessages
}
