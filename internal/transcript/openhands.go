package transcript

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// ohEvent is one event of an OpenHands (V0) trajectory (corpus FORMATS.md
// section 2.4).
type ohEvent struct {
	ID          int64           `json:"id"`
	Timestamp   string          `json:"timestamp"`
	Source      string          `json:"source"`
	Message     string          `json:"message"`
	Action      string          `json:"action"`
	Observation string          `json:"observation"`
	Cause       *int64          `json:"cause"`
	Content     string          `json:"content"`
	Success     *bool           `json:"success"`
	Args        json.RawMessage `json:"args"`
	Extras      json.RawMessage `json:"extras"`
	Meta        *struct {
		FunctionName  string `json:"function_name"`
		ToolCallID    string `json:"tool_call_id"`
		ModelResponse struct {
			ID      string `json:"id"`
			Model   string `json:"model"`
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					Content   json.RawMessage `json:"content"`
					ToolCalls []fnCall        `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens        int64 `json:"prompt_tokens"`
				CompletionTokens    int64 `json:"completion_tokens"`
				CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
				CacheReadTokens     int64 `json:"cache_read_input_tokens"`
				PromptDetails       *struct {
					Cached int64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		} `json:"model_response"`
	} `json:"tool_call_metadata"`
}

// importOpenHands maps the actions of one LLM response (their
// tool_call_metadata shares model_response.id) to one assistant_message
// and model_call (LiteLLM's usage: prompt_tokens already holds the cache
// reads and writes), each action to a tool call, and the observation that
// names it as its cause to its result (an error when success is false or
// a command's exit code is not 0). The agent's state changes give the end
// state.
func importOpenHands(path string) (*Session, error) {
	data, file, err := readSource(path)
	if err != nil {
		return nil, err
	}
	var evs []json.RawMessage
	if err := json.Unmarshal(data, &evs); err != nil {
		return nil, fmt.Errorf("import openhands %s: want a JSON array of events: %w", path, err)
	}
	o := &ohImport{b: newBuilder(FormatOpenHands, file, data), callOf: map[int64]string{}}
	o.b.records = len(evs)
	o.b.notRecorded("system prompt", "timestamp zone (read as UTC)")
	o.b.hdr.Name = "openhands " + strings.TrimSuffix(baseName(file), ".json")
	for i, raw := range evs {
		o.event(i+1, raw)
	}
	o.resp.flush(o.b)
	switch {
	case o.state != "":
		o.b.attrs["source_status"] = o.state
	case o.finished:
		o.b.attrs["source_status"] = "finish"
	}
	return o.b.finish(""), nil
}

// ohImport is one OpenHands trajectory being imported.
type ohImport struct {
	b    *builder
	resp response
	// callOf gives the call id of an action, by the action's event id,
	// for the observation that names it as its cause.
	callOf map[int64]string
	// state is the agent's latest state; finished, that it called finish.
	state    string
	finished bool
}

// event imports event n.
func (o *ohImport) event(n int, raw json.RawMessage) {
	var e ohEvent
	if err := json.Unmarshal(raw, &e); err != nil {
		o.b.note(n, CodeBadLine, "not an OpenHands event (%v); skipped", err)
		return
	}
	ts, _ := parseTime(e.Timestamp)
	switch {
	case e.Action == "message" && e.Source == "user":
		o.resp.flush(o.b)
		o.userMessage(e, ts)
	case e.Action != "" && e.Meta != nil:
		o.action(e, n, ts)
	case e.Action == "message" && e.Source == "agent":
		// A reply with no tool call: a response of its own.
		o.resp.flush(o.b)
		o.b.addTurn(turn{ts: ts, text: ohText(e), provider: o.b.hdr.Provider, model: o.b.hdr.Model,
			callAttrs: map[string]any{"usage": "not recorded for a reply without tool calls"}}, n)
	case e.Observation != "" && e.Cause != nil && o.callOf[*e.Cause] != "":
		o.resp.flush(o.b)
		o.result(e, n, ts)
	case e.Observation == "agent_state_changed":
		var x struct {
			State string `json:"agent_state"`
		}
		_ = json.Unmarshal(e.Extras, &x)
		o.state = x.State
		o.b.note(n, CodeSkipped, "agent state changed to %s (the last one is the source_status)", x.State)
	case e.Observation == "error":
		o.resp.flush(o.b)
		o.b.add(session.Event{Kind: session.KindError, TS: ts, Reason: "source_error", Error: e.Content})
	default:
		o.unmapped(e, n)
	}
}

// ohText is the text of a message event: its args' content, else its
// message.
func ohText(e ohEvent) string {
	var a struct {
		Content string `json:"content"`
	}
	_ = json.Unmarshal(e.Args, &a)
	if a.Content != "" {
		return a.Content
	}
	return e.Message
}

// userMessage adds a user's message, with its images.
func (o *ohImport) userMessage(e ohEvent, ts time.Time) {
	var a struct {
		ImageURLs json.RawMessage `json:"image_urls"`
	}
	_ = json.Unmarshal(e.Args, &a)
	attrs := map[string]any{}
	if len(a.ImageURLs) > 0 && string(a.ImageURLs) != "null" && string(a.ImageURLs) != "[]" {
		attrs["image_urls"] = a.ImageURLs
	}
	o.b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: ohText(e), Attrs: marshalAttrs(attrs)})
}

// action adds an action to the response its tool_call_metadata names, as
// one of its calls (the finish call as the response's end).
func (o *ohImport) action(e ohEvent, n int, ts time.Time) {
	mr := e.Meta.ModelResponse
	if !o.resp.same(mr.ID) {
		o.resp.start(o.b, o.turnOf(e, ts), mr.ID, n)
	}
	cur := o.resp.turn
	args := json.RawMessage(nil)
	if len(mr.Choices) > 0 {
		for _, tc := range mr.Choices[0].Message.ToolCalls {
			if tc.ID == e.Meta.ToolCallID {
				args = tc.Function.Arguments
			}
		}
	}
	if args == nil {
		args = e.Args
	}
	tc := session.ToolCall{ID: e.Meta.ToolCallID, Name: e.Meta.FunctionName, Args: argsObject(args)}
	if e.Action == "finish" {
		o.finish(e, tc, n)
		return
	}
	cur.calls = append(cur.calls, tc)
	o.resp.intent(tc, cur.ts, n)
	o.callOf[e.ID] = tc.ID
}

// turnOf is the response an action's model_response describes: its
// model, text, finish reason and usage (LiteLLM's: prompt_tokens already
// holds the cache reads and writes).
func (o *ohImport) turnOf(e ohEvent, ts time.Time) turn {
	mr := e.Meta.ModelResponse
	prov, model := splitModel(mr.Model, "")
	if prov == "" {
		prov = providerOf(model)
	}
	if o.b.hdr.Model == "" {
		o.b.hdr.Provider, o.b.hdr.Model = prov, model
	}
	t := turn{ts: ts, provider: prov, model: model, responseID: mr.ID, attrs: map[string]any{}}
	if len(mr.Choices) > 0 {
		c := mr.Choices[0]
		t.text, t.finish = textOf(c.Message.Content), c.FinishReason
	}
	if u := mr.Usage; u != nil {
		read := u.CacheReadTokens
		if read == 0 && u.PromptDetails != nil {
			read = u.PromptDetails.Cached
		}
		t.usage = &pricing.Usage{Input: u.PromptTokens, CacheRead: read, CacheCreation: u.CacheCreationTokens, Output: u.CompletionTokens}
	}
	return t
}

// finish takes the finish call, OpenHands's AgentFinishAction: the
// agent's end, which no tool runs and no observation answers. agentctl's
// agent ends by replying without a call, so that is what it becomes: its
// message is the response's (the session's final) text, and the call is
// kept verbatim in the message's attrs, not emitted. A call with no
// result would make every replay differ and count a tool call that never
// ran; a made-up result would put an observation the source lacks into an
// ATIF export.
func (o *ohImport) finish(e ohEvent, tc session.ToolCall, n int) {
	cur := o.resp.turn
	o.finished = true
	if cur.text == "" {
		cur.text = ohFinishText(e)
	}
	cur.attrs["finish_call"] = tc
	o.b.note(n, CodeKeptInAttrs, "finish call %s is the agent's end, which no tool answers: its message is the final text, the call is in the assistant message's attrs (finish_call)", tc.ID)
}

// result imports the observation that answers an action: an error when
// success is false (with the command's exit code) or it is an error
// observation.
func (o *ohImport) result(e ohEvent, n int, ts time.Time) {
	id := o.callOf[*e.Cause]
	status, errText := session.ResultOK, ""
	var x struct {
		Metadata *struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(e.Extras, &x)
	switch {
	case e.Success != nil && !*e.Success:
		status = session.ResultError
		if x.Metadata != nil && x.Metadata.ExitCode != nil {
			errText = fmt.Sprintf("exit status %d", *x.Metadata.ExitCode)
		}
	case e.Observation == "error":
		status, errText = session.ResultError, excerpt(e.Content, 200)
	}
	attrs := map[string]any{}
	if len(e.Extras) > 0 && string(e.Extras) != "null" && string(e.Extras) != "{}" {
		attrs["extras"] = e.Extras
	}
	o.b.result(n, id, e.Content, status, errText, ts, o.b.latency(id, ts), attrs)
}

// unmapped notes an event that is not part of the conversation, or
// answers no call.
func (o *ohImport) unmapped(e ohEvent, n int) {
	switch {
	case e.Observation == "null" || e.Action == "change_agent_state":
		o.b.note(n, CodeSkipped, "%s%s from %s (%s); not part of the conversation", e.Action, e.Observation, e.Source, excerpt(e.Message, 40))
	case e.Observation != "":
		o.b.note(n, CodeNotImported, "observation %s (%s) answers no tool call; not imported", e.Observation, excerpt(e.Message, 40))
	case e.Action != "":
		o.b.note(n, CodeNotImported, "action %s from %s without a tool call; not imported", e.Action, e.Source)
	default:
		o.b.note(n, CodeUnknownRecord, "an event with neither action nor observation")
	}
}

// ohFinishText is the final text of a finish action whose response has
// no content: its final_thought (newer OpenHands), thought, or message.
func ohFinishText(e ohEvent) string {
	var a struct {
		FinalThought string `json:"final_thought"`
		Thought      string `json:"thought"`
	}
	_ = json.Unmarshal(e.Args, &a)
	for _, t := range []string{a.FinalThought, a.Thought, e.Message} {
		if t != "" {
			return t
		}
	}
	return ""
}

// providerOf guesses nothing: it names the provider only from a model id
// that says it.
func providerOf(model string) string {
	switch {
	case strings.HasPrefix(model, "claude"):
		return "anthropic"
	case strings.HasPrefix(model, "gpt"), strings.HasPrefix(model, "o1"), strings.HasPrefix(model, "o3"), strings.HasPrefix(model, "o4"):
		return "openai"
	}
	return ""
}

func init() {
	Register(Format{
		Name:   FormatOpenHands,
		Doc:    "OpenHands event stream / trajectory (a JSON array)",
		Exts:   []string{".json"},
		Detect: detectOpenHands,
		Import: func(path string) ([]*Session, error) { return one(importOpenHands(path)) },
	})
}

// detectOpenHands claims a JSON array whose first element is an event:
// a "source" and an "action" or "observation".
func detectOpenHands(h *Head) bool {
	keys, _, ok := h.FirstElementKeys()
	return ok && slices.Contains(keys, "source") && (slices.Contains(keys, "action") || slices.Contains(keys, "observation"))
}
