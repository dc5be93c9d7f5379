package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentctl/agentctl/internal/provider/gemini"
	"github.com/agentctl/agentctl/internal/session"
)

// API names the wire protocol of a model request.
type API string

// The model APIs the proxy speaks.
const (
	APIChat        API = "chat_completions" // OpenAI POST /v1/chat/completions
	APIResponses   API = "responses"        // OpenAI POST /v1/responses
	APIMessages    API = "messages"         // Anthropic POST /v1/messages
	APICountTokens API = "count_tokens"     // Anthropic POST /v1/messages/count_tokens
	APIModels      API = "models"           // OpenAI/Anthropic GET /v1/models
	// Gemini POST /v1beta/models/{model}:generateContent and
	// :streamGenerateContent (the model and whether it streams are in
	// the path: internal/provider/gemini).
	APIGemini API = "gemini"
	// Gemini POST /v1beta/models/{model}:countTokens.
	APIGeminiCount API = "gemini_count_tokens"
)

// Provider returns the provider whose protocol a is: "openai",
// "anthropic" or "gemini".
func (a API) Provider() string {
	switch a {
	case APIMessages, APICountTokens:
		return "anthropic"
	case APIGemini, APIGeminiCount:
		return gemini.Name
	}
	return "openai"
}

// counts reports whether a asks for a token count: answered locally,
// not a model call.
func (a API) counts() bool { return a == APICountTokens || a == APIGeminiCount }

// ModelCall reports whether a request of a is a model call (recorded,
// replayed, counted), not a model list or a token count.
func (a API) ModelCall() bool { return a != APIModels && !a.counts() }

// Call is one model request as the proxy parsed it, handed to the Policy
// and to the Backend. Messages is the provider-neutral history (roles
// user, assistant, tool; system text apart in System), the same shape the
// runner projects, so request digests mean the same thing for both.
type Call struct {
	API      API
	Provider string // "openai", "anthropic" or "gemini"
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

// parseCall reads a model request body of api into c.
func parseCall(c *Call) error {
	if b := bytes.TrimSpace(c.Body); len(b) == 0 || b[0] != '{' {
		return badf("request body is not a JSON object")
	}
	switch c.API {
	case APIChat:
		return parseChat(c)
	case APIResponses:
		return parseResponses(c)
	case APIMessages, APICountTokens:
		return parseMessages(c)
	case APIGemini, APIGeminiCount:
		return parseGemini(c)
	}
	return badf("unknown api %q", c.API)
}

// content is a message content value decoded in the one pass of the
// request's Unmarshal: a string, or an array of parts whose text fields
// (text, input_text, output_text, refusal) are joined.
type content string

func (c *content) UnmarshalJSON(b []byte) error {
	*c = content(text(b))
	return nil
}

// text reads a content value that is a string or an array of parts with
// a text field (input_text, output_text, text), joined.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteString(p.Refusal)
	}
	return b.String()
}

func compactArgs(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	var b bytes.Buffer
	if s == "" || json.Compact(&b, []byte(s)) != nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(b.Bytes())
}

