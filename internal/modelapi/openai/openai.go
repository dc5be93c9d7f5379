// Package openai registers OpenAI's two model APIs: Chat Completions
// (chat.go: the client a spec's provider: openai runs with, and the proxy's
// /v1/chat/completions and /v1/models) and Responses (responses.go: the
// proxy's /v1/responses; agentctl's own client speaks Chat Completions,
// which the OpenAI-compatible servers implement too).
package openai

import (
	"fmt"
	"net/http"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
)

// The provider's facts, shared by its two APIs.
const (
	providerName = "openai"
	keyEnv       = provider.OpenAIKeyEnv
	baseURL      = provider.OpenAIBaseURL
)

// envelope is what OpenAI's two APIs share on the wire: the error
// envelope and the credential. Each API's wire embeds it.
type envelope struct{}

// ErrorBody is OpenAI's error envelope.
func (envelope) ErrorBody(typ, msg string) []byte {
	return modelapi.Marshal(modelapi.Obj{"error": modelapi.Obj{"message": msg, "type": typ, "param": nil, "code": typ}})
}

func (envelope) ParseError(status int, h http.Header, body []byte) *provider.Error {
	return provider.ParseError(providerName, status, h, body)
}

// SetKey is OpenAI's credential: Authorization: Bearer.
func (envelope) SetKey(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) }

func badf(format string, args ...any) error { return fmt.Errorf(format, args...) }
