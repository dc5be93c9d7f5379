package transcript

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// FormatCopilot is GitHub Copilot CLI's session log
// (~/.copilot/session-state/<session id>/events.jsonl).
const FormatCopilot = "copilot"

// How Copilot CLI writes a session: one event a line, {type, data, id,
// timestamp, parentId}. session.start names the session, its version,
// model and folder; system.message holds the system prompt;
// session.usage_record is the usage of one API call (apiCallId) and comes
// before the assistant.message lines of that call; tool.execution_start
// and tool.execution_complete frame each tool call (toolCallId);
// session.shutdown ends it.

type copilotLine struct {
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
}

type copilotData struct {
	// session.start
	SessionID      string `json:"sessionId"`
	CopilotVersion string `json:"copilotVersion"`
	Producer       string `json:"producer"`
	SelectedModel  string `json:"selectedModel"`
	Context        struct {
		Cwd string `json:"cwd"`
	} `json:"context"`
	// user.message, system.message, assistant.message
	Content       string `json:"content"`
	ContentBlocks []struct {
		Content string `json:"content"`
	} `json:"contentBlocks"`
	AgentName          string `json:"agentName"`
	TransformedContent string `json:"transformedContent"`
	Model              string `json:"model"`
	APICallID          string `json:"apiCallId"`
	ToolRequests       []struct {
		ToolCallID string          `json:"toolCallId"`
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
	} `json:"toolRequests"`
	ReasoningText string `json:"reasoningText"`
	// session.usage_record
	Usage *struct {
		Model            string  `json:"model"`
		InputTokens      int64   `json:"inputTokens"`
		OutputTokens     int64   `json:"outputTokens"`
		CacheReadTokens  int64   `json:"cacheReadTokens"`
		CacheWriteTokens int64   `json:"cacheWriteTokens"`
		APICallID        string  `json:"apiCallId"`
		FinishReason     string  `json:"finishReason"`
		Duration         float64 `json:"duration"`
		ProviderType     string  `json:"providerType"`
	} `json:"usage"`
	// tool.execution_*
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Arguments  json.RawMessage `json:"arguments"`
	Success    *bool           `json:"success"`
	Result     *struct {
		Content         string `json:"content"`
		DetailedContent string `json:"detailedContent"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
	// session.shutdown
	ShutdownType string `json:"shutdownType"`
	// session.model_change
	NewModel string `json:"newModel"`
}

// copilotImport is one Copilot CLI session being imported.
type copilotImport struct {
	b       *builder
	started bool
	model   string
	status  string
	usage   map[string]*pricing.Usage
	finish  map[string]string
	// provider: the provider type each API call's usage record names
	// (a BYOK provider's "openai", "anthropic", "azure").
	provider map[string]string
	cur      *turn
	curID    string
	curLine  int
	hasUsage bool
	// agent: the sub-agent's id (empty: the main session); toolCall: the
	// call of the main session that started it.
	agent, toolCall string
	// reasoning: an assistant.reasoning's text, for the next response.
	reasoning string
}

// importCopilot maps each API call (its assistant.message lines and its
// usage record) to one response, and each tool execution to an intent at
// its start and a result at its end.
func importCopilot(path string) ([]*Session, error) {
	data, file, err := readSource(path)
	if err != nil {
		return nil, err
	}
	main := newCopilotImport(file, data)
	// A sub-agent's events are in the same file, each with the
	// sub-agent's agentId at the top: each sub-agent is a child session.
	agents := map[string]*copilotImport{}
	var order []string
	readLines(data, main.b, func(n int, raw []byte) error {
		var probe struct {
			AgentID string `json:"agentId"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return err
		}
		if probe.AgentID == "" {
			return main.line(n, raw)
		}
		c := agents[probe.AgentID]
		if c == nil {
			c = newCopilotImport(file, data)
			c.agent = probe.AgentID
			agents[probe.AgentID] = c
			order = append(order, probe.AgentID)
		}
		c.b.records++
		return c.line(n, raw)
	})
	if !main.started {
		return nil, fmt.Errorf("import copilot %s: no session.start line; is this a Copilot CLI events.jsonl?", path)
	}
	s := main.finishSession()
	for _, id := range order {
		c := agents[id]
		child := c.finishSession()
		at, output := int64(0), lastAssistantText(child.Events)
		for _, e := range s.Events {
			if e.Kind == session.KindToolResult && c.toolCall != "" && e.CallID == c.toolCall {
				at, output = e.Seq-1, e.Output
				break
			}
		}
		link(s, child, at, output)
	}
	return []*Session{s}, nil
}

func newCopilotImport(file string, data []byte) *copilotImport {
	c := &copilotImport{b: newBuilder(FormatCopilot, file, data), usage: map[string]*pricing.Usage{}, finish: map[string]string{},
		provider: map[string]string{}}
	c.b.hdr.Provider = "github-copilot"
	return c
}

