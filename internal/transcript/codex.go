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

// importCodex maps each run of output items between inputs to one
// response, a token_count to the usage of the response before it, and a
// call's output to its result (an error when the command's exit code is
// not 0).
func importCodex(path string) (*Session, error) {
	data, file, err := readSource(path)
	if err != nil {
		return nil, err
	}
	c := &codexImport{b: newBuilder(FormatCodex, file, data)}
	c.b.hdr.Provider = "openai"
	c.decode(data)
	for _, x := range c.recs {
		c.line(x)
	}
	c.resp.flush(c.b)
	return c.finish(path)
}

// codexImport is one Codex rollout being imported.
type codexImport struct {
	b    *builder
	recs []codexRec
	// userEvents: the rollout persists event_msg user_message, which then
	// stands for the prompt (its response_item message repeats it).
	userEvents bool
	resp       response
	metaSeen   bool
	hasUsage   bool
	model      string
	status     string
	lastTS     time.Time
}

// codexRec is one rollout line: its number, the line and its payload.
type codexRec struct {
	n int
	l codexLine
	p codexPayload
}

// decode reads the lines. A rollout written by a Codex that persists
// event_msg user_message has the prompt twice (that and a response_item
// message): the event stands for it. An older one has only the
// response_item.
func (c *codexImport) decode(data []byte) {
	readLines(data, c.b, func(n int, raw []byte) error {
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
		c.recs = append(c.recs, codexRec{n, l, p})
		return nil
	})
	for _, x := range c.recs {
		if x.l.Type == "event_msg" && x.p.Type == "user_message" {
			c.userEvents = true
		}
	}
}

// line imports one line; a timestamp that is not one (a trimmed fixture)
// is the previous line's.
func (c *codexImport) line(x codexRec) {
	ts, ok := parseTime(x.l.Timestamp)
	if !ok {
		ts = c.lastTS
	}
	c.lastTS = ts
	switch x.l.Type {
	case "session_meta":
		c.meta(x.p, x.n, ts)
	case "turn_context":
		c.turnContext(x.p, ts)
	case "response_item":
		c.responseItem(x, ts)
	case "event_msg":
		c.eventMsg(x, ts)
	case "compacted":
		c.resp.flush(c.b)
		var m struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(x.l.Payload, &m)
		c.b.add(session.Event{Kind: session.KindCompaction, TS: ts, Through: c.b.lastSeq(), Summary: m.Message})
	case "world_state", "inter_agent_communication", "inter_agent_communication_metadata":
		c.b.note(x.n, CodeSkipped, "%s line; not part of the conversation", x.l.Type)
	case "token_usage_record":
		// 0.17x: one per response, before the token_count event that
		// carries the same usage (which the import reads).
		var r struct {
			ResponseID string `json:"response_id"`
		}
		_ = json.Unmarshal(x.l.Payload, &r)
		c.b.note(x.n, CodeSkipped, "token_usage_record of response %s; its usage is the token_count event's", r.ResponseID)
	default:
		c.b.note(x.n, CodeUnknownRecord, "line type %q is not one this importer knows; skipped", x.l.Type)
	}
}

// meta takes the header from the first session_meta.
func (c *codexImport) meta(p codexPayload, n int, ts time.Time) {
	b := c.b
	if c.metaSeen {
		b.note(n, CodeSkipped, "another session_meta (%s); the first one is the header", p.ID)
		return
	}
	c.metaSeen = true
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
}

// turnContext follows the model: the first names the header's, a change
// is a model_changed.
func (c *codexImport) turnContext(p codexPayload, ts time.Time) {
	if p.Model == "" || p.Model == c.model {
		return
	}
	if c.model != "" {
		c.resp.flush(c.b)
		c.b.add(session.Event{Kind: session.KindModelChanged, TS: ts, Provider: c.b.hdr.Provider, Model: p.Model,
			Reason: fmt.Sprintf("the rollout's turn_context names %s (was %s)", p.Model, c.model)})
	} else if c.b.hdr.Model == "" {
		c.b.hdr.Model = p.Model
	}
	c.model = p.Model
}

