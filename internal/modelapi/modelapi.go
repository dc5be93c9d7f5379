package modelapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/internal/session"
)

// API is one model API: everything agentctl knows about it, in one value.
// Fields that do not apply are zero: the scripted model has no wire of its
// own (the proxy serves it over every wire) and no key; OpenAI's Responses
// API has no client of its own (a spec's provider: openai speaks Chat
// Completions), only a wire.
type API struct {
	// Name is the API's name as the proxy records it in a model_call's
	// "api" attribute and as replay reads it back ("chat_completions",
	// "responses", "messages"), and the registry's key. It never changes
	// once a log has recorded it.
	Name string
	// Provider is the provider's name: a spec's model.provider, the
	// session header's and model_call's provider field ("openai",
	// "anthropic", "scripted"). Several APIs may share one provider; at
	// most one of them has a Client, and that one is what Lookup returns.
	Provider string
	// KeyEnv is the environment variable the provider's API key is read
	// from when model.api_key_env names none ("OPENAI_API_KEY"); "" for a
	// provider that takes no key.
	KeyEnv string
	// BaseURL is the provider's public API root, used when model.base_url
	// is empty; "" for a model with no network endpoint (scripted).
	BaseURL string
	// InputExcludesCache says the provider's own input token count leaves
	// out cache reads and writes (Anthropic's input_tokens), where
	// agentctl's InputTokens holds them: a reader of the provider's usage
	// as it reported it (an imported transcript) adds them back.
	InputExcludesCache bool
	// GenAIProvider is the provider's gen_ai.provider.name in the
	// OpenTelemetry GenAI conventions ("gcp.gemini"); "" when it is
	// Provider itself (openai, anthropic).
	GenAIProvider string
	// Scripted marks the in-process scripted model: model.script is
	// required, no key or network is needed, and an external agent's
	// proxy serves the script over whatever wire the agent speaks.
	Scripted bool
	// Check validates the spec's model section beyond what every API
	// requires (provider and id); it returns one message per problem,
	// naming the key ("script is required …"). Nil checks nothing more.
	Check func(m Model) []string
	// Client makes the in-process client a spec's model runs with. Nil
	// for an API that only the proxy speaks.
	Client func(c ClientConfig) (Provider, error)
	// Wire is the API's wire format as the proxy serves, records and
	// replays it. Nil for an API with no wire of its own (scripted).
	Wire Wire
	// Env names the variables that point the API's SDKs and CLIs at a
	// base URL: what an external agent (and `agentctl proxy -- COMMAND`)
	// is given to send its calls through the proxy. APIs of one provider
	// that share an SDK may each name them; they are set once.
	Env Env
}

// Env names the environment variables an API's SDKs and CLIs read.
type Env struct {
	// BaseURL are set to the proxy's session URL followed by BaseSuffix
	// ("/v1" for SDKs that want the versioned root; "" for those that
	// append it themselves). The first is the one a person is told.
	BaseURL    []string
	BaseSuffix string
	// Key are set to the key the agent is given.
	Key []string
	// Model are set to the pinned model; DefaultModel too, but a spec's
	// agent.env may change those (a default, not a pin).
	Model        []string
	DefaultModel []string
}

// Model is the part of a spec's model section the registry's values read
// (the spec package maps its own type onto it, so that this package does
// not depend on it).
type Model struct {
	Provider  string
	ID        string
	Script    string
	BaseURL   string
	APIKeyEnv string
}

// ClientConfig is what API.Client needs to make a client.
type ClientConfig struct {
	// Model is the model id the session pins.
	Model string
	// Script is model.script, the scripted model's file of turns
	// (scripted only).
	Script string
	// BaseURL is model.base_url; "" means API.BaseURL.
	BaseURL string
	// APIKey is the key read from model.api_key_env or API.KeyEnv; "" for
	// a server that takes none. KeyEnv is the variable it was read from
	// (named in the hint of a refused key).
	APIKey     string
	KeyEnv     string
	MaxRetries int
}

