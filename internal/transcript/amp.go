package transcript

import (
	"encoding/json"
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
// calls it ran, ends when their results are in. No system prompt, tool
// definitions or API response ids are kept. Versions after
// 0.0.1774569934 keep threads on the Amp server only (no local file).

// ampMaxBytes bounds the file read: Amp itself refuses to load a thread
// over 50 MiB.
const ampMaxBytes = 64 << 20

var ampThreadID = regexp.MustCompile(`^T-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

type ampThread struct {
	V        *float64     `json:"v"`
	ID       string       `json:"id"`
	Created  int64        `json:"created"`
	Title    string       `json:"title"`
	Messages []ampMessage `json:"messages"`
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
	Usage *struct {
		Model                    string `json:"model"`
		InputTokens              int64  `json:"inputTokens"`
		OutputTokens             int64  `json:"outputTokens"`
		CacheCreationInputTokens int64  `json:"cacheCreationInputTokens"`
		CacheReadInputTokens     int64  `json:"cacheReadInputTokens"`
		Timestamp                string `json:"timestamp"`
	} `json:"usage"`
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
	Run       *struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	} `json:"run"`
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
	// asker: the assistant message that made each call.
	asker map[string]int
}

// importAmp maps each assistant message to one response, its tool_use
// blocks to intents at the time each was streamed whole, and the
// tool_result blocks of the user message after it to results at the end
// of the tools span that ran them.
func importAmp(path string) ([]*Session, error) {
	data, file, err := readSourceMax(path, ampMaxBytes)
	if err != nil {
		return nil, err
	}
	a := &ampImport{b: newBuilder(FormatAmp, file, data), toolsEnd: map[int]time.Time{}, asker: map[string]int{}}
	var probe struct {
		V  *float64 `json:"v"`
		ID string   `json:"id"`
	}
	if !json.Valid(data) {
		err := json.Unmarshal(data, &probe)
		return nil, fmt.Errorf("import amp %s: not one whole JSON object (%v), as an Amp thread is; is it an Amp thread file, cut short?", path, err)
	}
	if json.Unmarshal(data, &probe) != nil || probe.V == nil || !ampThreadID.MatchString(probe.ID) {
		return nil, fmt.Errorf("import amp %s: no thread version v and id T-<uuid>; is this an Amp thread file?", path)
	}
	if err := json.Unmarshal(data, &a.t); err != nil {
		return nil, fmt.Errorf("import amp %s: thread %s does not decode (%v); nothing imported", path, probe.ID, err)
	}
	a.header()
	for _, tr := range a.t.Meta.Traces {
		if end, ok := parseTime(tr.EndTime); ok && tr.Name == "tools" && tr.Context.MessageID != nil {
			a.toolsEnd[*tr.Context.MessageID] = end
		}
	}
	for i, m := range a.t.Messages {
		a.b.records++
		a.message(i+1, m)
	}
	if !a.usage {
		a.b.notRecorded("usage")
	}
	a.b.notRecorded("system prompt", "tool definitions", "response ids")
	a.b.endState(a.status)
	return []*Session{a.b.finish("")}, nil
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
	for _, m := range t.Messages {
		if m.Usage != nil && m.Usage.Model != "" {
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

func ms(t int64) time.Time {
	if t <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(t).UTC()
}

// user imports a prompt (its text blocks) and the tool results it
// carries.
func (a *ampImport) user(n int, m ampMessage) {
	ts := ms(m.Meta.SentAt)
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
		a.usage = true
		if u.Model != "" {
			t.model = u.Model
		}
		// Amp's inputTokens are Anthropic's: without the cached ones.
		t.usage = &pricing.Usage{Input: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			CacheRead: u.CacheReadInputTokens, CacheCreation: u.CacheCreationInputTokens, Output: u.OutputTokens}
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
		if s := ms(bl.StartTime); !s.IsZero() && (t.ts.IsZero() || s.Before(t.ts)) {
			t.ts = s
		}
		switch bl.Type {
		case "text":
			t.appendText(bl.Text)
		case "tool_use":
			tc := session.ToolCall{ID: bl.ID, Name: bl.Name, Args: argsObject(bl.Input)}
			t.calls = append(t.calls, tc)
			intents = append(intents, intent{tc, ms(bl.FinalTime)})
			a.asker[bl.ID] = m.MessageID
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

// result imports a tool_result block: done is ok, error an error,
// cancelled and rejected-by-user as such; a run still in progress (a
// thread saved mid-turn) is no result.
func (a *ampImport) result(n int, bl ampBlock) {
	if bl.Run == nil {
		a.b.note(n, CodeBadLine, "a tool_result for %s without its run; skipped", bl.ToolUseID)
		return
	}
	r := bl.Run
	status, out, errText := "", "", ""
	attrs := map[string]any{}
	switch r.Status {
	case "done":
		status = session.ResultOK
		out = ampOutput(r.Result, attrs)
	case "error":
		status = session.ResultError
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(r.Error, &e) == nil && e.Message != "" {
			errText = e.Message
		} else {
			errText = string(r.Error)
		}
		out = errText
	case "cancelled":
		status = session.ResultCancelled
	case "rejected-by-user":
		status = session.ResultDenied
	default:
		a.b.note(n, CodeSkipped, "the run of %s is %q, not finished; no result", bl.ToolUseID, r.Status)
		return
	}
	if status != session.ResultOK && len(r.Result) > 0 && string(r.Result) != "null" {
		attrs["result"] = r.Result
	}
	ts := a.toolsEnd[a.asker[bl.ToolUseID]]
	a.b.result(n, bl.ToolUseID, out, status, errText, ts, a.b.latency(bl.ToolUseID, ts), attrs)
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
