package otelsession

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/genai"
	"github.com/agentctl/agentctl/internal/session"
)

// The operations a span can be (what it maps to).
const (
	opChat      = "chat"         // a model_call and its assistant_message
	opTool      = "execute_tool" // a tool_intent and its tool_result
	opAgent     = "invoke_agent" // the agent's own span: names the session
	opEmbed     = "embeddings"   // kept in attrs
	opRetrieval = "retrieval"    // kept in attrs
	opOther     = ""             // kept in attrs
)

// The conventions a span is read by, as the model_call's attrs name them.
const (
	convGenAI         = "gen_ai"        // OpenTelemetry GenAI semconv, current and earlier
	convOpenInference = "openinference" // Arize OpenInference
	convOpenLLMetry   = "openllmetry"   // Traceloop OpenLLMetry
	convVercel        = "vercel_ai"     // Vercel AI SDK (ai.*)
)

// call is what one span says, whatever convention it was written in.
type call struct {
	op         string
	convention string
	provider   string
	reqModel   string
	respModel  string
	system     string
	// input is the request's messages (system ones left out: system);
	// hasInput says content was captured (an empty request is not no
	// content).
	input    []session.Message
	hasInput bool
	// output is the answer (role assistant); hasOutput as hasInput.
	output    session.Message
	refusal   string
	hasOutput bool
	tools     []string // the tool definitions' names, in order
	finish    string
	in, out   int64
	cacheRead int64
	cacheMade int64
	// reasoning is the output tokens spent reasoning (counted in out too).
	reasoning int64
	maxTokens int64
	respID    string
	stream    bool
	// compacted: the emitter says this call's input is a compacted view
	// of the conversation (gen_ai.conversation.compacted, only ever true).
	compacted bool

	toolName   string
	toolCallID string
	toolArgs   json.RawMessage
	toolResult string
	hasResult  bool
	toolFailed bool // the result says the tool failed (a ToolMessage's status error)

	agentName string
}

// sessionKey is the conversation a span names itself part of, if any:
// session.id (OpenInference, and a common resource attribute),
// gen_ai.conversation.id (GenAI), the Vercel AI SDK's and OpenLLMetry's
// metadata of that name.
func sessionKey(sp *span) string {
	if k := sp.Attrs.str(sessionKeys...); k != "" {
		return k
	}
	return sp.Resource.str(sessionKeys...)
}

// sessionKeys are the attributes that name a span's session, in the
// order they are read.
var sessionKeys = []string{"session.id", "gen_ai.conversation.id", "ai.telemetry.metadata.sessionId", "ai.telemetry.metadata.session_id", "traceloop.association.properties.session_id"}

// originKeys are the resource attributes that tell one client process
// from another (the OpenTelemetry SDKs' resource detectors set them). Two
// users of one app ask the same first question: their keyless traces
// extend each other's conversations, and only these tell them apart.
var originKeys = []string{"service.namespace", "service.name", "service.instance.id", "host.id", "host.name", "process.pid", "container.id", "k8s.pod.uid"}

// origin is the process a span came from, as its resource names it: the
// values of originKeys it has, in JSON (an object, keys sorted, as the
// header keeps it); "" when it has none. Traces whose conversations
// match but whose origins differ are not one session.
func origin(sp *span) string {
	o := map[string]string{}
	for _, k := range originKeys {
		if v := sp.Resource.str(k); v != "" {
			o[k] = v
		}
	}
	return originOf(o)
}

// originOf is the origin of a set of resource values (a span's, or the
// ones a session's header kept).
func originOf(o map[string]string) string {
	if len(o) == 0 {
		return ""
	}
	b, _ := json.Marshal(o) // keys sorted
	return string(b)
}

