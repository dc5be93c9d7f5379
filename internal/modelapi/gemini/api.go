package gemini

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
)

// The names the proxy records a call of the API by (a model_call's "api"
// attribute): a model call, and a token count (answered, not recorded).
const (
	APIName      = "gemini"
	APICountName = "gemini_count_tokens"
)

func init() {
	modelapi.Register(modelapi.API{
		Name:     APIName,
		Provider: Name,
		KeyEnv:   KeyEnv,
		BaseURL:  BaseURL,
		Client: func(c modelapi.ClientConfig) (provider.Provider, error) {
			return New(Config{BaseURL: c.BaseURL, APIKey: c.APIKey, KeyEnv: c.KeyEnv, MaxRetries: c.MaxRetries})
		},
		Wire:          wire{},
		GenAIProvider: OTelProviderName,
		// gemini-cli and Google's Gen AI SDK append /v1beta themselves.
		Env: modelapi.Env{BaseURL: []string{"GOOGLE_GEMINI_BASE_URL"}, Key: []string{KeyEnv}, Model: []string{"GEMINI_MODEL"}},
	})
}

// wire is the API's modelapi.Wire.
type wire struct{}

var (
	_ modelapi.Wire             = wire{}
	_ modelapi.PositionedParser = wire{}
	_ modelapi.QueryEncoder     = wire{}
	_ modelapi.CountAnswerer    = wire{}
	_ modelapi.ModelSetter      = wire{}
)

// Routes are the API's POST routes under v1beta (what gemini-cli and the
// Gen AI SDKs call) and v1.
func (wire) Routes() []modelapi.Route {
	var rs []modelapi.Route
	for _, v := range []string{"v1beta", "v1"} {
		base := "/" + v + "/models/{model}:"
		rs = append(rs,
			modelapi.Route{Method: http.MethodPost, Path: base + MethodGenerate, Op: modelapi.OpGenerate, API: APIName},
			modelapi.Route{Method: http.MethodPost, Path: base + MethodStream, Op: modelapi.OpGenerate, API: APIName, Stream: true},
			modelapi.Route{Method: http.MethodPost, Path: base + MethodCount, Op: modelapi.OpCountTokens, API: APICountName})
	}
	return rs
}

// ParseRequest reads the body, the model from the route's {model} (else
// from r.Path) and streaming from the route.
func (wire) ParseRequest(r *modelapi.Call) error {
	model, method := r.Vars["model"], ""
	if m, meth, ok, err := Route(r.Path); ok && err == nil {
		if model == "" {
			model = m
		}
		method = meth
	}
	switch {
	case r.Route.Stream:
		method = MethodStream
	case r.Route.Op == modelapi.OpCountTokens:
		method = MethodCount
	case method == "":
		method = MethodGenerate
	}
	if model == "" {
		return fmt.Errorf("gemini request: path %q names no model", r.Path)
	}
	c, err := ParseRequest(model, method, r.Body)
	if err != nil {
		return err
	}
	r.Model, r.Stream, r.MaxTokens, r.System = c.Model, c.Stream, c.MaxTokens, c.System
	r.Messages, r.Tools, r.Failed = c.Messages, c.Tools, c.Failed
	return nil
}

// ParseResponse reads an answer as the first message of its
// conversation (CallID(0, j)): it does not know the answer's place. The
// proxy, which does (the request's message count), calls
// ParseResponseAt, which a Gemini answer needs for its calls to pair with
// the next request's copies of them.
func (wire) ParseResponse(body []byte, stream bool, reqModel string) (provider.Response, error) {
	return Parse(body, stream, reqModel, 0)
}

// ParseResponseAt is ParseResponse for the answer at index at of its
// conversation (the request's message count, system text not counted):
// its calls get the ids CallID gives them, as ParseRequest gives the
// next request's copies.
func (wire) ParseResponseAt(body []byte, stream bool, reqModel string, at int) (provider.Response, error) {
	return Parse(body, stream, reqModel, at)
}

func (wire) ParseError(status int, h http.Header, body []byte) *provider.Error {
	return ParseError(status, h, body)
}

// NewEncoder renders SSE when stream is set (what gemini-cli asks for
// with ?alt=sse); NewEncoderQuery renders what the request's query asks.
func (wire) NewEncoder(w http.ResponseWriter, stream bool, id, model string) modelapi.Encoder {
	return wire{}.NewEncoderQuery(w, stream, "alt=sse", id, model)
}

// NewEncoderQuery renders a stream as SSE when rawQuery has alt=sse, else
// as the JSON array of chunks streamGenerateContent sends without it.
func (wire) NewEncoderQuery(w http.ResponseWriter, stream bool, rawQuery, id, model string) modelapi.Encoder {
	method := MethodGenerate
	if stream {
		method = MethodStream
	}
	return NewEncoder(w, method, rawQuery, id, model)
}

func (wire) ResponseID(session string, turn int) string {
	return fmt.Sprintf("gemini-%s-%d", session, turn)
}

// ErrorBody is the API's error envelope for an error of type typ: its
// HTTP code and rpc status from the type (StatusOf).
func (wire) ErrorBody(typ, msg string) []byte { return ErrorBody(StatusOf(typ), typ, msg) }

// SetKey puts key in x-goog-api-key in place of any credential header
// the client sent.
func (wire) SetKey(h http.Header, key string) {
	for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		h.Del(k)
	}
	h.Set("X-Goog-Api-Key", key)
}

// StatusOf is the HTTP status an error of type typ is answered with when
// the caller names none: the rpc statuses' own, agentctl's and the other
// providers' types that the proxy answers with, else 500.
func StatusOf(typ string) int {
	switch strings.ToLower(typ) {
	case "invalid_argument", "invalid_request_error", "replay_divergence", "failed_precondition", "out_of_range", "budget_exceeded", "script_exhausted":
		return http.StatusBadRequest
	case "unauthenticated", "authentication_error":
		return http.StatusUnauthorized
	case "permission_denied", "permission_error":
		return http.StatusForbidden
	case "not_found", "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "resource_exhausted", "rate_limit_error":
		return http.StatusTooManyRequests
	case "connection_error":
		return http.StatusBadGateway
	case "unavailable", "overloaded_error":
		return http.StatusServiceUnavailable
	case "deadline_exceeded":
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// SetModel asks for model in the path (the body names none): a fork's
// --model.
func (wire) SetModel(path string, body []byte, model string) (string, []byte, error) {
	old, method, ok, err := Route(path)
	if !ok || err != nil {
		return path, body, fmt.Errorf("gemini: path %q names no model to change", path)
	}
	return strings.TrimSuffix(path, old+":"+method) + model + ":" + method, body, nil
}

// CountBody is countTokens' answer of a count the proxy made.
func (wire) CountBody(tokens int) []byte { return marshal(map[string]any{"totalTokens": tokens}) }