// open makes sure a response is open for the model's output at line n.
func (c *codexImport) open(ts time.Time, n int) *turn {
	if c.resp.turn == nil {
		c.resp.start(c.b, turn{ts: ts, provider: c.b.hdr.Provider, model: c.model, attrs: map[string]any{}}, "", n)
	}
	return c.resp.turn
}

// responseItem imports an item given to or made by the model.
func (c *codexImport) responseItem(x codexRec, ts time.Time) {
	p, n := x.p, x.n
	switch {
	case p.Type == "message" && p.Role == "assistant":
		cur := c.open(ts, n)
		if t := textOf(p.Content); t != "" {
			cur.appendText(t)
		}
	case p.Type == "message":
		if !c.userEvents && p.Role == "user" {
			c.resp.flush(c.b)
			c.b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: textOf(p.Content)})
		} else {
			c.b.note(n, CodeSkipped, "%s message given to the model (context or the prompt again; the user_message event stands for the prompt)", p.Role)
		}
	case codexOutputs[p.Type]:
		c.output(x, ts)
	case codexResults[p.Type]:
		c.resp.flush(c.b)
		c.result(p, n, ts)
	case p.Type == "ghost_snapshot":
		c.b.note(n, CodeSkipped, "ghost_snapshot (a workspace snapshot, not part of the conversation)")
	default:
		c.b.note(n, CodeUnknownRecord, "response_item type %q is not one this importer knows; skipped", p.Type)
	}
}

// output adds an output item to the open response: a call, or an item
// kept verbatim (reasoning, web_search_call, …).
func (c *codexImport) output(x codexRec, ts time.Time) {
	p, n := x.p, x.n
	cur := c.open(ts, n)
	switch p.Type {
	case "function_call", "custom_tool_call", "local_shell_call", "tool_search_call":
		tc := c.call(p, n)
		cur.calls = append(cur.calls, tc)
		c.resp.intent(tc, ts, n)
	default:
		keepVerbatim(cur.attrs, p.Type, x.l.Payload)
	}
}

// call reads the tool call of an output item.
func (c *codexImport) call(p codexPayload, n int) session.ToolCall {
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
		c.b.note(n, CodeKeptInAttrs, "a %s with no call_id; its id is the line number", p.Type)
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
	return tc
}

// result imports a call's output: an error when the command's exit code
// is not 0.
func (c *codexImport) result(p codexPayload, n int, ts time.Time) {
	out := codexOutput(p.Output)
	if p.Type == "tool_search_output" && len(p.Output) == 0 {
		out = string(p.Tools) // what the search found is its output
	}
	status, errText := session.ResultOK, ""
	if m := exitCode.FindStringSubmatch(out); m != nil && m[1] != "0" {
		status, errText = session.ResultError, "exit status "+m[1]
	}
	c.b.result(n, p.CallID, out, status, errText, ts, c.b.latency(p.CallID, ts), nil)
}

// eventMsg imports an event: a prompt, usage, the end state, an error;
// the rest repeats what a response_item records or is not part of the
// conversation.
func (c *codexImport) eventMsg(x codexRec, ts time.Time) {
	p, n := x.p, x.n
	switch p.Type {
	case "user_message":
		c.resp.flush(c.b)
		c.userMessage(x, ts)
	case "token_count":
		c.tokenCount(p, n)
	case "task_complete":
		c.status = "task_complete"
		if len(p.Error) > 0 && string(p.Error) != "null" {
			c.status = "task_complete with error"
		}
	case "turn_aborted":
		c.status = "turn_aborted"
		if p.Reason != "" {
			c.status += ": " + p.Reason
		}
	case "error":
		c.resp.flush(c.b)
		var msg string
		_ = json.Unmarshal(p.Message, &msg)
		c.b.add(session.Event{Kind: session.KindError, TS: ts, Reason: "source_error", Error: msg})
	case "agent_message", "agent_reasoning", "exec_command_end", "patch_apply_end", "mcp_tool_call_end", "web_search_end",
		"item_completed", "image_generation_end", "view_image_tool_call", "dynamic_tool_call_request", "dynamic_tool_call_response":
		c.b.note(n, CodeSkipped, "event_msg %s repeats what a response_item records", p.Type)
	default:
		c.b.note(n, CodeSkipped, "event_msg %s; not part of the conversation", p.Type)
	}
}