// Wire is a model API's wire format, as agentctl's proxy speaks it: the
// routes it serves, how a request reads into the session's messages, how
// an answer (streamed or plain) reads into a Response, how a
// replayed answer is rendered, and what its errors look like. Its methods
// are safe for concurrent use; they hold no state.
type Wire interface {
	// Routes are the HTTP routes of the API, below any /s/<session>/ and
	// /t/<token>/ prefix of the proxy's base URL.
	Routes() []Route
	// ParseRequest reads r.Body (and, for APIs that put them in the URL,
	// r.Vars: the model, streaming) into r's parsed fields. A body it
	// cannot read is an error the proxy answers with 400 in ErrorBody's
	// shape; its message names the API and the field.
	ParseRequest(r *Call) error
	// ParseResponse reads an answer of status 2xx as the client got it:
	// body is SSE when stream is true, else the JSON object. It uses the
	// same parsers and normalisation as the API's client, so an answer
	// recorded through the proxy reads as one the runner asked for. A
	// body cut short gives what it holds with the error; an error event
	// in a stream is a *Error.
	ParseResponse(body []byte, stream bool, reqModel string) (Response, error)
	// ParseError maps a non-2xx answer to the provider's error.
	ParseError(status int, h http.Header, body []byte) *Error
	// NewEncoder renders an answer agentctl makes (scripted, replayed) in
	// the wire format, streaming when stream is set, with id as the
	// answer's id and model as its model.
	NewEncoder(w http.ResponseWriter, stream bool, id, model string) Encoder
	// ResponseID is a deterministic answer id of the API's shape for call
	// turn of session ("msg_<session>_<turn>").
	ResponseID(session string, turn int) string
	// ErrorBody is an error in the API's shape: what the client's SDK
	// turns into its own error, so the agent shows msg.
	ErrorBody(typ, msg string) []byte
	// SetKey puts key on h as the API's credential, in place of any the
	// client sent.
	SetKey(h http.Header, key string)
}

// Encoder writes one answer as it is produced: Text for each delta of
// answer text, then Finish with the whole turn. Not safe for concurrent
// use.
type Encoder interface {
	// Text streams one delta of text (buffered for a plain answer).
	Text(delta string)
	// Finish ends the answer with the whole turn.
	Finish(r Response)
	// Began reports whether anything was written (the status line).
	Began() bool
}

// Op is what a route does.
type Op string

// The operations a route serves.
const (
	// OpGenerate is a model call: recorded, replayed, forked.
	OpGenerate Op = "generate"
	// OpCountTokens counts a request's tokens (Anthropic's
	// /v1/messages/count_tokens): forwarded, not recorded.
	OpCountTokens Op = "count_tokens"
	// OpModels lists or names models (GET /v1/models[/{id}]).
	OpModels Op = "models"
)

// Route is one HTTP route of a wire. Path segments of the form {name}
// match one path segment and bind it in Call.Vars; a segment may follow
// the variable with a literal suffix ("{model}:generateContent").
type Route struct {
	Method string
	Path   string
	Op     Op
	// API is the name recorded for a call of this route: API.Name for a
	// model call, the Op's name for the other operations ("models",
	// "count_tokens"), so that logs keep the names they always had.
	API string
	// Stream, when set, makes every call of the route a streaming one
	// whatever the body says (Gemini's :streamGenerateContent).
	Stream bool
}

// Call is a model request as a Wire parsed it: the provider-neutral
// history (roles user, assistant, tool; the system text apart), the same
// shape the runner projects, so request digests mean the same thing for
// calls the runner made and calls the proxy saw.
type Call struct {
	// Inputs, set by the proxy: Body is the request body; Path its path,
	// RawQuery its query; Route the route it came by (Route.Stream,
	// Route.Op), Vars the route's bound segments ("model").
	Body     []byte
	Path     string
	RawQuery string
	Route    Route
	Vars     map[string]string

	Model     string
	Stream    bool
	MaxTokens int64
	System    string
	Messages  []session.Message
	Tools     []string
	// Metadata is the request's metadata object (volatile: a user or
	// session id).
	Metadata json.RawMessage
	// Failed holds the ids of tool results the client marked as errors
	// (Anthropic's is_error).
	Failed map[string]bool
}

