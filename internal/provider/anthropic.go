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

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// AnthropicConfig configures the Anthropic Messages provider. The fields
// mean what they mean in OpenAIConfig.
type AnthropicConfig struct {
	// BaseURL is the API root; empty means https://api.anthropic.com.
	BaseURL string
	// APIKey is sent as x-api-key. The SDK's own credential discovery
	// (ANTHROPIC_API_KEY, profiles, …) is switched off: the caller decides.
	APIKey string
	// KeyEnv is the variable APIKey was read from; empty means
	// AnthropicKeyEnv.
	KeyEnv     string
	MaxRetries int
	HTTPClient *http.Client
	Timeout    time.Duration
}

type anthropicProvider struct {
	// keyEnv names the key's variable in the hint of a refused key.
	keyEnv     string
	client     anthropic.Client
	maxRetries int
	retryBase  time.Duration
}

var _ Provider = (*anthropicProvider)(nil)

// AnthropicKeyEnv is the variable the key is read from when a spec names none.
const AnthropicKeyEnv = "ANTHROPIC_API_KEY"

// AnthropicBaseURL is the API root a client uses when its config names none.
const AnthropicBaseURL = "https://api.anthropic.com"

// NewAnthropic returns a provider for the Messages streaming API.
func NewAnthropic(cfg AnthropicConfig) (Provider, error) {
	base := cmp.Or(cfg.BaseURL, AnthropicBaseURL)
	if u, err := url.Parse(base); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base_url %q: want an absolute http(s) URL", cfg.BaseURL)
	}
	retries := retriesOf(cfg.MaxRetries)
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
		// Retries happen in retry, where each try is seen and reported.
		option.WithMaxRetries(0),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	if cfg.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.Timeout))
	}
	return &anthropicProvider{
		keyEnv:     cmp.Or(cfg.KeyEnv, AnthropicKeyEnv),
		client:     anthropic.NewClient(opts...),
		maxRetries: retries,
		retryBase:  500 * time.Millisecond,
	}, nil
}

func (p *anthropicProvider) Name() string { return "anthropic" }

func (p *anthropicProvider) Complete(ctx context.Context, req Request, onText func(string)) (Response, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return Response{}, err
	}
	return retry(ctx, p.maxRetries, p.retryBase, req.OnRetry, func() (Response, bool, error) {
		resp, streamed, err := p.attempt(ctx, params, req.Model, onText)
		return resp, streamed, withKeyEnv(err, p.keyEnv)
	})
}

func (p *anthropicProvider) attempt(ctx context.Context, params anthropic.MessageNewParams, model string, onText func(string)) (Response, bool, error) {
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var msg anthropic.Message
	var iters []anthropicIteration
	streamed := false
	var accErr error
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil && accErr == nil {
			accErr = err
		}
		if ev.Type == "message_delta" {
			iters = iterationsOf(ev.Usage.RawJSON())
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			streamed = true
			emit(onText, ev.Delta.Text)
		}
	}
	resp := anthropicResponse(&msg, iters, model)
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return resp, streamed, ctx.Err()
		}
		return resp, streamed, anthropicError(err)
	}
	if ctx.Err() != nil {
		return resp, streamed, ctx.Err()
	}
	if accErr != nil {
		return resp, streamed, &Error{Provider: "anthropic", Type: "stream_error", Message: accErr.Error()}
	}
	if msg.ID == "" && msg.Type == "" {
		return resp, streamed, &Error{Provider: "anthropic", Type: ErrEmptyStream, Message: "the 200 response carried no message_start event: not an answer"}
	}
	return resp, streamed, nil
}

// anthropicIteration is one entry of message_delta's usage.iterations:
// with server-side compaction one request samples several times, and the
// top-level usage covers only the last sampling.
type anthropicIteration struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheCreation            struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// iterationsOf reads usage.iterations from a message_delta's usage.
func iterationsOf(raw string) []anthropicIteration {
	var u struct {
		Iterations []anthropicIteration `json:"iterations"`
	}
	if raw == "" || json.Unmarshal([]byte(raw), &u) != nil {
		return nil
	}
	return u.Iterations
}

// anthropicUsage is the bill of a message as Anthropic counts it:
// input_tokens excludes the cache reads and writes, which it reports
// apart, so the billed input is their sum. When usage.iterations is there
// (server-side compaction), the bill is the sum over the iterations.
func anthropicUsage(u anthropic.Usage, iters []anthropicIteration) pricing.Usage {
	if len(iters) > 0 {
		var out pricing.Usage
		for _, it := range iters {
			out.Input += it.InputTokens + it.CacheReadInputTokens + it.CacheCreationInputTokens
			out.CacheRead += it.CacheReadInputTokens
			out.CacheCreation += it.CacheCreationInputTokens
			out.CacheCreation1h += it.CacheCreation.Ephemeral1h
			out.Output += it.OutputTokens
		}
		return out
	}
	return pricing.Usage{
		Input:           u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		CacheRead:       u.CacheReadInputTokens,
		CacheCreation:   u.CacheCreationInputTokens,
		CacheCreation1h: u.CacheCreation.Ephemeral1hInputTokens,
		Output:          u.OutputTokens,
	}
}