// finishSession completes the main session, or a sub-agent's (its part
// of the file is its agentId).
func (c *copilotImport) finishSession() *Session {
	c.flush()
	if !c.hasUsage {
		c.b.notRecorded(session.NotRecordedUsage)
	}
	c.b.notRecorded("tool definitions")
	c.b.endState(c.status)
	if c.agent != "" {
		return c.b.finish("agent " + c.agent)
	}
	return c.b.finish("")
}

func (c *copilotImport) flush() {
	if c.cur != nil {
		c.b.addTurn(*c.cur, c.curLine)
		c.cur, c.curID = nil, ""
	}
}

// line imports one event.
func (c *copilotImport) line(n int, raw []byte) error {
	var l copilotLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return err
	}
	var d copilotData
	if len(l.Data) > 0 && l.Data[0] == '{' {
		if err := json.Unmarshal(l.Data, &d); err != nil {
			return err
		}
	}
	ts, _ := parseTime(l.Timestamp)
	b := c.b
	if l.Type != "assistant.message" {
		c.flush()
	}
	switch l.Type {
	case "session.start":
		c.start(n, d, ts)
	case "user.message":
		attrs := map[string]any{}
		if d.TransformedContent != "" && d.TransformedContent != d.Content {
			attrs["transformed_content"] = d.TransformedContent // what the model was sent
		}
		b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: d.Content, Attrs: marshalAttrs(attrs)})
	case "system.message":
		text := d.Content
		if text == "" {
			var parts []string
			for _, cb := range d.ContentBlocks {
				parts = append(parts, cb.Content)
			}
			text = strings.Join(parts, "\n")
		}
		if b.hdr.System == "" {
			b.hdr.System = text
		} else if text != b.hdr.System {
			b.note(n, CodeSkipped, "a system message unlike the first (the header holds the first)")
		}
	case "session.usage_record":
		if u := d.Usage; u != nil {
			c.hasUsage = true
			// Copilot's inputTokens hold the cached ones, as OpenAI's do.
			c.usage[u.APICallID] = &pricing.Usage{Input: u.InputTokens, CacheRead: u.CacheReadTokens, CacheCreation: u.CacheWriteTokens, Output: u.OutputTokens}
			c.finish[u.APICallID] = u.FinishReason
			c.provider[u.APICallID] = u.ProviderType
		}
	case "assistant.message":
		c.assistant(n, d, ts)
	case "tool.execution_start":
		b.intent(session.ToolCall{ID: d.ToolCallID, Name: d.ToolName, Args: argsObject(d.Arguments)}, ts)
	case "tool.execution_complete":
		c.result(n, d, ts)
	case "session.model_change":
		if d.NewModel != "" && d.NewModel != c.model {
			b.add(session.Event{Kind: session.KindModelChanged, TS: ts, Provider: b.hdr.Provider, Model: d.NewModel, Reason: "session.model_change"})
			c.model = d.NewModel
		}
	case "session.error":
		var e struct {
			ErrorType string `json:"errorType"`
			Message   string `json:"message"`
		}
		_ = json.Unmarshal(l.Data, &e)
		b.add(session.Event{Kind: session.KindError, TS: ts, Reason: "source_error", Error: e.Message,
			Attrs: marshalAttrs(map[string]any{"source_error_type": e.ErrorType})})
	case "subagent.started":
		c.started, c.toolCall = true, d.ToolCallID
		b.hdr.TS = ts
		b.hdr.Name = "copilot sub-agent " + d.AgentName
		b.attrs["source_agent_id"] = c.agent
		b.attrs["source_agent_name"] = d.AgentName
		if d.Model != "" {
			b.hdr.Model, c.model = d.Model, d.Model
		}
	case "subagent.completed":
		c.status = "completed"
	case "subagent.failed":
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(l.Data, &e)
		c.status = "failed"
		b.add(session.Event{Kind: session.KindError, TS: ts, Reason: "source_error", Error: e.Error})
	case "session.compaction_complete":
		var cc struct {
			Success bool   `json:"success"`
			Summary string `json:"summaryContent"`
		}
		_ = json.Unmarshal(l.Data, &cc)
		if !cc.Success {
			b.note(n, CodeSkipped, "a compaction that failed; the conversation is unchanged")
			break
		}
		b.add(session.Event{Kind: session.KindCompaction, TS: ts, Through: b.lastSeq(), Summary: cc.Summary})
	case "abort":
		var a struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(l.Data, &a)
		c.status = "abort: " + a.Reason
	case "assistant.reasoning":
		var r struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(l.Data, &r)
		c.reasoning = r.Content // the next response's thinking
	case "session.shutdown":
		c.status = d.ShutdownType
		if c.status == "" {
			c.status = "shutdown"
		}
	case "subagent.selected", "subagent.configured":
		b.note(n, CodeSkipped, "%s; the sub-agent's configuration (its tools, its effort)", l.Type)
	case "assistant.turn_start", "assistant.turn_end":
		b.note(n, CodeSkipped, "%s; the turn's messages are imported", l.Type)
	default:
		if copilotBookkeeping(l.Type) {
			b.note(n, CodeSkipped, "%s; not part of the conversation", l.Type)
		} else {
			b.note(n, CodeUnknownRecord, "event type %q is not one this importer knows; skipped", l.Type)
		}
	}
	return nil
}

