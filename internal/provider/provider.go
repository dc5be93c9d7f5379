package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/session"
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
	// up to its MaxRetries, and reports every failed try in
	// Response.Attempts (on success and on failure alike) so that the log
	// can show them. The runner never retries. Any other failure is
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
	// OnRetry, when set, is called with each failed try of the call
	// before the provider waits and retries it, from the goroutine that
	// called Complete, so the caller can record it as it happens.
	OnRetry func(Attempt)
}

// DefaultMaxTokens is the output cap sent to providers that require one when
// Request.MaxTokens is 0.
const DefaultMaxTokens = 4096

// Response is one assistant turn.
type Response struct {
	Text string
	// Refusal is the model's refusal, kept apart from Text: OpenAI's
	// delta.refusal, or the text of an Anthropic turn that ended with
	// stop_reason refusal (RefusedWithoutText when it had none). A refusal
	// is not an answer, and the runner does not treat it as one.
	Refusal string
	// Thinking is the model's visible reasoning (Anthropic thinking
	// blocks, Responses API reasoning summaries), kept apart from Text:
	// it is neither the answer nor sent back as one.
	Thinking string
	// ToolCalls are in the order the model produced them. Args is always
	// a valid JSON value: the model's bytes when they parse, `{}` when the
	// model sent nothing or broken JSON (a cut-off stream, say). Broken
	// args are not an error here; the tool's schema validation reports
	// them to the model on the next turn.
	ToolCalls []session.ToolCall
	// InputTokens counts every input token the provider bills, cache reads
	// and cache writes included; CacheReadTokens and CacheCreationTokens
	// say how many of them were read from and written to the prompt cache.
	InputTokens         int64
	CacheReadTokens     int64
	CacheCreationTokens int64
	OutputTokens        int64
	// FinishReason is normalised across providers: "stop", "tool_calls",
	// "length", "content_filter", else the provider's own value.
	FinishReason string
	// Model is the model id the provider reported (it may carry a date
	// suffix the request did not).
	Model string
	// ResponseID is the provider's id of the answer ("chatcmpl-…",
	// "msg_…"), empty when it sent none.
	ResponseID string
	// CostUSD is pricing.CostOf(Model, the usage), each part at its own
	// price: 0 for models missing from the price table.
	CostUSD float64
	// Attempts are the tries of this call that failed and were retried,
	// in order; the Response itself is the last try. Empty when the first
	// try was the last.
	Attempts []Attempt
	// Latency is how long the last try took; 0 when the provider does not
	// measure it (scripted, recorded).
	Latency time.Duration
}

// Attempt is one failed try of a call that the provider then retried.
type Attempt struct {
	Err *Error
	// Latency is how long the try took.
	Latency time.Duration
	// Partial is what the try had received before it failed (usage from
	// a message_start, say); a try is only retried before any text was
	// streamed, so it holds no text.
	Partial Response
}

// ErrEmptyStream is the Error.Type of a 200 response whose body held no
// stream event at all (a proxy's page, a wrong base_url): an empty answer
// the provider never gave, so it is an error rather than a turn.
const ErrEmptyStream = "empty_stream"

// RefusedWithoutText is the Refusal of an Anthropic turn that ended with
// stop_reason refusal before any text.
const RefusedWithoutText = "(the provider ended the answer with stop_reason refusal and no text)"

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
	// Status is the HTTP status code of a failed response, 0 for a
	// transport failure and for an error event inside a 200 stream
	// (InStream): no status is made up for those.
	Status int
	// Type is the provider's error type, e.g. invalid_request_error,
	// rate_limit_error, overloaded_error; "connection_error" for transport
	// failures.
	Type    string
	Message string
	// Retryable reports whether the same request might succeed later.
	Retryable bool
	// InStream marks an error event that arrived inside a 200 stream
	// (Anthropic's `event: error`, OpenAI's {"error":…} chunk).
	InStream bool

	// retryAfter is the wait the provider asked for (Retry-After,
	// retry-after-ms), 0 when it named none.
	retryAfter time.Duration
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
	if e.InStream {
		b.WriteString(" (error event in the response stream)")
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
	case "gemini":
		return "check the API key in GEMINI_API_KEY"
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
		"rate_limit_exceeded", "internal_error", "service_unavailable",
		// Gemini's google.rpc codes of a transient failure.
		"RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED":
		return true
	}
	return false
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

// retry runs attempt until it succeeds, fails for good, or MaxRetries
// retries are spent, and returns the last try with the failed ones in
// Attempts. A failure is retried when it is Retryable (HTTP 408, 409, 429,
// 5xx unless the server said x-should-retry: false; transport failures;
// transient error events in a 200 stream) and no text reached the caller,
// since a retry would show the caller the same text twice. The wait is
// what the provider asked for (Retry-After, up to a minute), else base
// doubled on each try. The SDKs' own retries are switched off so that
// every try is seen here.
func retry(ctx context.Context, maxRetries int, base time.Duration, onRetry func(Attempt), attempt func() (Response, bool, error)) (Response, error) {
	var tries []Attempt
	for try := 0; ; try++ {
		began := time.Now()
		resp, streamed, err := attempt()
		resp.Latency = time.Since(began)
		var pe *Error
		if err == nil || streamed || try >= maxRetries || ctx.Err() != nil || !errors.As(err, &pe) || !pe.Retryable {
			resp.Attempts = tries
			return resp, err
		}
		a := Attempt{Err: pe, Latency: resp.Latency, Partial: resp}
		tries = append(tries, a)
		if onRetry != nil {
			onRetry(a)
		}
		wait := pe.retryAfter
		if wait <= 0 {
			wait = base << try
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			resp.Attempts = tries[:len(tries)-1]
			return resp, ctx.Err()
		case <-t.C:
		}
	}
}

// maxRetryAfter caps the wait a provider may ask for between tries; a
// longer one falls back to the backoff, as the SDKs do.
const maxRetryAfter = time.Minute

// retryAfterOf reads the wait a failed response asks for: retry-after-ms
// (milliseconds), else Retry-After (seconds or an HTTP date).
func retryAfterOf(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	var d time.Duration
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil {
		d = time.Duration(ms * float64(time.Millisecond))
	} else if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			d = time.Duration(s * float64(time.Second))
		} else if t, err := http.ParseTime(v); err == nil {
			d = time.Until(t)
		}
	}
	if d <= 0 || d > maxRetryAfter {
		return 0
	}
	return d
}

// shouldRetry is the SDKs' rule for a failed response: the server's
// x-should-retry header when it sends one, else the status.
func shouldRetry(status int, h http.Header) bool {
	switch strings.ToLower(h.Get("X-Should-Retry")) {
	case "true":
		return true
	case "false":
		return false
	}
	return retryableStatus(status)
}
