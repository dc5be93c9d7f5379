package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// OpenAIConfig configures the OpenAI Chat Completions provider. The same
// provider talks to any OpenAI-compatible server (vLLM, llama.cpp, Ollama)
// through BaseURL.
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. "http://localhost:11434/v1"; empty
	// means https://api.openai.com/v1.
	BaseURL string
	// APIKey may be empty for local servers, which ignore it; a
	// placeholder is sent so the header is well formed.
	APIKey string
	// KeyEnv is the variable APIKey was read from, named in the hint of a
	// refused key; empty means OpenAIKeyEnv.
	KeyEnv string
	// MaxRetries is how many times a retryable failure is retried: 0 means
	// the default (2), a negative value means never.
	MaxRetries int
	// HTTPClient replaces the SDK's default client (tests, proxies).
	HTTPClient *http.Client
	// Timeout bounds each attempt, stream included; 0 means no bound
	// beyond ctx.
	Timeout time.Duration
}

// DefaultMaxRetries is the retry count used when a config leaves MaxRetries 0.
const DefaultMaxRetries = 2

// placeholderAPIKey is sent when no key is configured: local
// OpenAI-compatible servers ignore the header but some reject a missing one.
const placeholderAPIKey = "agentctl-no-key"

type openAIProvider struct {
	// keyEnv names the key's variable in the hint of a refused key.
	keyEnv string
	client openai.Client
	// official is true for api.openai.com, which wants
	// max_completion_tokens; compatible servers know max_tokens.
	official   bool
	maxRetries int
	retryBase  time.Duration
}

var _ Provider = (*openAIProvider)(nil)

// OpenAIKeyEnv is the variable the key is read from when a spec names none.
const OpenAIKeyEnv = "OPENAI_API_KEY"

// OpenAIBaseURL is the API root a client uses when its config names none.
const OpenAIBaseURL = "https://api.openai.com/v1"

// NewOpenAI returns a provider for the Chat Completions streaming API.
func NewOpenAI(cfg OpenAIConfig) (Provider, error) {
	base := cmp.Or(cfg.BaseURL, OpenAIBaseURL)
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("openai: base_url %q: want an absolute http(s) URL", cfg.BaseURL)
	}
	key := cfg.APIKey
	if key == "" {
		key = placeholderAPIKey
	}
	retries := retriesOf(cfg.MaxRetries)
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithAPIKey(key),
		// Retries happen in retry, where each try is seen and reported.
		option.WithMaxRetries(0),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	if cfg.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.Timeout))
	}
	return &openAIProvider{
		keyEnv:     cmp.Or(cfg.KeyEnv, OpenAIKeyEnv),
		client:     openai.NewClient(opts...),
		official:   u.Host == "api.openai.com",
		maxRetries: retries,
		retryBase:  500 * time.Millisecond,
	}, nil
}

func retriesOf(n int) int {
	switch {
	case n < 0:
		return 0
	case n == 0:
		return DefaultMaxRetries
	}
	return n
}

func (p *openAIProvider) Name() string { return "openai" }

func (p *openAIProvider) Complete(ctx context.Context, req Request, onText func(string)) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	return retry(ctx, p.maxRetries, p.retryBase, req.OnRetry, func() (Response, bool, error) {
		resp, streamed, err := p.attempt(ctx, params, req.Model, onText)
		return resp, streamed, withKeyEnv(err, p.keyEnv)
	})
}

// attempt runs one streamed call; streamed reports whether any text reached
// onText, after which a retry would repeat output the caller already saw.
func (p *openAIProvider) attempt(ctx context.Context, params openai.ChatCompletionNewParams, model string, onText func(string)) (Response, bool, error) {
	stream := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	streamed := false
	chunks := 0
	for stream.Next() {
		chunks++
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, c := range chunk.Choices {
			if c.Index == 0 && c.Delta.Content != "" {
				streamed = true
				emit(onText, c.Delta.Content)
			}
		}
	}
	resp := openAIResponse(&acc, model)
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return resp, streamed, ctx.Err()
		}
		return resp, streamed, openAIError(err)
	}
	if ctx.Err() != nil {
		return resp, streamed, ctx.Err()
	}
	if chunks == 0 {
		return resp, streamed, &Error{Provider: "openai", Type: ErrEmptyStream, Message: "the 200 response carried no stream chunk: not an answer"}
	}
	return resp, streamed, nil
}

// openAIResponse reads the accumulated stream. prompt_tokens already
// counts the cached prompt tokens (prompt_tokens_details.cached_tokens);
// OpenAI charges nothing extra for writing its cache, so there are no
// cache writes.
func openAIResponse(acc *openai.ChatCompletionAccumulator, reqModel string) Response {
	r := Response{
		Model:           acc.Model,
		ResponseID:      acc.ID,
		InputTokens:     acc.Usage.PromptTokens,
		CacheReadTokens: acc.Usage.PromptTokensDetails.CachedTokens,
		OutputTokens:    acc.Usage.CompletionTokens,
	}
	if r.Model == "" {
		r.Model = reqModel
	}
	if len(acc.Choices) > 0 {
		c := acc.Choices[0]
		r.Text = c.Message.Content
		r.Refusal = c.Message.Refusal
		r.FinishReason = c.FinishReason
		for _, tc := range c.Message.ToolCalls {
			name, args := tc.Function.Name, tc.Function.Arguments
			if tc.Type == "custom" {
				name, args = tc.Custom.Name, tc.Custom.Input
			}
			r.ToolCalls = append(r.ToolCalls, session.ToolCall{ID: tc.ID, Name: name, Args: normaliseArgs(args)})
		}
	}
	r.CostUSD = pricing.CostOf(r.Model, pricing.Usage{Input: r.InputTokens, CacheRead: r.CacheReadTokens, Output: r.OutputTokens})
	return r
}

func (p *openAIProvider) params(req Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		if p.official {
			params.MaxCompletionTokens = openai.Int(req.MaxTokens)
		} else {
			params.MaxTokens = openai.Int(req.MaxTokens)
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaOrEmpty(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("openai: tool %s: parameters: %w", t.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case session.RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case session.RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case session.RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case session.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: string(normaliseArgs(string(tc.Args))),
						},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return params, fmt.Errorf("openai: message %d: unknown role %q", i, m.Role)
		}
	}
	return params, nil
}

// openAIError turns an SDK failure into an *Error.
func openAIError(err error) *Error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		e := &Error{
			Provider:   "openai",
			Status:     apiErr.StatusCode,
			Type:       apiErr.Type,
			Message:    apiErr.Message,
			Retryable:  shouldRetry(apiErr.StatusCode, h),
			RetryAfter: retryAfterOf(h),
		}
		if e.Type == "" {
			e.Type = apiErr.Code
		}
		if e.Type == "" && e.Message == "" {
			if typ, msg, ok := parseErrorBody([]byte(apiErr.RawJSON())); ok {
				e.Type, e.Message = typ, msg
			}
		}
		if e.Message == "" {
			e.Message = strings.ToLower(http.StatusText(apiErr.StatusCode))
		}
		return e
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error object inside a 200 stream: {"error":{…}}. No HTTP
		// status stands for it; the type is the provider's own.
		e := &Error{Provider: "openai", Type: "stream_error", Message: se.Message, InStream: true}
		if typ, msg, ok := parseErrorBody(se.Event.Data); ok {
			e.Type, e.Message = typ, msg
		}
		e.Retryable = retryableType(e.Type)
		return e
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return &Error{Provider: "openai", Type: "stream_error", Message: "malformed stream chunk: " + err.Error()}
	}
	return transportError("openai", err)
}