func (c *copilotImport) start(n int, d copilotData, ts time.Time) {
	b := c.b
	if c.started {
		b.note(n, CodeSkipped, "another session.start (%s); the first is the header", d.SessionID)
		return
	}
	c.started = true
	b.hdr.TS = ts
	b.attrs["source_session_id"] = d.SessionID
	if d.CopilotVersion != "" {
		b.attrs["source_version"] = d.CopilotVersion
	}
	if d.Context.Cwd != "" {
		b.attrs["source_cwd"] = d.Context.Cwd
	}
	b.hdr.Model, c.model = d.SelectedModel, d.SelectedModel
	b.hdr.Name = "copilot " + d.SessionID
}

// assistant adds an assistant.message to the response of its API call.
func (c *copilotImport) assistant(n int, d copilotData, ts time.Time) {
	if c.cur == nil || d.APICallID == "" || d.APICallID != c.curID {
		c.flush()
		model := d.Model
		if model == "" {
			model = c.model
		}
		provider := c.provider[d.APICallID]
		if provider == "" {
			provider = c.b.hdr.Provider
		}
		t := turn{ts: ts, provider: provider, model: model, responseID: d.APICallID, attrs: map[string]any{},
			usage: c.usage[d.APICallID], finish: c.finish[d.APICallID]}
		c.cur, c.curID, c.curLine = &t, d.APICallID, n
	}
	if d.Content != "" {
		c.cur.appendText(d.Content)
	}
	if d.ReasoningText != "" {
		c.cur.attrs["reasoning"] = d.ReasoningText
	} else if c.reasoning != "" {
		c.cur.attrs["reasoning"] = c.reasoning
	}
	c.reasoning = ""
	for _, r := range d.ToolRequests {
		c.cur.calls = append(c.cur.calls, session.ToolCall{ID: r.ToolCallID, Name: r.Name, Args: argsObject(r.Arguments)})
	}
}

// result imports a tool's end: its output, or its error.
func (c *copilotImport) result(n int, d copilotData, ts time.Time) {
	out, status, errText := "", session.ResultOK, ""
	if d.Result != nil {
		out = d.Result.Content
	}
	if d.Success != nil && !*d.Success {
		status = session.ResultError
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(d.Error, &e) == nil && e.Message != "" {
			errText = e.Message
		} else if len(d.Error) > 0 {
			errText = string(d.Error)
		}
		if out == "" {
			out = errText
		}
	}
	attrs := map[string]any{}
	if d.Result != nil && d.Result.DetailedContent != "" && d.Result.DetailedContent != out {
		attrs["detailed_content"] = d.Result.DetailedContent
	}
	c.b.result(n, d.ToolCallID, out, status, errText, ts, c.b.latency(d.ToolCallID, ts), attrs)
}

// copilotBookkeeping reports whether an event type is one of the session
// log's own (settings, permissions, hooks, MCP servers, skills, plans,
// workflows, the UI) rather than the conversation: the families of the
// event types in the session-events schema Copilot CLI ships
// (schemas/session-events.schema.json of @github/copilot 1.0.102).
func copilotBookkeeping(t string) bool {
	for _, p := range []string{"session.", "permission.", "hook.", "mcp.", "mcp_app.", "skill.", "command.", "commands.",
		"elicitation.", "sampling.", "workflow.", "external_tool.", "exit_plan_mode.", "user_input.", "auto_mode_switch.",
		"capabilities.", "system.notification", "sandbox.", "model.", "tool.user_requested", "tool_search.", "assistant.intent",
		"assistant.usage", "assistant.turn_retry", "assistant.server_tool_progress", "assistant.fusion_", "subagent.deselected",
		"pending_messages.", "session_limits_exhausted.", "human_response.", "ui.", "instruction_discovered", "prompt_cache_break"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

func init() {
	Register(Format{
		Name:   FormatCopilot,
		Doc:    "GitHub Copilot CLI session log (~/.copilot/session-state/<id>/events.jsonl)",
		Exts:   []string{".jsonl"},
		Detect: detectCopilot,
		Import: importCopilot,
	})
}

// detectCopilot claims JSON lines whose first is Copilot CLI's
// session.start (its copilotVersion, or producer copilot-agent).
func detectCopilot(h *Head) bool {
	lines, ok := h.Lines()
	if !ok || StringOf(lines[0], "type") != "session.start" {
		return false
	}
	var d map[string]json.RawMessage
	if json.Unmarshal(lines[0]["data"], &d) != nil {
		return false
	}
	return StringOf(d, "copilotVersion") != "" || StringOf(d, "producer") == "copilot-agent"
}