// operation decides what a span is, by the first convention that says.
func operation(sp *span) (op, conv string) {
	a := sp.Attrs
	switch a.str("gen_ai.operation.name") {
	case "chat", "generate_content", "text_completion", "completion":
		return opChat, convGenAI
	case "execute_tool":
		return opTool, convGenAI
	case "invoke_agent", "create_agent", "invoke_workflow":
		return opAgent, convGenAI
	case "embeddings":
		return opEmbed, convGenAI
	case "retrieval":
		return opRetrieval, convGenAI
	}
	switch strings.ToUpper(a.str("openinference.span.kind")) {
	case "LLM":
		return opChat, convOpenInference
	case "TOOL":
		return opTool, convOpenInference
	case "AGENT", "CHAIN":
		return opAgent, convOpenInference
	case "EMBEDDING":
		return opEmbed, convOpenInference
	case "RETRIEVER", "RERANKER":
		return opRetrieval, convOpenInference
	case "":
	default:
		return opOther, convOpenInference
	}
	if strings.HasPrefix(sp.Name, "ai.") || a.str("ai.operationId") != "" {
		id := a.str("ai.operationId")
		if id == "" {
			id = sp.Name
		}
		switch {
		case strings.HasSuffix(id, ".doGenerate"), strings.HasSuffix(id, ".doStream"):
			return opChat, convVercel
		case id == "ai.toolCall":
			return opTool, convVercel
		case strings.HasPrefix(id, "ai.embed"):
			return opEmbed, convVercel
		case strings.HasPrefix(id, "ai.generate"), strings.HasPrefix(id, "ai.stream"):
			return opAgent, convVercel
		}
		return opOther, convVercel
	}
	switch a.str("llm.request.type") {
	case "chat", "completion":
		return opChat, convOpenLLMetry
	case "embedding":
		return opEmbed, convOpenLLMetry
	}
	switch a.str("traceloop.span.kind") {
	case "tool":
		return opTool, convOpenLLMetry
	case "agent", "workflow":
		return opAgent, convOpenLLMetry
	case "task":
		return opOther, convOpenLLMetry
	}
	if a.str("gen_ai.system", "gen_ai.provider.name") != "" && (a.str("gen_ai.request.model") != "" || a.str("gen_ai.prompt.0.role") != "") {
		return opChat, convOpenLLMetry
	}
	return opOther, ""
}

