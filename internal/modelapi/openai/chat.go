package openai

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
		Name:     "chat_completions",
		Provider: providerName,
		KeyEnv:   keyEnv,
		BaseURL:  baseURL,
		Client: func(c modelapi.ClientConfig) (provider.Provider, error) {
			return provider.NewOpenAI(provider.OpenAIConfig{BaseURL: c.BaseURL, APIKey: c.APIKey, KeyEnv: c.KeyEnv, MaxRetries: c.MaxRetries})
		},
		Wire: chat{},
		// The OpenAI SDKs (and the Agents SDK, and the compatible
		// clients that read these) serve the Responses API too.
		Env: modelapi.Env{BaseURL: []string{"OPENAI_BASE_URL", "OPENAI_API_BASE"}, BaseSuffix: "/v1",
			Key: []string{keyEnv}, DefaultModel: []string{"OPENAI_DEFAULT_MODEL"}},
	})
}

// chat is the Chat Completions wire.
type chat struct{ envelope }

func (chat) Routes() []modelapi.Route {
	return []modelapi.Route{
		{Method: http.MethodPost, Path: "/v1/chat/completions", Op: modelapi.OpGenerate, API: "chat_completions"},
		{Method: http.MethodGet, Path: "/v1/models", Op: modelapi.OpModels, API: "models"},
		{Method: http.MethodGet, Path: "/v1/models/{id}", Op: modelapi.OpModels, API: "models"},
	}
}

func (chat) ParseRequest(c *modelapi.Call) error {
	var r struct {
		Model               string          `json:"model"`
		Stream              bool            `json:"stream"`
		MaxTokens           int64           `json:"max_tokens"`
		MaxCompletionTokens int64           `json:"max_completion_tokens"`
		Metadata            json.RawMessage `json:"metadata"`
		Messages            []struct {
			Role       string           `json:"role"`
			Content    modelapi.Content `json:"content"`
			Name       string           `json:"name"`
			ToolCallID string           `json:"tool_call_id"`
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
				am.ToolCalls = append(am.ToolCalls, session.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: modelapi.Args(tc.Function.Arguments)})
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

func (chat) ParseResponse(body []byte, stream bool, reqModel string) (provider.Response, error) {
	return provider.ParseChatCompletion(body, stream, reqModel)
}

func (chat) ResponseID(session string, turn int) string {
	return fmt.Sprintf("chatcmpl-%s-%d", session, turn)
}

func (chat) NewEncoder(w http.ResponseWriter, stream bool, id, model string) modelapi.Encoder {
	return &chatEncoder{w: modelapi.Writer{W: w, Stream: stream}, id: id, model: model}
}

type chatEncoder struct {
	w         modelapi.Writer
	id, model string
}

func (e *chatEncoder) Began() bool { return e.w.Began() }

func (e *chatEncoder) chunk(delta modelapi.Obj, finish any) modelapi.Obj {
	return modelapi.Obj{"id": e.id, "object": "chat.completion.chunk", "created": 0, "model": e.model,
		"choices": []any{modelapi.Obj{"index": 0, "delta": delta, "finish_reason": finish}}}
}

func (e *chatEncoder) begin() {
	if e.w.Begin() && e.w.Stream {
		e.w.Event("", e.chunk(modelapi.Obj{"role": "assistant", "content": ""}, nil))
	}
}

func (e *chatEncoder) Text(delta string) {
	e.begin()
	if e.w.Stream && delta != "" {
		e.w.Event("", e.chunk(modelapi.Obj{"content": delta}, nil))
	}
}

func usage(r provider.Response) modelapi.Obj {
	return modelapi.Obj{"prompt_tokens": r.InputTokens, "completion_tokens": r.OutputTokens, "total_tokens": r.InputTokens + r.OutputTokens,
		"prompt_tokens_details": modelapi.Obj{"cached_tokens": r.CacheReadTokens}}
}

func (e *chatEncoder) Finish(r provider.Response) {
	e.begin()
	if !e.w.Stream {
		msg := modelapi.Obj{"role": "assistant", "content": nil, "refusal": nil}
		if r.Text != "" || len(r.ToolCalls) == 0 {
			msg["content"] = r.Text
		}
		if r.Refusal != "" {
			msg["refusal"] = r.Refusal
		}
		if len(r.ToolCalls) > 0 {
			var tcs []any
			for _, tc := range r.ToolCalls {
				tcs = append(tcs, modelapi.Obj{"id": tc.ID, "type": "function", "function": modelapi.Obj{"name": tc.Name, "arguments": string(tc.Args)}})
			}
			msg["tool_calls"] = tcs
		}
		e.w.JSON(modelapi.Obj{"id": e.id, "object": "chat.completion", "created": 0, "model": e.model,
			"choices": []any{modelapi.Obj{"index": 0, "message": msg, "finish_reason": r.FinishReason, "logprobs": nil}}, "usage": usage(r)})
		return
	}
	if r.Refusal != "" {
		e.w.Event("", e.chunk(modelapi.Obj{"refusal": r.Refusal}, nil))
	}
	for i, tc := range r.ToolCalls {
		e.w.Event("", e.chunk(modelapi.Obj{"tool_calls": []any{modelapi.Obj{"index": i, "id": tc.ID, "type": "function", "function": modelapi.Obj{"name": tc.Name, "arguments": ""}}}}, nil))
		e.w.Event("", e.chunk(modelapi.Obj{"tool_calls": []any{modelapi.Obj{"index": i, "function": modelapi.Obj{"arguments": string(tc.Args)}}}}, nil))
	}
	e.w.Event("", e.chunk(modelapi.Obj{}, r.FinishReason))
	e.w.Event("", modelapi.Obj{"id": e.id, "object": "chat.completion.chunk", "created": 0, "model": e.model, "choices": []any{}, "usage": usage(r)})
	e.w.Raw([]byte("data: [DONE]\n\n"))
}
