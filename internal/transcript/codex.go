package transcript

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// codexLine is one rollout line: {"timestamp", "type", "payload"}
// (corpus FORMATS.md section 2.2).
type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type string `json:"type"`
	// session_meta
	ID               string          `json:"id"`
	Cwd              string          `json:"cwd"`
	Originator       string          `json:"originator"`
	CLIVersion       string          `json:"cli_version"`
	ModelProvider    string          `json:"model_provider"`
	BaseInstructions json.RawMessage `json:"base_instructions"`
	Instructions     string          `json:"instructions"`
	// turn_context
	Model string `json:"model"`
	// response_item
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	// tool_search_output: the tools the search found (its output).
	Tools json.RawMessage `json:"tools"`
	// event_msg
	Message json.RawMessage `json:"message"`
	Reason  string          `json:"reason"`
	Info    *struct {
		Last *struct {
			InputTokens      int64 `json:"input_tokens"`
			CachedInput      int64 `json:"cached_input_tokens"`
			CacheWriteInput  int64 `json:"cache_write_input_tokens"`
			OutputTokens     int64 `json:"output_tokens"`
			ReasoningOutput  int64 `json:"reasoning_output_tokens"`
			TotalTokensCount int64 `json:"total_tokens"`
		} `json:"last_token_usage"`
	} `json:"info"`
	Error json.RawMessage `json:"error"`
}

// exitCode finds "Process exited with code N" in exec output (the only
// place a rollout says a command failed).
var exitCode = regexp.MustCompile(`(?m)^Process exited with code (-?\d+)`)

// The response_item types that are the model's output (one response is a
// run of them between inputs), and those that answer a call.
var (
	codexOutputs = map[string]bool{"reasoning": true, "function_call": true, "custom_tool_call": true, "local_shell_call": true,
		"web_search_call": true, "tool_search_call": true, "image_generation_call": true, "agent_message": true}
	codexResults = map[string]bool{"function_call_output": true, "custom_tool_call_output": true, "tool_search_output": true,
		"local_shell_call_output": true}
)

