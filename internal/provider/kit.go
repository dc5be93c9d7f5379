package provider

import (
	"context"
	"encoding/json"
	"time"
)

// The helpers below let a model API whose client lives in a package of
// its own (internal/modelapi/gemini) build it with the same rules the
// clients of this package follow: one retry loop, one normalisation of
// tool arguments and schemas, one reading of a failed response.

// Retry runs attempt under the retry rule of every live provider (see
// retry): attempt returns the try's answer, whether any text already
// reached the caller, and its error.
func Retry(ctx context.Context, maxRetries int, base time.Duration, onRetry func(Attempt), attempt func() (Response, bool, error)) (Response, error) {
	return retry(ctx, maxRetries, base, onRetry, attempt)
}

// RetriesOf is the retry count of a config's MaxRetries: 0 means
// DefaultMaxRetries, a negative value never.
func RetriesOf(n int) int { return retriesOf(n) }

// NormaliseArgs returns a model's tool arguments as a JSON value: raw when
// it is valid JSON, `{}` when it is empty or broken.
func NormaliseArgs(raw string) json.RawMessage { return normaliseArgs(raw) }

// SchemaOrEmpty returns a tool's parameter schema, or an empty object
// schema when the tool takes no arguments.
func SchemaOrEmpty(p json.RawMessage) (map[string]any, error) { return schemaOrEmpty(p) }

// TransportError is the *Error of a failure that carries no provider
// error body (a refused connection, a reset stream): retryable.
func TransportError(provider string, err error) *Error { return transportError(provider, err) }