// userMessage adds the prompt an event_msg carries, with its images.
func (c *codexImport) userMessage(x codexRec, ts time.Time) {
	var msg string
	_ = json.Unmarshal(x.p.Message, &msg)
	attrs := map[string]any{}
	var um map[string]json.RawMessage
	_ = json.Unmarshal(x.l.Payload, &um)
	for _, k := range []string{"images", "local_images"} {
		if v, ok := um[k]; ok && string(v) != "[]" && string(v) != "null" {
			attrs[k] = v
		}
	}
	c.b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: msg, Attrs: marshalAttrs(attrs)})
}

// tokenCount puts a token_count's usage on the response before it that
// has none.
func (c *codexImport) tokenCount(p codexPayload, n int) {
	b := c.b
	if p.Info == nil || p.Info.Last == nil {
		b.note(n, CodeSkipped, "token_count without usage (rate limits only)")
		return
	}
	c.resp.flush(b)
	u := p.Info.Last
	if b.lastCall < 0 || b.evs[b.lastCall].InputTokens+b.evs[b.lastCall].OutputTokens > 0 {
		b.note(n, CodeSkipped, "token_count with no response before it that lacks usage")
		return
	}
	c.hasUsage = true
	// OpenAI's input_tokens already holds the cached ones.
	bill := pricing.Usage{Input: u.InputTokens, CacheRead: u.CachedInput, CacheCreation: u.CacheWriteInput, Output: u.OutputTokens}
	mc := &b.evs[b.lastCall]
	setUsage(mc, bill)
	mc.CostUSD = pricing.CostOf(priceModel(mc.Model), bill)
	if a := &b.evs[b.lastCall-1]; a.Kind == session.KindAssistantMessage {
		a.InputTokens, a.OutputTokens = bill.Input, bill.Output
	}
}

// finish completes the header: what the rollout did not record, its
// end state.
func (c *codexImport) finish(path string) (*Session, error) {
	b := c.b
	if !c.metaSeen && len(b.evs) == 0 {
		return nil, fmt.Errorf("import codex %s: no session_meta or response items; is this a Codex rollout?", path)
	}
	if !c.hasUsage {
		b.notRecorded(session.NotRecordedUsage)
	}
	if c.model == "" {
		b.notRecorded("model")
	}
	b.notRecorded("tool error flags (a failed command is read from its exit code)")
	id, _ := b.attrs["source_session_id"].(string)
	b.hdr.Name = "codex " + id
	b.endState(c.status)
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

func init() {
	Register(Format{
		Name:   FormatCodex,
		Doc:    "Codex CLI rollout JSONL (~/.codex/sessions/…/rollout-*.jsonl)",
		Exts:   []string{".jsonl"},
		Detect: detectCodex,
		Import: func(path string) ([]*Session, error) { return one(importCodex(path)) },
	})
}

// codexLineTypes are the rollout's record types.
var codexLineTypes = map[string]bool{"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true}

// detectCodex claims JSON lines that are each {timestamp, type, payload},
// at least one of a rollout's record types.
func detectCodex(h *Head) bool {
	lines, ok := h.Lines()
	if !ok {
		return false
	}
	known := false
	for _, l := range lines {
		if !hasKeys(l, "timestamp", "type", "payload") {
			return false
		}
		known = known || codexLineTypes[StringOf(l, "type")]
	}
	return known
}