func parseChat(c *Call) error {
	var r struct {
		Model               string          `json:"model"`
		Stream              bool            `json:"stream"`
		MaxTokens           int64           `json:"max_tokens"`
		MaxCompletionTokens int64           `json:"max_completion_tokens"`
		Metadata            json.RawMessage `json:"metadata"`
		Messages            []struct {
			Role       string  `json:"role"`
			Content    content `json:"content"`
			Name       string  `json:"name"`
			ToolCallID string  `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.Body, &r); err != nil {
		return badf("chat completions request: %v", err)
	}
	if r.Model == "" {
		return badf("chat completions request: model is required")
	}
	if len(r.Messages) == 0 {
		return badf("chat completions request: messages must not be empty")
	}
	c.Model, c.Stream, c.Metadata = r.Model, r.Stream, r.Metadata
	c.MaxTokens = max(r.MaxTokens, r.MaxCompletionTokens)
	var system []string
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, string(m.Content))
		case "user":
			c.Messages = append(c.Messages, session.Message{Role: session.RoleUser, Content: string(m.Content)})
		case "assistant":
			am := session.Message{Role: session.RoleAssistant, Content: string(m.Content)}
			for _, tc := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, session.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: compactArgs(tc.Function.Arguments)})
			}
			c.Messages = append(c.Messages, am)
		case "tool", "function":
			c.Messages = append(c.Messages, session.Message{Role: session.RoleTool, Content: string(m.Content), ToolCallID: m.ToolCallID})
		default:
			return badf("chat completions request: messages[%d]: unknown role %q", i, m.Role)
		}
	}
	c.System = strings.Join(system, "\n\n")
	for _, t := range r.Tools {
		c.Tools = append(c.Tools, t.Function.Name)
	}
	return nil
}

func parseResponses(c *Call) error {
	var r struct {
		Model           string          `json:"model"`
		Stream          bool            `json:"stream"`
		MaxOutputTokens int64           `json:"max_output_tokens"`
		Instructions    json.RawMessage `json:"instructions"`
		Metadata        json.RawMessage `json:"metadata"`
		Input           json.RawMessage `json:"input"`
		Tools           []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.Body, &r); err != nil {
		return badf("responses request: %v", err)
	}
	if r.Model == "" {
		return badf("responses request: model is required")
	}
	c.Model, c.Stream, c.MaxTokens, c.Metadata = r.Model, r.Stream, r.MaxOutputTokens, r.Metadata
	system := []string{}
	if s := text(r.Instructions); s != "" {
		system = append(system, s)
	}
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		c.Messages = []session.Message{{Role: session.RoleUser, Content: s}}
	} else {
		var items []struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Input     string          `json:"input"`
			Output    json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(r.Input, &items); err != nil {
			return badf("responses request: input: want a string or an array of items: %v", err)
		}
		for i, it := range items {
			switch {
			case it.Type == "function_call" || it.Type == "custom_tool_call":
				args := compactArgs(it.Arguments)
				if it.Type == "custom_tool_call" {
					args, _ = json.Marshal(map[string]string{"input": it.Input})
				}
				tc := session.ToolCall{ID: it.CallID, Name: it.Name, Args: args}
				if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == session.RoleAssistant && c.Messages[n-1].Seq == -1 {
					c.Messages[n-1].ToolCalls = append(c.Messages[n-1].ToolCalls, tc)
				} else {
					c.Messages = append(c.Messages, session.Message{Role: session.RoleAssistant, ToolCalls: []session.ToolCall{tc}, Seq: -1})
				}
				continue
			case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
				c.Messages = append(c.Messages, session.Message{Role: session.RoleTool, Content: text(it.Output), ToolCallID: it.CallID})
			case it.Type == "reasoning" || it.Type == "item_reference":
				continue
			case it.Type == "message" || it.Type == "":
				switch it.Role {
				case "system", "developer":
					system = append(system, text(it.Content))
				case "user":
					c.Messages = append(c.Messages, session.Message{Role: session.RoleUser, Content: text(it.Content)})
				case "assistant":
					// One assistant turn may be a message item followed by
					// its function_call items: they join it.
					c.Messages = append(c.Messages, session.Message{Role: session.RoleAssistant, Content: text(it.Content), Seq: -1})
					continue
				default:
					return badf("responses request: input[%d]: unknown role %q", i, it.Role)
				}
			default:
				// Items this version does not model (web_search_call, …)
				// are not messages; they stay in the raw request artifact.
				continue
			}
		}
	}
	for i := range c.Messages {
		c.Messages[i].Seq = 0
	}
	if len(c.Messages) == 0 {
		return badf("responses request: input must not be empty")
	}
	c.System = strings.Join(system, "\n\n")
	for _, t := range r.Tools {
		if t.Name != "" {
			c.Tools = append(c.Tools, t.Name)
		}
	}
	return nil
}

// parseGemini reads a Gemini request, whose model and method are in its
// path (c.Path).
func parseGemini(c *Call) error {
	model, method, ok, err := gemini.Route(c.Path)
	if !ok || err != nil {
		return badf("gemini request: path %q: want /%s/models/<model>:%s or :%s", c.Path, gemini.APIVersion, gemini.MethodGenerate, gemini.MethodStream)
	}
	g, err := gemini.ParseRequest(model, method, c.Body)
	if err != nil {
		return badf("%v", err)
	}
	c.Model, c.Stream, c.MaxTokens, c.System = g.Model, g.Stream, g.MaxTokens, g.System
	c.Messages, c.Tools, c.failed = g.Messages, g.Tools, g.Failed
	return nil
}

func parseMessages(c *Call) error {
	var r struct {
		Model     string          `json:"model"`
		Stream    bool            `json:"stream"`
		MaxTokens int64           `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Metadata  json.RawMessage `json:"metadata"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.Body, &r); err != nil {
		return badf("messages request: %v", err)
	}
	if r.Model == "" {
		return badf("messages request: model is required")
	}
	if len(r.Messages) == 0 {
		return badf("messages request: messages must not be empty")
	}
	if c.API == APIMessages && r.MaxTokens <= 0 {
		return badf("messages request: max_tokens is required")
	}
	c.Model, c.Stream, c.MaxTokens, c.Metadata = r.Model, r.Stream, r.MaxTokens, r.Metadata
	var system []string
	if s := text(r.System); s != "" {
		system = append(system, s)
	}
	for i, m := range r.Messages {
		role := session.RoleUser
		switch m.Role {
		case "user":
		case "assistant":
			role = session.RoleAssistant
		case "system":
			// Claude Code (2.1.328, its default model) puts its
			// environment (working directory, OS, tool list) in a system
			// message after the first user message: system text, as the
			// chat API's system messages are, wherever it stands.
			system = append(system, text(m.Content))
			continue
		default:
			return badf("messages request: messages[%d]: unknown role %q", i, m.Role)
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			c.Messages = append(c.Messages, session.Message{Role: role, Content: s})
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return badf("messages request: messages[%d].content: want a string or an array of blocks: %v", i, err)
		}
		msg := session.Message{Role: role}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_use", "server_tool_use":
				msg.ToolCalls = append(msg.ToolCalls, session.ToolCall{ID: b.ID, Name: b.Name, Args: compactArgs(string(b.Input))})
			case "tool_result":
				if b.IsError {
					if c.failed == nil {
						c.failed = map[string]bool{}
					}
					c.failed[b.ToolUseID] = true
				}
				c.Messages = append(c.Messages, session.Message{Role: session.RoleTool, Content: text(b.Content), ToolCallID: b.ToolUseID})
			}
		}
		msg.Content = strings.Join(texts, "")
		if msg.Content != "" || len(msg.ToolCalls) > 0 || (role == session.RoleAssistant) {
			c.Messages = append(c.Messages, msg)
		}
	}
	c.System = strings.Join(system, "\n\n")
	for _, t := range r.Tools {
		c.Tools = append(c.Tools, t.Name)
	}
	return nil
}
