package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/modelapi"
)

// The model boundary's types live in package modelapi (a leaf, so that
// the registry of model APIs, and the spec that asks it, need not link the
// vendor SDKs this package does); they are aliased here for the clients
// and their callers.
type (
	Provider = modelapi.Provider
	ToolDef  = modelapi.ToolDef
	Purpose  = modelapi.Purpose
	Request  = modelapi.Request
	Response = modelapi.Response
	Attempt  = modelapi.Attempt
	Error    = modelapi.Error
)

// Purposes, finish reasons and the other constants of the boundary.
const (
	PurposeTurn         = modelapi.PurposeTurn
	PurposeCompaction   = modelapi.PurposeCompaction
	DefaultMaxTokens    = modelapi.DefaultMaxTokens
	ErrEmptyStream      = modelapi.ErrEmptyStream
	RefusedWithoutText  = modelapi.RefusedWithoutText
	FinishStop          = modelapi.FinishStop
	FinishToolCalls     = modelapi.FinishToolCalls
	FinishLength        = modelapi.FinishLength
	FinishContentFilter = modelapi.FinishContentFilter
)

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
		wait := pe.RetryAfter
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

// withKeyEnv stamps the variable the client's key came from on a provider
// error, for its Hint.
func withKeyEnv(err error, keyEnv string) error {
	var pe *Error
	if errors.As(err, &pe) && pe.KeyEnv == "" {
		pe.KeyEnv = keyEnv
	}
	return err
}
