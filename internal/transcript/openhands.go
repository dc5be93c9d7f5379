package transcript

import (
	"encoding/json"
	"fmt"
	"strings"

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
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string          `json:"name"`
							Arguments json.RawMessage `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
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
	b := newBuilder(FormatOpenHands, file, data)
	b.records = len(evs)
	b.notRecorded("system prompt", "timestamp zone (read as UTC)")
	b.hdr.Name = "openhands " + strings.TrimSuffix(baseName(file), ".json")
	var cur *turn
	curID, curLine := "", 0
	var pending []session.ToolCall
	callOf := map[int64]string{} // action id -> call id
	intentTS := map[string]int{}
	state, finished := "", false
	flush := func() {
		if cur == nil {
			return
		}
		b.addTurn(*cur, curLine)
		for _, tc := range pending {
			b.intent(tc, cur.ts)
			intentTS[tc.ID] = len(b.evs) - 1
		}
		cur, curID, pending = nil, "", nil
	}
	for i, raw := range evs {
		n := i + 1
		var e ohEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			b.note(n, CodeBadLine, "not an OpenHands event (%v); skipped", err)
			continue
		}
		ts, _ := parseTime(e.Timestamp)
		switch {
		case e.Action == "message" && e.Source == "user":
			flush()
			var a struct {
				Content   string          `json:"content"`
				ImageURLs json.RawMessage `json:"image_urls"`
			}
			_ = json.Unmarshal(e.Args, &a)
			text := a.Content
			if text == "" {
				text = e.Message
			}
			attrs := map[string]any{}
			if len(a.ImageURLs) > 0 && string(a.ImageURLs) != "null" && string(a.ImageURLs) != "[]" {
				attrs["image_urls"] = a.ImageURLs
			}
			b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: text, Attrs: marshalAttrs(attrs)})
		case e.Action != "" && e.Meta != nil:
			mr := e.Meta.ModelResponse
			if cur == nil || mr.ID != curID || mr.ID == "" {
				flush()
				prov, model := splitModel(mr.Model, "")
				if prov == "" {
					prov = providerOf(model)
				}
				if b.hdr.Model == "" {
					b.hdr.Provider, b.hdr.Model = prov, model
				}
				cur = &turn{ts: ts, provider: prov, model: model, responseID: mr.ID, attrs: map[string]any{}}
				curID, curLine = mr.ID, n
				if len(mr.Choices) > 0 {
					c := mr.Choices[0]
					cur.text, cur.finish = textOf(c.Message.Content), c.FinishReason
				}
				if u := mr.Usage; u != nil {
					read := u.CacheReadTokens
					if read == 0 && u.PromptDetails != nil {
						read = u.PromptDetails.Cached
					}
					cur.usage = &pricing.Usage{Input: u.PromptTokens, CacheRead: read, CacheCreation: u.CacheCreationTokens, Output: u.CompletionTokens}
				}
			}
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
				// The finish call is OpenHands's AgentFinishAction: the
				// agent's end, which no tool runs and no observation
				// answers. agentctl's agent ends by replying without a
				// call, so that is what it becomes: its message is the
				// response's (the session's final) text, and the call is
				// kept verbatim in the message's attrs, not emitted. A call
				// with no result would make every replay differ and count
				// a tool call that never ran; a made-up result would put an
				// observation the source lacks into an ATIF export.
				finished = true
				if cur.text == "" {
					cur.text = ohFinishText(e)
				}
				cur.attrs["finish_call"] = tc
				b.note(n, CodeKeptInAttrs, "finish call %s is the agent's end, which no tool answers: its message is the final text, the call is in the assistant message's attrs (finish_call)", tc.ID)
				continue
			}
			cur.calls = append(cur.calls, tc)
			pending = append(pending, tc)
			callOf[e.ID] = tc.ID
		case e.Action == "message" && e.Source == "agent":
			// A reply with no tool call: a response of its own.
			flush()
			var a struct {
				Content string `json:"content"`
			}
			_ = json.Unmarshal(e.Args, &a)
			text := a.Content
			if text == "" {
				text = e.Message
			}
			b.addTurn(turn{ts: ts, text: text, provider: b.hdr.Provider, model: b.hdr.Model,
				callAttrs: map[string]any{"usage": "not recorded for a reply without tool calls"}}, n)
		case e.Observation != "" && e.Cause != nil && callOf[*e.Cause] != "":
			flush()
			id := callOf[*e.Cause]
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
				status, errText = session.ResultError, clip(e.Content, 200)
			}
			var lat int64
			if j, ok := intentTS[id]; ok && !ts.IsZero() && !b.evs[j].TS.IsZero() {
				lat = ts.Sub(b.evs[j].TS).Milliseconds()
			}
			attrs := map[string]any{}
			if len(e.Extras) > 0 && string(e.Extras) != "null" && string(e.Extras) != "{}" {
				attrs["extras"] = e.Extras
			}
			b.result(n, id, e.Content, status, errText, ts, lat, attrs)
		case e.Observation == "agent_state_changed":
			var x struct {
				State string `json:"agent_state"`
			}
			_ = json.Unmarshal(e.Extras, &x)
			state = x.State
			b.note(n, CodeSkipped, "agent state changed to %s (the last one is the source_status)", x.State)
		case e.Observation == "error":
			flush()
			b.add(session.Event{Kind: session.KindError, TS: ts, Reason: "source_error", Error: e.Content})
		case e.Observation == "null" || e.Action == "change_agent_state":
			b.note(n, CodeSkipped, "%s%s from %s (%s); not part of the conversation", e.Action, e.Observation, e.Source, clip(e.Message, 40))
		case e.Observation != "":
			b.note(n, CodeNotImported, "observation %s (%s) answers no tool call; not imported", e.Observation, clip(e.Message, 40))
		case e.Action != "":
			b.note(n, CodeNotImported, "action %s from %s without a tool call; not imported", e.Action, e.Source)
		default:
			b.note(n, CodeUnknownRecord, "an event with neither action nor observation")
		}
	}
	flush()
	switch {
	case state != "":
		b.attrs["source_status"] = state
	case finished:
		b.attrs["source_status"] = "finish"
	}
	return b.finish(""), nil
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
