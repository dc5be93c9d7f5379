package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentctl/agentctl/session"
)

// Provider is the model boundary: one call sends the projected messages and
// streams one assistant turn back.
type Provider interface {
	// Name is the provider's stable name: "scripted", "openai" or
	// "anthropic". It is recorded in the session header and in model_call
	// events, so it never changes for a given implementation.
	Name() string

	// Complete sends req and streams the answer's text to onText (which may
	// be nil) as it arrives, then returns the whole turn.
	//
	// Concurrency: the live providers (openai, anthropic) may be called
	// concurrently; each call is independent. The scripted model may not:
	// it serves turns in order from a counter.
	//
	// Cancellation: when ctx is cancelled mid-call, Complete returns the
	// partial Response gathered so far (text, and any tool calls already
	// complete) together with ctx.Err(), so the runner can record the
	// partial text as an interrupted turn. The error is ctx.Err() itself,
	// never wrapped, so errors.Is(err, context.Canceled) holds.
	//
	// Retries: the provider retries what is worth retrying (HTTP 408, 409,
	// 429, 5xx, transport failures, and mid-stream overloaded/rate-limit/
	// server errors that arrive before any text was streamed) with backoff,
	// up to its MaxRetries. The runner never retries. Any other failure is
	// returned as an *Error, with Retryable telling whether a later
	// attempt (say, after resume) could succeed.
	Complete(ctx context.Context, req Request, onText func(delta string)) (Response, error)
}

// ToolDef describes a tool offered to the model.
type ToolDef struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object; empty means "no arguments".
	Parameters json.RawMessage
}

// Purpose says why the runner makes a call. Live providers send the request
// the same way whatever the purpose; the scripted model uses it to answer
// compaction requests without consuming a scripted turn.
type Purpose string

// Purposes of a call.
const (
	// PurposeTurn is a normal agent turn.
	PurposeTurn Purpose = ""
	// PurposeCompaction asks for a summary of the request's messages.
	PurposeCompaction Purpose = "compaction"
)

// Request is one model call.
type Request struct {
	Model string
	// Messages is the projection: the first may be role system; tool
	// messages carry ToolCallID.
	Messages []session.Message
	Tools    []ToolDef
	// MaxTokens caps the output of this call; 0 leaves it to the provider
	// (Anthropic requires a value, so DefaultMaxTokens is sent there).
	MaxTokens int64
	Purpose   Purpose
}

// DefaultMaxTokens is the output cap sent to providers that require one when
// Request.MaxTokens is 0.
const DefaultMaxTokens = 4096

// Response is one assistant turn.
type Response struct {
	Text string
	// ToolCalls are in the order the model produced them. Args is always
	// a valid JSON value: the model's bytes when they parse, `{}` when the
	// model sent nothing or broken JSON (a cut-off stream, say). Broken
	// args are not an error here; the tool's schema validation reports
	// them to the model on the next turn.
	ToolCalls    []session.ToolCall
	InputTokens  int64
	OutputTokens int64
	// FinishReason is normalised across providers: "stop", "tool_calls",
	// "length", "content_filter", else the provider's own value.
	FinishReason string
	// Model is the model id the provider reported (it may carry a date
	// suffix the request did not).
	Model string
	// CostUSD is Cost(Model, InputTokens, OutputTokens): 0 for models
	// missing from the price table.
	CostUSD float64
}

// Normalised finish reasons.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// Error is a provider failure after the provider's own retries.
type Error struct {
	// Provider is the Name of the provider that failed.
	Provider string
	// Status is the HTTP status code, 0 for a transport failure. An error
	// event inside a 200 stream gets the status its type stands for
	// (overloaded_error 529, rate_limit_error 429, api_error 500), else 0.
	Status int
	// Type is the provider's error type, e.g. invalid_request_error,
	// rate_limit_error, overloaded_error; "connection_error" for transport
	// failures.
	Type    string
	Message string
	// Retryable reports whether the same request might succeed later.
	Retryable bool

	// midStream marks an error event that arrived inside a 200 stream,
	// which the SDKs do not retry.
	midStream bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "%d ", e.Status)
	}
	typ := e.Type
	if typ == "" {
		typ = "error"
	}
	b.WriteString(typ)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if h := e.Hint(); h != "" {
		b.WriteString(" (hint: ")
		b.WriteString(h)
		b.WriteString(")")
	}
	return b.String()
}

