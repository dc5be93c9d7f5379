package modelapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

	// KeyEnv is the variable the client's key was read from, which Hint
	// names for a refused key; "" names the provider's usual one (its
	// registered API's KeyEnv).
	KeyEnv string

	// RetryAfter is the wait the provider asked for (Retry-After,
	// retry-after-ms), 0 when it named none; the client's retry honours it.
	RetryAfter time.Duration
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

// Hint says what the user can do about the error, or "" when nothing:
// for a refused key, the variable the key was read from (KeyEnv, else the
// provider's usual one).
func (e *Error) Hint() string {
	if e.Status != http.StatusUnauthorized && e.Status != http.StatusForbidden {
		return ""
	}
	v := e.KeyEnv
	if a, err := Lookup(e.Provider); v == "" && err == nil {
		v = a.KeyEnv
	}
	if v == "" {
		return "check the provider's API key"
	}
	return "check the API key in " + v
}