func anthropicResponse(msg *anthropic.Message, iters []anthropicIteration, reqModel string) Response {
	u := anthropicUsage(msg.Usage, iters)
	r := Response{
		Model:               string(msg.Model),
		ResponseID:          msg.ID,
		InputTokens:         u.Input,
		CacheReadTokens:     u.CacheRead,
		CacheCreationTokens: u.CacheCreation,
		OutputTokens:        u.Output,
		FinishReason:        anthropicFinish(string(msg.StopReason)),
	}
	if r.Model == "" {
		r.Model = reqModel
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			r.Thinking += b.Thinking
		case "tool_use":
			// Accumulate leaves the start event's `{}` when the
			// arguments streamed as "" only, and the raw fragments
			// when the stream was cut before message_stop.
			r.ToolCalls = append(r.ToolCalls, session.ToolCall{ID: b.ID, Name: b.Name, Args: normaliseArgs(string(b.Input))})
		}
	}
	r.Text = text.String()
	if msg.StopReason == "refusal" {
		// The text of a refused turn is the refusal, not an answer.
		r.Refusal, r.Text = r.Text, ""
		if strings.TrimSpace(r.Refusal) == "" {
			r.Refusal = RefusedWithoutText
		}
	}
	r.CostUSD = pricing.CostOf(r.Model, u)
	return r
}

// anthropicFinish maps stop_reason onto the normalised finish reasons.
func anthropicFinish(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return FinishStop
	case "tool_use":
		return FinishToolCalls
	case "max_tokens":
		return FinishLength
	case "refusal":
		return FinishContentFilter
	}
	return stop
}

// anthropicParams maps the projection onto the Messages API: system
// messages move to the system parameter, tool messages become tool_result
// blocks in a user message, and consecutive messages of one role are merged
// into one message, which is how the API wants the results of parallel
// tool calls (all in the user message right after the tool_use blocks).
func anthropicParams(req Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: req.MaxTokens,
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	for _, t := range req.Tools {
		schema, err := schemaOrEmpty(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("anthropic: tool %s: parameters: %w", t.Name, err)
		}
		in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type":
				// Always "object"; the SDK writes it.
			case "properties":
				in.Properties = v
			case "required":
				if req, ok := v.([]any); ok {
					for _, r := range req {
						if s, ok := r.(string); ok {
							in.Required = append(in.Required, s)
						}
					}
				}
			default:
				in.ExtraFields[k] = v
			}
		}
		if in.Properties == nil {
			in.Properties = map[string]any{}
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	for i, m := range req.Messages {
		var role anthropic.MessageParamRole
		var blocks []anthropic.ContentBlockParamUnion
		switch m.Role {
		case session.RoleSystem:
			if m.Content != "" {
				params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
			}
			continue
		case session.RoleUser:
			role = anthropic.MessageParamRoleUser
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
		case session.RoleTool:
			role = anthropic.MessageParamRoleUser
			if m.Content == "" {
				// An empty text block is rejected; an empty result is not.
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}})
			} else {
				blocks = append(blocks, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, false))
			}
		case session.RoleAssistant:
			role = anthropic.MessageParamRoleAssistant
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, json.RawMessage(normaliseArgs(string(tc.Args))), tc.Name))
			}
		default:
			return params, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
		if len(blocks) == 0 {
			// The API rejects empty content; an empty message (an
			// interrupted turn with no text) carries nothing anyway.
			continue
		}
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, blocks...)
			continue
		}
		params.Messages = append(params.Messages, anthropic.MessageParam{Role: role, Content: blocks})
	}
	return params, nil
}

// anthropicError turns an SDK failure into an *Error.
func anthropicError(err error) *Error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		e := &Error{Provider: "anthropic", Status: apiErr.StatusCode, Type: string(apiErr.Type()), RetryAfter: retryAfterOf(h)}
		if typ, msg, ok := parseErrorBody([]byte(apiErr.RawJSON())); ok {
			e.Message = msg
			if e.Type == "" {
				e.Type = typ
			}
		}
		if e.Status == http.StatusOK || e.Status == 0 {
			// An `event: error` inside a 200 stream: no HTTP status
			// stands for it; the type is the provider's own.
			e.InStream, e.Status = true, 0
			e.Retryable = retryableType(e.Type)
		} else {
			e.Retryable = shouldRetry(e.Status, h)
		}
		if e.Message == "" && e.Status != 0 {
			e.Message = strings.ToLower(http.StatusText(e.Status))
		}
		return e
	}
	const prefix = "received error while streaming: "
	if s := err.Error(); strings.HasPrefix(s, prefix) {
		e := &Error{Provider: "anthropic", Type: "stream_error", Message: strings.TrimPrefix(s, prefix), InStream: true}
		if typ, msg, ok := parseErrorBody([]byte(strings.TrimPrefix(s, prefix))); ok {
			e.Type, e.Message = typ, msg
		}
		e.Retryable = retryableType(e.Type)
		return e
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return &Error{Provider: "anthropic", Type: "stream_error", Message: "malformed stream event: " + err.Error()}
	}
	return transportError("anthropic", err)
}