// Hint says what the user can do about the error, or "" when nothing.
func (e *Error) Hint() string {
	if e.Status != http.StatusUnauthorized && e.Status != http.StatusForbidden {
		return ""
	}
	switch e.Provider {
	case "openai":
		return "check the API key in OPENAI_API_KEY (or the key configured for this base_url)"
	case "anthropic":
		return "check the API key in ANTHROPIC_API_KEY"
	}
	return "check the provider's API key"
}

// retryableStatus is the SDKs' own retry rule, restated so that Error can
// say whether a failure that outlived the retries is still worth retrying.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}

// retryableType reports whether an error type seen inside a stream is
// transient.
func retryableType(typ string) bool {
	switch typ {
	case "overloaded_error", "rate_limit_error", "api_error", "server_error", "timeout_error",
		"rate_limit_exceeded", "internal_error", "service_unavailable":
		return true
	}
	return false
}

// statusForType maps the error type of an in-stream error event to the HTTP
// status the same error has when it comes before the stream starts.
func statusForType(typ string) int {
	switch typ {
	case "overloaded_error":
		return 529
	case "rate_limit_error", "rate_limit_exceeded":
		return http.StatusTooManyRequests
	case "api_error", "server_error", "internal_error":
		return http.StatusInternalServerError
	case "invalid_request_error":
		return http.StatusBadRequest
	}
	return 0
}

// errorBody is the error envelope both providers use:
// {"error":{"type":…,"message":…,"code":…}}.
type errorBody struct {
	Error struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// parseErrorBody reads type and message from a provider error body; ok is
// false when raw is not that envelope.
func parseErrorBody(raw []byte) (typ, msg string, ok bool) {
	var eb errorBody
	if err := json.Unmarshal(raw, &eb); err != nil {
		return "", "", false
	}
	typ, msg = eb.Error.Type, eb.Error.Message
	if typ == "" && len(eb.Error.Code) > 0 {
		var code string
		if json.Unmarshal(eb.Error.Code, &code) == nil {
			typ = code
		}
	}
	return typ, msg, typ != "" || msg != ""
}

// transportError wraps a failure that carries no provider error body.
func transportError(provider string, err error) *Error {
	return &Error{Provider: provider, Type: "connection_error", Message: err.Error(), Retryable: true}
}

// normaliseArgs returns the model's tool arguments as a JSON value: raw when
// it is valid JSON, `{}` when it is empty or broken.
func normaliseArgs(raw string) json.RawMessage {
	s := strings.TrimSpace(raw)
	if s == "" || !json.Valid([]byte(s)) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(s)
}

// schemaOrEmpty returns the tool's parameter schema, or an empty object
// schema when the tool takes no arguments (both APIs require one).
func schemaOrEmpty(p json.RawMessage) (map[string]any, error) {
	m := map[string]any{}
	if len(strings.TrimSpace(string(p))) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	if err := json.Unmarshal(p, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	return m, nil
}

func emit(onText func(string), s string) {
	if onText != nil && s != "" {
		onText(s)
	}
}

// withStreamRetries retries an attempt that failed inside a 200 stream with
// a transient error event (overloaded, rate limit, server error) before any
// text was streamed. The SDKs retry failures before the stream starts, so
// those are not retried again here; a stream that dies after text reached
// the caller is returned as is, because a retry would show the caller the
// same text twice.
func withStreamRetries(ctx context.Context, maxRetries int, base time.Duration, attempt func() (Response, bool, error)) (Response, error) {
	for try := 0; ; try++ {
		resp, streamed, err := attempt()
		var pe *Error
		if err == nil || streamed || try >= maxRetries || !errors.As(err, &pe) || !pe.midStream || !pe.Retryable {
			return resp, err
		}
		t := time.NewTimer(base << try)
		select {
		case <-ctx.Done():
			t.Stop()
			return resp, ctx.Err()
		case <-t.C:
		}
	}
}