// read maps a span, and the content log records joined to it, to a call.
func read(sp *span, logs []*logRec) call {
	c := call{}
	c.op, c.convention = operation(sp)
	a := sp.Attrs
	// The current gen_ai.client.inference.operation.details event carries
	// the span's content attributes: laid under the span's own.
	for _, l := range logs {
		if l.Event == "gen_ai.client.inference.operation.details" {
			for k, v := range l.Attrs {
				if _, ok := a[k]; !ok {
					a[k] = v
				}
			}
		}
	}
	c.provider = a.str("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system", "ai.model.provider")
	if c.provider == "" && c.convention == convOpenInference {
		// LangChain's run metadata, which OpenInference keeps as
		// metadata (JSON): ls_provider names the provider.
		var md struct {
			Provider string `json:"ls_provider"`
		}
		if json.Unmarshal([]byte(a.str("metadata")), &md) == nil {
			c.provider = md.Provider
		}
	}
	c.reqModel = a.str("gen_ai.request.model", "llm.model_name", "ai.model.id")
	c.respModel = a.str("gen_ai.response.model", "ai.response.model", "llm.model_name")
	c.respID = a.str("gen_ai.response.id", "ai.response.id")
	c.in, _ = a.int("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "ai.usage.inputTokens", "ai.usage.promptTokens", "llm.usage.prompt_tokens")
	c.out, _ = a.int("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion", "ai.usage.outputTokens", "ai.usage.completionTokens", "llm.usage.completion_tokens")
	c.cacheRead, _ = a.int("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens", "llm.token_count.prompt_details.cache_read", "ai.usage.cachedInputTokens", "ai.usage.inputTokenDetails.cacheReadTokens")
	// The newer name first: an SDK moving to semantic-conventions-genai
	// may send both, and the newer is the one it means.
	c.cacheMade, _ = a.int(genai.CacheWriteInputTokens, "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens", "llm.token_count.prompt_details.cache_write", "ai.usage.inputTokenDetails.cacheWriteTokens")
	c.reasoning, _ = a.int("gen_ai.usage.reasoning.output_tokens", "llm.token_count.completion_details.reasoning")
	c.compacted = a.str(genai.ConversationCompacted) == "true"
	c.maxTokens, _ = a.int("gen_ai.request.max_tokens", "ai.settings.maxOutputTokens", "ai.settings.maxTokens", "llm.request.max_tokens")
	if b, ok := a["gen_ai.request.stream"].(bool); ok {
		c.stream = b
	}
	if fr := a.strs("gen_ai.response.finish_reasons"); len(fr) > 0 {
		c.finish = fr[0]
	} else if f := a.str("ai.response.finishReason", "llm.response.finish_reason", "llm.finish_reason"); f != "" {
		c.finish = f
	}
	c.agentName = a.str("gen_ai.agent.name", "ai.telemetry.functionId")

	switch c.op {
	case opChat:
		readGenAIContent(&c, a)
		if !c.hasInput && !c.hasOutput {
			readEventContent(&c, sp, logs)
		}
		if !c.hasInput && !c.hasOutput {
			readOpenInference(&c, a)
		}
		if !c.hasInput && !c.hasOutput {
			readOpenLLMetry(&c, a)
		}
		if !c.hasInput && !c.hasOutput {
			readVercel(&c, a)
		}
		if len(c.tools) == 0 {
			c.tools = toolNames(a)
		}
		synthesizeCallIDs(&c)
		if c.respID == "" && c.convention == convOpenInference {
			// OpenInference keeps the provider's response as output.value.
			var out struct {
				ID    string `json:"id"`
				Model string `json:"model"`
			}
			if json.Unmarshal([]byte(a.str("output.value")), &out) == nil {
				c.respID = out.ID
				if out.Model != "" {
					c.respModel = out.Model
				}
			}
		}
	case opTool:
		c.toolName = a.str("gen_ai.tool.name", "tool.name", "ai.toolCall.name", "traceloop.entity.name")
		c.toolCallID = a.str("gen_ai.tool.call.id", "tool_call.id", "tool.call_id", "ai.toolCall.id")
		args := a.str("gen_ai.tool.call.arguments", "tool.parameters", "ai.toolCall.args", "ai.toolCall.input", "traceloop.entity.input")
		if c.convention == convOpenInference && args == "" {
			args = a.str("input.value")
		}
		c.toolArgs = jsonArgs(args)
		if _, ok := a["gen_ai.tool.call.result"]; ok {
			c.toolResult, c.hasResult = a.str("gen_ai.tool.call.result"), true
		} else if r := a.str("ai.toolCall.result", "ai.toolCall.output", "traceloop.entity.output"); r != "" {
			c.toolResult, c.hasResult = r, true
		} else if c.convention == convOpenInference {
			if _, ok := a["output.value"]; ok {
				c.toolResult, c.hasResult = a.str("output.value"), true
			}
		}
		c.toolResult = unquote(c.toolResult)
		if content, id, failed, ok := toolMessage(c.toolResult); ok {
			c.toolResult, c.toolFailed = content, failed
			if c.toolCallID == "" {
				c.toolCallID = id
			}
		}
	}
	return c
}

// toolMessage reads a tool result that is LangChain's serialized
// ToolMessage (OpenInference's LangChain instrumentation writes the
// tool's return value so, alone or as {"output": …}): the tool's output
// (kwargs.content), the call it answers (kwargs.tool_call_id) and whether
// it failed (kwargs.status "error"). ok is false for anything else.
func toolMessage(s string) (content, callID string, failed, ok bool) {
	if !strings.Contains(s, "ToolMessage") {
		return "", "", false, false
	}
	var v struct {
		LC     int             `json:"lc"`
		Type   string          `json:"type"`
		ID     []string        `json:"id"`
		Kwargs map[string]any  `json:"kwargs"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal([]byte(s), &v) != nil {
		return "", "", false, false
	}
	if v.LC == 0 && len(v.Output) > 0 {
		return toolMessage(string(v.Output))
	}
	if v.LC == 0 || v.Type != "constructor" || len(v.ID) == 0 || v.ID[len(v.ID)-1] != "ToolMessage" || v.Kwargs == nil {
		return "", "", false, false
	}
	callID, _ = v.Kwargs["tool_call_id"].(string)
	status, _ := v.Kwargs["status"].(string)
	return textOf(v.Kwargs["content"]), callID, status == "error", true
}

// synthesizeCallIDs gives the tool calls of a model call's conversation
// that carry no id (OpenInference's LangChain instrumentation writes none)
// one, and each tool message that names no call the id of the call it
// answers. Without it every such call is the call "": the second one and
// its result collapse into the first. The id derives from the call's
// place in the conversation (the message's index, the call's index in
// it), which the next request repeats, so call N's answer and request
// N+1's copy of it agree, across traces and restarts. A tool message
// answers, in order, the first call of the assistant message before it
// that no earlier tool message answered: of its tool, when it names one.
func synthesizeCallIDs(c *call) {
	var open []session.ToolCall // calls of the last assistant message not answered yet
	for i := range c.input {
		m := &c.input[i]
		switch m.Role {
		case session.RoleAssistant:
			m.ToolCalls = withCallIDs(m.ToolCalls, i)
			open = append(open[:0], m.ToolCalls...)
		case session.RoleTool:
			k := -1
			for j, tc := range open {
				if m.ToolCallID != "" && tc.ID == m.ToolCallID || m.ToolCallID == "" && (m.Name == "" || tc.Name == m.Name) {
					k = j
					break
				}
			}
			if k < 0 {
				continue
			}
			if m.ToolCallID == "" {
				m.ToolCallID = open[k].ID
			}
			open = append(open[:k], open[k+1:]...)
		}
	}
	c.output.ToolCalls = withCallIDs(c.output.ToolCalls, len(c.input))
}

// withCallIDs gives each call of the message at index msg of a
// conversation that has no id its synthesized one (synthesizeCallIDs).
func withCallIDs(tcs []session.ToolCall, msg int) []session.ToolCall {
	for j := range tcs {
		if tcs[j].ID == "" {
			tcs[j].ID = fmt.Sprintf("otlp-call-%d-%d", msg, j)
		}
	}
	return tcs
}

// unquote reads a tool result that an SDK wrote JSON-encoded a second
// time (the Vercel AI SDK's ai.toolCall.result and gen_ai.tool.call.result
// of a tool that returned a string: "\"{\\\"order_id\\\"…\""): the string
// the tool returned, as the next request carries it.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' {
		return s
	}
	var out string
	if json.Unmarshal([]byte(s), &out) == nil {
		return out
	}
	return s
}

// jsonArgs keeps tool arguments as the JSON object they are; a value
// that is not JSON becomes a JSON string, so args stays JSON.
func jsonArgs(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// argsOf turns the arguments of a tool call as a convention writes them
// (a JSON string, or a structured object) into JSON.
func argsOf(v any) json.RawMessage {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return jsonArgs(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil
		}
		return b
	}
}

// textOf renders a content value (a string, or parts) as text.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any:
		var parts []string
		for _, p := range x {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					parts = append(parts, t)
					continue
				}
				if t, ok := m["content"].(string); ok {
					parts = append(parts, t)
					continue
				}
			}
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "")
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// decodeJSON reads an attribute that is JSON in a string, or already a
// structured value (languages that can put structures on attributes).
func decodeJSON(v any) (any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case string:
		var out any
		if json.Unmarshal([]byte(x), &out) != nil {
			return nil, false
		}
		return out, true
	default:
		return x, true
	}
}

// readGenAIContent reads the current GenAI content attributes:
// gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions
// (JSON: messages of typed parts, per gen-ai-input-messages.json).
func readGenAIContent(c *call, a attrs) {
	if v, ok := decodeJSON(a["gen_ai.input.messages"]); ok {
		c.hasInput = true
		for _, m := range asList(v) {
			mm, _ := m.(map[string]any)
			role, _ := mm["role"].(string)
			msgs := partsMessages(role, asList(mm["parts"]))
			for _, x := range msgs {
				if x.Role == session.RoleSystem {
					c.system = joinText(c.system, x.Content)
					continue
				}
				c.input = append(c.input, x)
			}
		}
	}
	if v, ok := decodeJSON(a["gen_ai.system_instructions"]); ok {
		var texts []string
		for _, p := range asList(v) {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["content"].(string); ok {
					texts = append(texts, t)
				}
			}
		}
		c.system = strings.Join(texts, "\n")
	}
	if v, ok := decodeJSON(a["gen_ai.output.messages"]); ok {
		c.hasOutput = true
		for _, m := range asList(v) {
			mm, _ := m.(map[string]any)
			for _, x := range partsMessages(session.RoleAssistant, asList(mm["parts"])) {
				if x.Role == session.RoleAssistant {
					c.output.Content += x.Content
					c.output.ToolCalls = append(c.output.ToolCalls, x.ToolCalls...)
				}
			}
			if f, _ := mm["finish_reason"].(string); f != "" && c.finish == "" {
				c.finish = f
			}
		}
		c.output.Role = session.RoleAssistant
	}
	if v, ok := decodeJSON(a["gen_ai.tool.definitions"]); ok {
		for _, d := range asList(v) {
			if m, ok := d.(map[string]any); ok {
				name, _ := m["name"].(string)
				if f, ok := m["function"].(map[string]any); ok && name == "" {
					name, _ = f["name"].(string)
				}
				if name != "" {
					c.tools = append(c.tools, name)
				}
			}
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n" + b
}

// partsMessages turns one GenAI message (a role and its parts) into
// session messages: text and tool calls stay in one message of the role;
// each tool_call_response is a tool message of its own.
func partsMessages(role string, parts []any) []session.Message {
	m := session.Message{Role: role}
	var out []session.Message
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		typ, _ := pm["type"].(string)
		switch typ {
		case "text":
			m.Content += textOf(pm["content"])
		case "tool_call":
			id, _ := pm["id"].(string)
			name, _ := pm["name"].(string)
			m.ToolCalls = append(m.ToolCalls, session.ToolCall{ID: id, Name: name, Args: argsOf(pm["arguments"])})
		case "tool_call_response":
			id, _ := pm["id"].(string)
			out = append(out, session.Message{Role: session.RoleTool, ToolCallID: id, Content: textOf(pm["response"])})
		}
	}
	if role == "tool" {
		return out
	}
	if m.Content != "" || len(m.ToolCalls) > 0 || len(out) == 0 {
		out = append([]session.Message{m}, out...)
	}
	return out
}

// readEventContent reads the earlier GenAI content: per-message events
// (gen_ai.system.message, gen_ai.user.message, gen_ai.assistant.message,
// gen_ai.tool.message, gen_ai.choice), as span events (attributes) or as
// log records (body), in time order.
func readEventContent(c *call, sp *span, logs []*logRec) {
	type ev struct {
		name string
		body map[string]any
		at   int64
	}
	var evs []ev
	for _, e := range sp.Events {
		body := map[string]any{}
		for k, v := range e.Attrs {
			body[strings.TrimPrefix(k, "gen_ai.event.")] = v
		}
		if s, ok := e.Attrs["gen_ai.prompt"].(string); ok && e.Name == "gen_ai.content.prompt" {
			body = map[string]any{"prompt": s}
		}
		evs = append(evs, ev{e.Name, body, e.Time.UnixNano()})
	}
	for _, l := range logs {
		body, _ := l.Body.(map[string]any)
		if body == nil {
			body = map[string]any{}
			if s, ok := l.Body.(string); ok {
				body["content"] = s
			}
		}
		evs = append(evs, ev{l.Event, body, l.Time.UnixNano()})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	// With content capture off the instrumentation still sends the
	// events, with their structure (roles, tool call ids and names) and
	// no content or arguments: that is no content, not empty messages.
	captured := false
	for _, e := range evs {
		if hasContent(e.body) {
			captured = true
			break
		}
	}
	if !captured {
		return
	}
	for _, e := range evs {
		b := e.body
		switch e.name {
		case "gen_ai.system.message":
			c.hasInput = true
			c.system = joinText(c.system, textOf(b["content"]))
		case "gen_ai.user.message":
			c.hasInput = true
			c.input = append(c.input, session.Message{Role: session.RoleUser, Content: textOf(b["content"])})
		case "gen_ai.assistant.message":
			c.hasInput = true
			c.input = append(c.input, session.Message{Role: session.RoleAssistant, Content: textOf(b["content"]), ToolCalls: openaiCalls(b["tool_calls"])})
		case "gen_ai.tool.message":
			c.hasInput = true
			id, _ := b["id"].(string)
			c.input = append(c.input, session.Message{Role: session.RoleTool, ToolCallID: id, Content: textOf(b["content"])})
		case "gen_ai.choice":
			c.hasOutput = true
			msg, _ := b["message"].(map[string]any)
			c.output.Role = session.RoleAssistant
			c.output.Content += textOf(msg["content"])
			c.output.ToolCalls = append(c.output.ToolCalls, openaiCalls(msg["tool_calls"])...)
			if f, _ := b["finish_reason"].(string); f != "" && c.finish == "" {
				c.finish = f
			}
		}
	}
}

// hasContent reports whether an earlier-convention event body carries
// content: a content value, or a tool call's arguments.
func hasContent(b map[string]any) bool {
	if _, ok := b["content"]; ok {
		return true
	}
	if m, ok := b["message"].(map[string]any); ok {
		return hasContent(m)
	}
	for _, x := range asList(b["tool_calls"]) {
		m, _ := x.(map[string]any)
		f, _ := m["function"].(map[string]any)
		if _, ok := f["arguments"]; ok {
			return true
		}
	}
	return false
}

// openaiCalls reads tool calls in OpenAI's shape ({id, type, function:
// {name, arguments}}), as the earlier events carry them.
func openaiCalls(v any) []session.ToolCall {
	var out []session.ToolCall
	for _, x := range asList(v) {
		m, _ := x.(map[string]any)
		id, _ := m["id"].(string)
		f, _ := m["function"].(map[string]any)
		name, _ := f["name"].(string)
		out = append(out, session.ToolCall{ID: id, Name: name, Args: argsOf(f["arguments"])})
	}
	return out
}

// indexed collects flattened attributes prefix.N.rest into N → rest → value.
func indexed(a attrs, prefix string) []map[string]any {
	byN := map[int]map[string]any{}
	for k, v := range a {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		rest := k[len(prefix):]
		dot := strings.IndexByte(rest, '.')
		if dot < 0 {
			continue
		}
		n, err := strconv.Atoi(rest[:dot])
		if err != nil || n < 0 || n > 1<<16 {
			continue
		}
		if byN[n] == nil {
			byN[n] = map[string]any{}
		}
		byN[n][rest[dot+1:]] = v
	}
	ns := make([]int, 0, len(byN))
	for n := range byN {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	out := make([]map[string]any, 0, len(ns))
	for _, n := range ns {
		out = append(out, byN[n])
	}
	return out
}

// flatCalls reads the tool calls of one flattened message: its keys
// <callPrefix>N.<id|name|args key> (as indexed left them).
func flatCalls(m map[string]any, callPrefix, idKey, nameKey, argsKey string) []session.ToolCall {
	sub := attrs{}
	for k, v := range m {
		if strings.HasPrefix(k, callPrefix) {
			sub[k] = v
		}
	}
	var out []session.ToolCall
	for _, tc := range indexed(sub, callPrefix) {
		t := attrs(tc)
		out = append(out, session.ToolCall{ID: t.str(idKey), Name: t.str(nameKey), Args: jsonArgs(t.str(argsKey))})
	}
	return out
}

func roleOf(s string) string {
	switch s {
	case "human":
		return session.RoleUser
	case "ai", "model":
		return session.RoleAssistant
	case "function":
		return session.RoleTool
	}
	return s
}

// readOpenInference reads llm.input_messages.N.message.* and
// llm.output_messages.N.message.*.
func readOpenInference(c *call, a attrs) {
	read := func(prefix string) ([]session.Message, bool) {
		var out []session.Message
		rows := indexed(a, prefix)
		for _, r := range rows {
			m := attrs(r)
			msg := session.Message{
				Role:       roleOf(m.str("message.role")),
				Content:    m.str("message.content"),
				ToolCallID: m.str("message.tool_call_id"),
				ToolCalls:  flatCalls(r, "message.tool_calls.", "tool_call.id", "tool_call.function.name", "tool_call.function.arguments"),
			}
			if msg.Content == "" {
				var texts []string
				for _, p := range indexed(m, "message.contents.") {
					texts = append(texts, attrs(p).str("message_content.text"))
				}
				msg.Content = strings.Join(texts, "")
			}
			out = append(out, msg)
		}
		return out, len(rows) > 0
	}
	in, ok := read("llm.input_messages.")
	if ok {
		fillLangChainContent(in, a.str("input.value"))
		c.hasInput = true
		for _, m := range in {
			if m.Role == session.RoleSystem {
				c.system = joinText(c.system, m.Content)
				continue
			}
			c.input = append(c.input, m)
		}
	}
	out, ok := read("llm.output_messages.")
	if ok {
		c.hasOutput = true
		c.output.Role = session.RoleAssistant
		for _, m := range out {
			c.output.Content += m.Content
			c.output.ToolCalls = append(c.output.ToolCalls, m.ToolCalls...)
		}
	}
	if c.provider == "" {
		c.provider = a.str("llm.provider", "llm.system")
	}
}

// langChainRoles are LangChain's message classes and the roles they are.
var langChainRoles = map[string]string{"SystemMessage": session.RoleSystem, "HumanMessage": session.RoleUser,
	"AIMessage": session.RoleAssistant, "ToolMessage": session.RoleTool}

// fillLangChainContent gives the messages OpenInference's LangChain
// instrumentation wrote without content (a message whose content is a
// list of parts, as createAgent's system prompt is, gets only its role)
// their text from input.value, LangChain's serialized messages
// ({"messages": [[{lc, type, id: [..., "SystemMessage"], kwargs:
// {content}}, ...]]}), the one at the same index and of the same role.
func fillLangChainContent(msgs []session.Message, inputValue string) {
	empty := false
	for _, m := range msgs {
		empty = empty || (m.Content == "" && len(m.ToolCalls) == 0)
	}
	if !empty || !strings.Contains(inputValue, `"lc"`) {
		return
	}
	var v struct {
		Messages [][]struct {
			ID     []string       `json:"id"`
			Kwargs map[string]any `json:"kwargs"`
		} `json:"messages"`
	}
	if json.Unmarshal([]byte(inputValue), &v) != nil || len(v.Messages) != 1 || len(v.Messages[0]) != len(msgs) {
		return
	}
	for i, lc := range v.Messages[0] {
		m := &msgs[i]
		if m.Content != "" || len(m.ToolCalls) > 0 || len(lc.ID) == 0 || langChainRoles[lc.ID[len(lc.ID)-1]] != m.Role {
			continue
		}
		m.Content = textOf(lc.Kwargs["content"])
	}
}

// readOpenLLMetry reads gen_ai.prompt.N.* and gen_ai.completion.N.*.
func readOpenLLMetry(c *call, a attrs) {
	prompts := indexed(a, "gen_ai.prompt.")
	if len(prompts) > 0 {
		c.hasInput = true
	}
	for _, r := range prompts {
		m := attrs(r)
		msg := session.Message{Role: roleOf(m.str("role")), Content: m.str("content"), ToolCallID: m.str("tool_call_id"),
			ToolCalls: flatCalls(r, "tool_calls.", "id", "name", "arguments")}
		if msg.Role == session.RoleSystem {
			c.system = joinText(c.system, msg.Content)
			continue
		}
		c.input = append(c.input, msg)
	}
	comps := indexed(a, "gen_ai.completion.")
	if len(comps) > 0 {
		c.hasOutput = true
		c.output.Role = session.RoleAssistant
	}
	for _, r := range comps {
		m := attrs(r)
		c.output.Content += m.str("content")
		c.output.ToolCalls = append(c.output.ToolCalls, flatCalls(r, "tool_calls.", "id", "name", "arguments")...)
		if f := m.str("finish_reason"); f != "" && c.finish == "" {
			c.finish = f
		}
	}
}

// readVercel reads ai.prompt.messages (the model-level prompt of a
// doGenerate/doStream span), ai.response.text and ai.response.toolCalls.
func readVercel(c *call, a attrs) {
	if v, ok := decodeJSON(a["ai.prompt.messages"]); ok {
		c.hasInput = true
		for _, m := range asList(v) {
			mm, _ := m.(map[string]any)
			role, _ := mm["role"].(string)
			switch content := mm["content"].(type) {
			case string:
				if role == session.RoleSystem {
					c.system = joinText(c.system, content)
					continue
				}
				c.input = append(c.input, session.Message{Role: role, Content: content})
			case []any:
				msg := session.Message{Role: role}
				var results []session.Message
				for _, p := range content {
					pm, _ := p.(map[string]any)
					switch pm["type"] {
					case "text":
						s, _ := pm["text"].(string)
						msg.Content += s
					case "tool-call":
						id, _ := pm["toolCallId"].(string)
						name, _ := pm["toolName"].(string)
						args := pm["input"]
						if args == nil {
							args = pm["args"]
						}
						msg.ToolCalls = append(msg.ToolCalls, session.ToolCall{ID: id, Name: name, Args: argsOf(args)})
					case "tool-result":
						id, _ := pm["toolCallId"].(string)
						out := pm["output"]
						if out == nil {
							out = pm["result"]
						}
						if om, ok := out.(map[string]any); ok && om["value"] != nil && om["type"] != nil {
							out = om["value"] // v5: {type: "text"|"json", value}
						}
						results = append(results, session.Message{Role: session.RoleTool, ToolCallID: id, Content: textOf(out)})
					}
				}
				if role == session.RoleSystem {
					c.system = joinText(c.system, msg.Content)
					continue
				}
				if role != session.RoleTool {
					c.input = append(c.input, msg)
				}
				c.input = append(c.input, results...)
			}
		}
	}
	text, hasText := a["ai.response.text"].(string)
	calls, hasCalls := decodeJSON(a["ai.response.toolCalls"])
	if hasText || hasCalls {
		c.hasOutput = true
		c.output = session.Message{Role: session.RoleAssistant, Content: text}
		for _, x := range asList(calls) {
			m, _ := x.(map[string]any)
			id, _ := m["toolCallId"].(string)
			name, _ := m["toolName"].(string)
			args := m["input"]
			if args == nil {
				args = m["args"]
			}
			c.output.ToolCalls = append(c.output.ToolCalls, session.ToolCall{ID: id, Name: name, Args: argsOf(args)})
		}
	}
}

// toolNames reads the offered tools' names where a convention lists
// them: OpenInference llm.tools.N.tool.json_schema, OpenLLMetry
// llm.request.functions.N.name, Vercel ai.prompt.tools (JSON strings).
func toolNames(a attrs) []string {
	var out []string
	for _, r := range indexed(a, "llm.tools.") {
		var s struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal([]byte(attrs(r).str("tool.json_schema")), &s) == nil {
			if s.Name == "" {
				s.Name = s.Function.Name
			}
			if s.Name != "" {
				out = append(out, s.Name)
			}
		}
	}
	for _, r := range indexed(a, "llm.request.functions.") {
		if n := attrs(r).str("name"); n != "" {
			out = append(out, n)
		}
	}
	for _, t := range a.strs("ai.prompt.tools") {
		var s struct {
			Name string `json:"name"`
		}
		if json.Unmarshal([]byte(t), &s) == nil && s.Name != "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// describeSpan is what the session keeps of a span that maps to no event
// (an embeddings, retrieval or unknown span): its name, operation, times
// and attributes, so nothing is dropped silently.
func describeSpan(sp *span, op, conv string) map[string]any {
	m := map[string]any{
		"name":        sp.Name,
		"trace_id":    sp.TraceID,
		"span_id":     sp.SpanID,
		"start":       sp.Start,
		"duration_ms": sp.End.Sub(sp.Start).Milliseconds(),
	}
	if op != "" {
		m["operation"] = op
	}
	if conv != "" {
		m["convention"] = conv
	}
	if sp.Err != "" {
		m["error"] = sp.Err
	}
	if len(sp.Attrs) > 0 {
		m["attributes"] = map[string]any(sp.Attrs)
	}
	return m
}
