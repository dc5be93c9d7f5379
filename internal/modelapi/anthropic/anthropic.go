// Package anthropic registers Anthropic's Messages API: the client a
// spec's provider: anthropic runs with, and the proxy's /v1/messages and
// /v1/messages/count_tokens.
package anthropic

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
)

func init() {
	modelapi.Register(modelapi.API{
		Name:     "messages",
		Provider: "anthropic",
		KeyEnv:   provider.AnthropicKeyEnv,
		// input_tokens counts the uncached input only.
		InputExcludesCache: true,
		BaseURL:            provider.AnthropicBaseURL,
		Client: func(c modelapi.ClientConfig) (provider.Provider, error) {
			return provider.NewAnthropic(provider.AnthropicConfig{BaseURL: c.BaseURL, APIKey: c.APIKey, KeyEnv: c.KeyEnv, MaxRetries: c.MaxRetries})
		},
		Wire: messages{},
		// Anthropic's SDKs and Claude Code append /v1 themselves.
		Env: modelapi.Env{BaseURL: []string{"ANTHROPIC_BASE_URL"}, Key: []string{"ANTHROPIC_API_KEY"}, Model: []string{"ANTHROPIC_MODEL"}},
	})
}

// messages is the Messages API wire.
type messages struct{}

func (messages) Routes() []modelapi.Route {
	return []modelapi.Route{
		{Method: http.MethodPost, Path: "/v1/messages", Op: modelapi.OpGenerate, API: "messages"},
		{Method: http.MethodPost, Path: "/v1/messages/count_tokens", Op: modelapi.OpCountTokens, API: "count_tokens"},
	}
}

func badf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func (messages) ParseRequest(c *modelapi.Call) error {
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
	if c.Route.Op == modelapi.OpGenerate && r.MaxTokens <= 0 {
		return badf("messages request: max_tokens is required")
	}
	c.Model, c.Stream, c.MaxTokens, c.Metadata = r.Model, r.Stream, r.MaxTokens, r.Metadata
	var system []string
	if s := modelapi.Text(r.System); s != "" {
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
			system = append(system, modelapi.Text(m.Content))
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
				msg.ToolCalls = append(msg.ToolCalls, session.ToolCall{ID: b.ID, Name: b.Name, Args: modelapi.Args(string(b.Input))})
			case "tool_result":
				if b.IsError {
					if c.Failed == nil {
						c.Failed = map[string]bool{}
					}
					c.Failed[b.ToolUseID] = true
				}
				c.Messages = append(c.Messages, session.Message{Role: session.RoleTool, Content: modelapi.Text(b.Content), ToolCallID: b.ToolUseID})
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

func (messages) ParseResponse(body []byte, stream bool, reqModel string) (provider.Response, error) {
	return provider.ParseMessages(body, stream, reqModel)
}

func (messages) ParseError(status int, h http.Header, body []byte) *provider.Error {
	return provider.ParseError("anthropic", status, h, body)
}

func (messages) ResponseID(session string, turn int) string {
	return fmt.Sprintf("msg_%s_%d", session, turn)
}

func (messages) ErrorBody(typ, msg string) []byte {
	return modelapi.Marshal(modelapi.Obj{"type": "error", "error": modelapi.Obj{"type": typ, "message": msg}})
}

// Speaks claims a request with Anthropic's headers (modelapi.Sniffer).
func (messages) Speaks(h http.Header) bool {
	return h.Get("anthropic-version") != "" || h.Get("x-api-key") != ""
}

// SetKey is Anthropic's credential: x-api-key.
func (messages) SetKey(h http.Header, key string) { h.Set("X-Api-Key", key) }

func (messages) NewEncoder(w http.ResponseWriter, stream bool, id, model string) modelapi.Encoder {
	return &encoder{w: modelapi.Writer{W: w, Stream: stream}, id: id, model: model}
}

type encoder struct {
	w         modelapi.Writer
	id, model string
	inText    bool // a text block is open
}

func (e *encoder) Began() bool { return e.w.Began() }

func (e *encoder) begin() {
	if e.w.Begin() && e.w.Stream {
		e.w.Event("message_start", modelapi.Obj{"type": "message_start", "message": modelapi.Obj{
			"id": e.id, "type": "message", "role": "assistant", "model": e.model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": modelapi.Obj{"input_tokens": 0, "output_tokens": 0}}})
	}
}

func (e *encoder) textDelta(delta string) {
	if !e.inText {
		e.inText = true
		e.w.Event("content_block_start", modelapi.Obj{"type": "content_block_start", "index": 0, "content_block": modelapi.Obj{"type": "text", "text": ""}})
	}
	e.w.Event("content_block_delta", modelapi.Obj{"type": "content_block_delta", "index": 0, "delta": modelapi.Obj{"type": "text_delta", "text": delta}})
}

func (e *encoder) Text(delta string) {
	e.begin()
	if e.w.Stream && delta != "" {
		e.textDelta(delta)
	}
}

// stopReason is Anthropic's name of a normalised finish reason.
func stopReason(finish string) string {
	switch finish {
	case provider.FinishStop:
		return "end_turn"
	case provider.FinishToolCalls:
		return "tool_use"
	case provider.FinishLength:
		return "max_tokens"
	case provider.FinishContentFilter:
		return "refusal"
	}
	return finish
}

func usage(r provider.Response) modelapi.Obj {
	return modelapi.Obj{"input_tokens": r.InputTokens - r.CacheReadTokens - r.CacheCreationTokens, "output_tokens": r.OutputTokens,
		"cache_read_input_tokens": r.CacheReadTokens, "cache_creation_input_tokens": r.CacheCreationTokens}
}

func (e *encoder) Finish(r provider.Response) {
	e.begin()
	if !e.w.Stream {
		content := []any{}
		if r.Text != "" || r.Refusal != "" {
			content = append(content, modelapi.Obj{"type": "text", "text": r.Text + r.Refusal})
		}
		for _, tc := range r.ToolCalls {
			content = append(content, modelapi.Obj{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": tc.Args})
		}
		e.w.JSON(modelapi.Obj{"id": e.id, "type": "message", "role": "assistant", "model": e.model, "content": content,
			"stop_reason": stopReason(r.FinishReason), "stop_sequence": nil, "usage": usage(r)})
		return
	}
	idx := 0
	if r.Refusal != "" {
		e.textDelta(r.Refusal)
	}
	if e.inText {
		e.w.Event("content_block_stop", modelapi.Obj{"type": "content_block_stop", "index": 0})
		idx = 1
	}
	for i, tc := range r.ToolCalls {
		n := idx + i
		e.w.Event("content_block_start", modelapi.Obj{"type": "content_block_start", "index": n, "content_block": modelapi.Obj{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": modelapi.Obj{}}})
		e.w.Event("content_block_delta", modelapi.Obj{"type": "content_block_delta", "index": n, "delta": modelapi.Obj{"type": "input_json_delta", "partial_json": string(tc.Args)}})
		e.w.Event("content_block_stop", modelapi.Obj{"type": "content_block_stop", "index": n})
	}
	e.w.Event("message_delta", modelapi.Obj{"type": "message_delta", "delta": modelapi.Obj{"stop_reason": stopReason(r.FinishReason), "stop_sequence": nil}, "usage": usage(r)})
	e.w.Event("message_stop", modelapi.Obj{"type": "message_stop"})
}