var (
	mu   sync.RWMutex
	apis []API
)

// Register adds api to the registry. It is called from the init function
// of the API's own package (see the all package). It panics on a value
// that would make a name ambiguous: a repeated Name, a second client for
// one Provider, or a route another wire serves; these are programming
// errors found by the first test that links the packages.
func Register(api API) {
	mu.Lock()
	defer mu.Unlock()
	if api.Name == "" || api.Provider == "" {
		panic("modelapi: Register of an API without Name or Provider")
	}
	for _, o := range apis {
		if o.Name == api.Name {
			panic("modelapi: Register of " + api.Name + " twice")
		}
		if o.Client != nil && api.Client != nil && o.Provider == api.Provider {
			panic("modelapi: two clients for provider " + api.Provider + ": " + o.Name + " and " + api.Name)
		}
		if o.Wire == nil || api.Wire == nil {
			continue
		}
		for _, r := range api.Wire.Routes() {
			for _, q := range o.Wire.Routes() {
				if r.Method == q.Method && r.Path == q.Path {
					panic(fmt.Sprintf("modelapi: route %s %s of %s is already %s's", r.Method, r.Path, api.Name, o.Name))
				}
			}
		}
	}
	apis = append(apis, api)
	sort.Slice(apis, func(i, j int) bool { return apis[i].Name < apis[j].Name })
}

// All returns every registered API, by Name.
func All() []API {
	mu.RLock()
	defer mu.RUnlock()
	return append([]API(nil), apis...)
}

// Providers returns the provider names a spec may use (those with a
// client), sorted.
func Providers() []string {
	var ps []string
	for _, a := range All() {
		if a.Client != nil {
			ps = append(ps, a.Provider)
		}
	}
	sort.Strings(ps)
	return ps
}

// UnknownError is the error of a name no registered API has.
type UnknownError struct {
	// What is "provider" or "api"; Name the name asked for; Known the
	// names there are.
	What  string
	Name  string
	Known []string
}

func (e *UnknownError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("modelapi: no %s given: want one of %s", e.What, strings.Join(e.Known, ", "))
	}
	return fmt.Sprintf("modelapi: unknown %s %q: want one of %s", e.What, e.Name, strings.Join(e.Known, ", "))
}

// Lookup returns the API a spec's model.provider names: the one of that
// Provider with a Client. An unknown name is an *UnknownError listing the
// known ones.
func Lookup(provider string) (API, error) {
	for _, a := range All() {
		if a.Provider == provider && a.Client != nil {
			return a, nil
		}
	}
	return API{}, &UnknownError{What: "provider", Name: provider, Known: Providers()}
}

// LookupWire returns the API whose wire records calls as name (a
// model_call's "api" attribute: an API's Name, or a route's API such as
// "count_tokens"), with that route. An unknown name is an *UnknownError
// listing the known ones.
func LookupWire(name string) (API, Route, error) {
	var known []string
	for _, a := range All() {
		if a.Wire == nil {
			continue
		}
		for _, r := range a.Wire.Routes() {
			if r.API == name {
				return a, r, nil
			}
			known = append(known, r.API)
		}
	}
	return API{}, Route{}, &UnknownError{What: "api", Name: name, Known: dedup(known)}
}

// Match returns the API and route serving method and path (below the
// proxy's prefixes), with the route's bound segments. ok is false when no
// wire serves it.
func Match(method, path string) (api API, r Route, vars map[string]string, ok bool) {
	for _, a := range All() {
		if a.Wire == nil {
			continue
		}
		for _, r := range a.Wire.Routes() {
			if r.Method != method {
				continue
			}
			if vars, ok := matchPath(r.Path, path); ok {
				return a, r, vars, true
			}
		}
	}
	return API{}, Route{}, nil, false
}

// ModelSetter is implemented by a wire whose requests name the model
// elsewhere than the body's "model" field (Gemini's path): a fork's
// --model sends the call to another model through it. Without it the
// proxy rewrites the body's "model".
type ModelSetter interface {
	// SetModel returns the request's path and body asking for model.
	SetModel(path string, body []byte, model string) (string, []byte, error)
}