func importCodex(path string) (*Session, error) {
	data, file, err := readSource(path)
	if err != nil {
		return nil, err
	}
	b := newBuilder(FormatCodex, file, data)
	b.hdr.Provider = "openai"
	var lines []struct {
		n int
		l codexLine
		p codexPayload
	}
	readLines(data, b, func(n int, raw []byte) error {
		var l codexLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		var p codexPayload
		if len(l.Payload) > 0 && l.Payload[0] == '{' {
			if err := json.Unmarshal(l.Payload, &p); err != nil {
				return err
			}
		}
		lines = append(lines, struct {
			n int
			l codexLine
			p codexPayload
		}{n, l, p})
		return nil
	})
	// A rollout written by a Codex that persists event_msg user_message
	// has the prompt twice (that and a response_item message): the event
	// stands for it. An older one has only the response_item.
	userEvents := false
	for _, x := range lines {
		if x.l.Type == "event_msg" && x.p.Type == "user_message" {
			userEvents = true
		}
	}
	hasUsage := false
	metaSeen := false
	model := ""
	var cur *turn
	curLine := 0
	var pending []session.ToolCall // intents of the open response
	var pendingTS []time.Time
	var lastTurnIdx = -1 // index in b.evs of the latest model_call
	var status string
	flush := func() {
		if cur == nil {
			return
		}
		b.addTurn(*cur, curLine)
		lastTurnIdx = len(b.evs) - 1
		for i, tc := range pending {
			b.intent(tc, pendingTS[i])
		}
		cur, pending, pendingTS = nil, nil, nil
	}
	open := func(ts time.Time, n int) {
		if cur == nil {
			cur = &turn{ts: ts, provider: b.hdr.Provider, model: model, attrs: map[string]any{}}
			curLine = n
		}
	}
	var lastTS time.Time
	for _, x := range lines {
		l, p, n := x.l, x.p, x.n
		ts, ok := parseTime(l.Timestamp)
		if !ok {
			ts = lastTS // a timestamp that is not one (a trimmed fixture): the previous
		}
		lastTS = ts
		switch l.Type {
		case "session_meta":
			if metaSeen {
				b.note(n, CodeSkipped, "another session_meta (%s); the first one is the header", p.ID)
				continue
			}
			metaSeen = true
			b.attrs["source_session_id"] = p.ID
			if p.CLIVersion != "" {
				b.attrs["source_version"] = p.CLIVersion
			}
			if p.Originator != "" {
				b.attrs["originator"] = p.Originator
			}
			b.hdr.TS = ts
			if p.Cwd != "" {
				b.attrs["source_cwd"] = p.Cwd
			}
			if p.ModelProvider != "" {
				b.hdr.Provider = p.ModelProvider
			}
			var bi struct {
				Text string `json:"text"`
			}
			if len(p.BaseInstructions) > 0 && json.Unmarshal(p.BaseInstructions, &bi) == nil {
				b.hdr.System = bi.Text
			} else if p.Instructions != "" {
				b.hdr.System = p.Instructions
			}
		case "turn_context":
			if p.Model != "" && p.Model != model {
				if model != "" {
					flush()
					b.add(session.Event{Kind: session.KindModelChanged, TS: ts, Provider: b.hdr.Provider, Model: p.Model,
						Reason: fmt.Sprintf("the rollout's turn_context names %s (was %s)", p.Model, model)})
				} else if b.hdr.Model == "" {
					b.hdr.Model = p.Model
				}
				model = p.Model
			}
		case "response_item":
			switch {
			case p.Type == "message" && p.Role == "assistant":
				open(ts, n)
				if t := textOf(p.Content); t != "" {
					if cur.text != "" {
						cur.text += "\n"
					}
					cur.text += t
				}
			case p.Type == "message":
				if !userEvents && p.Role == "user" {
					flush()
					b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: textOf(p.Content)})
				} else {
					b.note(n, CodeSkipped, "%s message given to the model (context or the prompt again; the user_message event stands for the prompt)", p.Role)
				}
			case codexOutputs[p.Type]:
				open(ts, n)
				switch p.Type {
				case "function_call", "custom_tool_call", "local_shell_call", "tool_search_call":
					args := p.Arguments
					if len(args) == 0 {
						args = p.Input
					}
					if len(args) == 0 {
						args = p.Action
					}
					id := p.CallID
					if id == "" {
						id = fmt.Sprintf("line-%d", n)
						b.note(n, CodeKeptInAttrs, "a %s with no call_id; its id is the line number", p.Type)
					}
					tc := session.ToolCall{ID: id, Name: p.Name, Args: argsObject(args)}
					switch {
					case tc.Name != "":
					case p.Type == "tool_search_call":
						// Codex's search for deferred tools names no tool; its
						// tool_search_output answers it by call_id.
						tc.Name = "tool_search"
					default:
						tc.Name = p.Type
					}
					cur.calls = append(cur.calls, tc)
					pending, pendingTS = append(pending, tc), append(pendingTS, ts)
				default: // reasoning, web_search_call, …: verbatim
					list, _ := cur.attrs[p.Type].([]json.RawMessage)
					cur.attrs[p.Type] = append(list, l.Payload)
				}
			case codexResults[p.Type]:
				flush()
				out := codexOutput(p.Output)
				if p.Type == "tool_search_output" && len(p.Output) == 0 {
					out = string(p.Tools) // what the search found is its output
				}
				status, errText := session.ResultOK, ""
				if m := exitCode.FindStringSubmatch(out); m != nil && m[1] != "0" {
					status, errText = session.ResultError, "exit status "+m[1]
				}
				var lat int64
				for i := len(b.evs) - 1; i >= 0; i-- {
					if e := b.evs[i]; e.Kind == session.KindToolIntent && e.CallID == p.CallID {
						lat = ts.Sub(e.TS).Milliseconds()
						break
					}
				}
				b.result(n, p.CallID, out, status, errText, ts, lat, nil)
			case p.Type == "ghost_snapshot":
				b.note(n, CodeSkipped, "ghost_snapshot (a workspace snapshot, not part of the conversation)")
			default:
				b.note(n, CodeUnknownRecord, "response_item type %q is not one this importer knows; skipped", p.Type)
			}
		case "event_msg":
			switch p.Type {
			case "user_message":
				flush()
				var msg string
				_ = json.Unmarshal(p.Message, &msg)
				attrs := map[string]any{}
				var um map[string]json.RawMessage
				_ = json.Unmarshal(l.Payload, &um)
				for _, k := range []string{"images", "local_images"} {
					if v, ok := um[k]; ok && string(v) != "[]" && string(v) != "null" {
						attrs[k] = v
					}
				}
				b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: msg, Attrs: marshalAttrs(attrs)})
			case "token_count":
				if p.Info == nil || p.Info.Last == nil {
					b.note(n, CodeSkipped, "token_count without usage (rate limits only)")
					continue
				}
				flush()
				u := p.Info.Last
				if lastTurnIdx < 0 || b.evs[lastTurnIdx].InputTokens+b.evs[lastTurnIdx].OutputTokens > 0 {
					b.note(n, CodeSkipped, "token_count with no response before it that lacks usage")
					continue
				}
				hasUsage = true
				// OpenAI's input_tokens already holds the cached ones.
				bill := pricing.Usage{Input: u.InputTokens, CacheRead: u.CachedInput, CacheCreation: u.CacheWriteInput, Output: u.OutputTokens}
				c := &b.evs[lastTurnIdx]
				c.InputTokens, c.OutputTokens = bill.Input, bill.Output
				c.CacheReadInputTokens, c.CacheCreationInputTokens = bill.CacheRead, bill.CacheCreation
				c.CostUSD = pricing.CostOf(priceModel(c.Model), bill)
				if a := &b.evs[lastTurnIdx-1]; a.Kind == session.KindAssistantMessage {
					a.InputTokens, a.OutputTokens = bill.Input, bill.Output
				}
			case "task_complete":
				status = "task_complete"
				if len(p.Error) > 0 && string(p.Error) != "null" {
					status = "task_complete with error"
				}
			case "turn_aborted":
				status = "turn_aborted"
				if p.Reason != "" {
					status += ": " + p.Reason
				}
			case "error":
				flush()
				var msg string
				_ = json.Unmarshal(p.Message, &msg)
				b.add(session.Event{Kind: session.KindError, TS: ts, Reason: "source_error", Error: msg})
			case "agent_message", "agent_reasoning", "exec_command_end", "patch_apply_end", "mcp_tool_call_end", "web_search_end",
				"item_completed", "image_generation_end", "view_image_tool_call", "dynamic_tool_call_request", "dynamic_tool_call_response":
				b.note(n, CodeSkipped, "event_msg %s repeats what a response_item records", p.Type)
			default:
				b.note(n, CodeSkipped, "event_msg %s; not part of the conversation", p.Type)
			}
		case "compacted":
			flush()
			var c struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(l.Payload, &c)
			b.add(session.Event{Kind: session.KindCompaction, TS: ts, Through: b.lastSeq(), Summary: c.Message})
		case "world_state", "inter_agent_communication", "inter_agent_communication_metadata":
			b.note(n, CodeSkipped, "%s line; not part of the conversation", l.Type)
		default:
			b.note(n, CodeUnknownRecord, "line type %q is not one this importer knows; skipped", l.Type)
		}
	}
	flush()
	if !metaSeen && len(b.evs) == 0 {
		return nil, fmt.Errorf("import codex %s: no session_meta or response items; is this a Codex rollout?", path)
	}
	if !hasUsage {
		b.notRecorded("usage")
	}
	if model == "" {
		b.notRecorded("model")
	}
	b.notRecorded("tool error flags (a failed command is read from its exit code)")
	id, _ := b.attrs["source_session_id"].(string)
	b.hdr.Name = "codex " + id
	if status != "" {
		b.attrs["source_status"] = status
	} else {
		b.notRecorded("end state")
	}
	return b.finish(""), nil
}

// codexOutput reads a call's output: a string, {"output": …} of older
// rollouts, or content items.
func codexOutput(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		var o struct {
			Output string `json:"output"`
		}
		if strings.HasPrefix(strings.TrimSpace(s), "{") && json.Unmarshal([]byte(s), &o) == nil && o.Output != "" {
			return o.Output
		}
		return s
	}
	if t := textOf(raw); t != "" && t != string(raw) {
		return t
	}
	var o struct {
		Output string `json:"output"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Output != "" {
		return o.Output
	}
	return string(raw)
}