// Sniffer is implemented by a wire whose requests its headers tell apart
// (Anthropic's anthropic-version): Guess asks it of a request no route
// matches.
type Sniffer interface {
	Speaks(h http.Header) bool
}

// Guess returns the API and route a request no route matched most likely
// spoke, for the shape of the error it is answered with: a wire whose
// route path shares more than the version segment with path (POST
// /v1/messages/batches is Anthropic's), else a wire that claims the
// headers (Sniffer). ok is false when none does: the caller answers in a
// neutral shape rather than guess a provider.
func Guess(path string, h http.Header) (api API, r Route, ok bool) {
	best := 2 // "" and the version segment
	for _, a := range All() {
		if a.Wire == nil {
			continue
		}
		for _, rt := range a.Wire.Routes() {
			if n := commonSegments(rt.Path, path); n > best {
				api, r, ok, best = a, rt, true, n
			}
		}
	}
	if ok {
		return api, r, true
	}
	for _, a := range All() {
		if sn, is := a.Wire.(Sniffer); is && sn.Speaks(h) {
			return a, a.Wire.Routes()[0], true
		}
	}
	return API{}, Route{}, false
}

func commonSegments(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	n := 0
	for n < len(as) && n < len(bs) && as[n] == bs[n] && !strings.HasPrefix(as[n], "{") {
		n++
	}
	return n
}

// RoutesText lists every route served, for the error of a request no
// route serves ("POST /v1/chat/completions, …").
func RoutesText() string {
	var s []string
	for _, a := range All() {
		if a.Wire == nil {
			continue
		}
		for _, r := range a.Wire.Routes() {
			s = append(s, r.Method+" "+r.Path)
		}
	}
	return strings.Join(dedup(s), ", ")
}

// Match reports whether path is r's, with the segments it binds.
func (r Route) Match(path string) (map[string]string, bool) { return matchPath(r.Path, path) }

func matchPath(pattern, path string) (map[string]string, bool) {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return nil, false
	}
	var vars map[string]string
	for i, p := range ps {
		if !strings.HasPrefix(p, "{") {
			if p != xs[i] {
				return nil, false
			}
			continue
		}
		end := strings.IndexByte(p, '}')
		if end < 0 {
			return nil, false
		}
		name, suffix := p[1:end], p[end+1:]
		v, ok := strings.CutSuffix(xs[i], suffix)
		if !ok || v == "" {
			return nil, false
		}
		if vars == nil {
			vars = map[string]string{}
		}
		vars[name] = v
	}
	return vars, true
}

func dedup(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// KeyEnv is the variable m's key is read from: model.api_key_env, else the
// API's KeyEnv; "" for a provider that takes no key or that is unknown.
func KeyEnv(m Model) string {
	a, err := Lookup(m.Provider)
	if err != nil || a.KeyEnv == "" {
		return ""
	}
	if m.APIKeyEnv != "" {
		return m.APIKeyEnv
	}
	return a.KeyEnv
}

// InputExcludesCache reports whether provider's own input token count
// leaves out the cache (API.InputExcludesCache of any of its APIs); false
// for an unknown provider.
func InputExcludesCache(provider string) bool {
	for _, a := range All() {
		if a.Provider == provider && a.InputExcludesCache {
			return true
		}
	}
	return false
}

// GenAIProviderName is provider's gen_ai.provider.name: its API's
// GenAIProvider when one sets it, else provider as it is.
func GenAIProviderName(provider string) string {
	for _, a := range All() {
		if a.Provider == provider && a.GenAIProvider != "" {
			return a.GenAIProvider
		}
	}
	return provider
}

// Base is baseURL when it is set, else the provider's BaseURL ("" for an
// unknown provider or one with no endpoint).
func Base(provider, baseURL string) string {
	if baseURL != "" {
		return baseURL
	}
	if a, err := Lookup(provider); err == nil {
		return a.BaseURL
	}
	for _, a := range All() {
		if a.Provider == provider && a.BaseURL != "" {
			return a.BaseURL
		}
	}
	return ""
}
