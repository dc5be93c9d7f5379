package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
)

// Name is the provider's name in specs, session headers and model_call
// events.
const Name = "gemini"

// OTelProviderName is gen_ai.provider.name for the Gemini API in the
// OpenTelemetry GenAI conventions (semconv's gcp.gemini: "Gemini API",
// as opposed to gcp.vertex_ai).
const OTelProviderName = "gcp.gemini"

// KeyEnv is the variable the API key is read from by default.
const KeyEnv = "GEMINI_API_KEY"

// BaseURL is the API root when a spec's base_url names none.
const BaseURL = "https://generativelanguage.googleapis.com"

// APIVersion is the path segment of the API version agentctl speaks, the
// one gemini-cli and the Gen AI SDKs use.
const APIVersion = "v1beta"

// part is one part of a content: text (a thought when Thought is set), a
// function call of the model, or a function's response sent back.
type part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// usage is usageMetadata. promptTokenCount already holds
// cachedContentTokenCount; thoughtsTokenCount is billed as output but
// counted apart from candidatesTokenCount.
type usage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
}

// apiError is the error envelope: {"error":{"code","message","status"}},
// with google.rpc details (an ErrorInfo's reason names the cause).
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
	} `json:"details"`
}

// typ is the error's type as agentctl records it: an ErrorInfo's reason
// (API_KEY_INVALID, replay_divergence), else the rpc status.
func (e *apiError) typ() string {
	for _, d := range e.Details {
		if strings.HasSuffix(d.Type, "google.rpc.ErrorInfo") && d.Reason != "" {
			return d.Reason
		}
	}
	return e.Status
}

// chunk is one GenerateContentResponse: the whole answer of
// generateContent, one piece of streamGenerateContent.
type chunk struct {
	Candidates []struct {
		Content      content `json:"content"`
		FinishReason string  `json:"finishReason"`
		Index        int     `json:"index"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *usage    `json:"usageMetadata"`
	ModelVersion  string    `json:"modelVersion"`
	ResponseID    string    `json:"responseId"`
	Error         *apiError `json:"error"`
}

// CallID is the id agentctl gives the j-th function call of the message
// at index msg of a conversation (system text not counted): the Gemini
// API sends none, and the next request repeats the call at the same
// place, so the answer's call and the request's copy of it agree across
// the proxy, replays and restarts, as otelsession's synthesized ids do.
// An id a client puts on the call in its history is its own (gemini-cli
// 0.61 writes list_directory_<epoch ms>_0: another on every run), so it
// only pairs the call with its response; it never names the call.
func CallID(msg, j int) string { return fmt.Sprintf("gemini-call-%d-%d", msg, j) }

// synthesized reports whether id is one CallID made: such ids are not
// sent to the API, which never gave them.
func synthesized(id string) bool { return strings.HasPrefix(id, "gemini-call-") }

// accumulator folds the chunks of one answer.
type accumulator struct {
	text, thinking strings.Builder
	calls          []session.ToolCall
	finish         string
	block          string
	usage          usage
	model, id      string
	chunks         int
}

// add folds c in and returns its answer text.
func (a *accumulator) add(c *chunk) string {
	a.chunks++
	if c.ModelVersion != "" {
		a.model = c.ModelVersion
	}
	if c.ResponseID != "" {
		a.id = c.ResponseID
	}
	if c.UsageMetadata != nil {
		a.usage = *c.UsageMetadata
	}
	if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
		a.block = c.PromptFeedback.BlockReason
	}
	var delta strings.Builder
	for _, cand := range c.Candidates {
		if cand.Index != 0 {
			continue
		}
		if cand.FinishReason != "" {
			a.finish = cand.FinishReason
		}
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				args := p.FunctionCall.Args
				if len(args) == 0 {
					args = json.RawMessage(`{}`)
				}
				a.calls = append(a.calls, session.ToolCall{Name: p.FunctionCall.Name, Args: provider.NormaliseArgs(string(args))})
			case p.Thought:
				a.thinking.WriteString(p.Text)
			default:
				a.text.WriteString(p.Text)
				delta.WriteString(p.Text)
			}
		}
	}
	return delta.String()
}

// BlockedWithoutText is the Refusal of an answer Gemini blocked without
// text (a safety finishReason, a prompt's blockReason); the reason
// follows it (blocked), and a replay renders the block it names again
// (blockOf).
const BlockedWithoutText = "(the provider blocked the answer: "

// The two kinds of block a Refusal without text names.
const (
	blockPrompt = "promptFeedback.blockReason "
	blockFinish = "finishReason "
)

// blocked is the Refusal of a block of kind (blockPrompt, blockFinish)
// for reason.
func blocked(kind, reason string) string { return BlockedWithoutText + kind + reason + ")" }

// blockOf reads a Refusal blocked wrote back: the kind and reason of the
// block; ok is false for any other refusal (the model's own words).
func blockOf(refusal string) (kind, reason string, ok bool) {
	rest, ok := strings.CutPrefix(refusal, BlockedWithoutText)
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutSuffix(rest, ")")
	for _, k := range []string{blockPrompt, blockFinish} {
		if r, found := strings.CutPrefix(rest, k); ok && found && r != "" {
			return k, r, true
		}
	}
	return "", "", false
}

// refusalReason reports whether a finishReason is a block (a safety or
// policy filter, not the model's own end).
func refusalReason(finish string) bool {
	switch finish {
	case "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY":
		return true
	}
	return false
}

// response is the answer so far; at is the index the answer takes in
// its conversation (CallID).
func (a *accumulator) response(reqModel string, at int) provider.Response {
	r := provider.Response{
		Model:           a.model,
		ResponseID:      a.id,
		Text:            a.text.String(),
		Thinking:        a.thinking.String(),
		InputTokens:     a.usage.PromptTokenCount + a.usage.ToolUsePromptTokenCount,
		CacheReadTokens: a.usage.CachedContentTokenCount,
		OutputTokens:    a.usage.CandidatesTokenCount + a.usage.ThoughtsTokenCount,
	}
	if r.Model == "" {
		r.Model = reqModel
	}
	for j, tc := range a.calls {
		tc.ID = CallID(at, j)
		r.ToolCalls = append(r.ToolCalls, tc)
	}
	switch {
	case a.block != "" || refusalReason(a.finish):
		kind, why := blockFinish, a.finish
		if a.block != "" {
			kind, why = blockPrompt, a.block
		}
		r.Refusal, r.Text = r.Text, ""
		if strings.TrimSpace(r.Refusal) == "" {
			r.Refusal = blocked(kind, why)
		}
		r.FinishReason = provider.FinishContentFilter
	case len(r.ToolCalls) > 0:
		r.FinishReason = provider.FinishToolCalls
	case a.finish == "STOP" || a.finish == "FINISH_REASON_UNSPECIFIED":
		r.FinishReason = provider.FinishStop
	case a.finish == "MAX_TOKENS":
		r.FinishReason = provider.FinishLength
	default:
		r.FinishReason = strings.ToLower(a.finish)
	}
	r.CostUSD = pricing.CostOf(r.Model, pricing.Usage{Input: r.InputTokens, CacheRead: r.CacheReadTokens, Output: r.OutputTokens})
	return r
}

// maxEvent bounds one SSE event (a line of data): a chunk carries one
// piece of the answer, never megabytes.
const maxEvent = 16 << 20

// events reads the data of each SSE event of r in turn, calling fn with
// it; fn's error stops the read.
func events(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data []byte
	flushEvent := func() error {
		if len(data) == 0 {
			return nil
		}
		d := data
		data = nil
		return fn(d)
	}
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		switch {
		case len(line) == 0:
			if err := flushEvent(); err != nil {
				return err
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, d...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flushEvent()
}

// Parse reads a Gemini answer from the bytes the API sent: SSE of
// chunks when stream is true (streamGenerateContent?alt=sse), else the
// JSON object of generateContent (or the JSON array of chunks that
// streamGenerateContent sends without alt=sse). at is the index the
// answer takes in its conversation, which names its function calls
// (CallID). A body cut short gives what it holds with the error; an
// error chunk inside a 200 stream is an *provider.Error with InStream.
func Parse(body []byte, stream bool, reqModel string, at int) (provider.Response, error) {
	var acc accumulator
	err := parseInto(&acc, body, stream, nil)
	return acc.response(reqModel, at), err
}

func parseInto(acc *accumulator, body []byte, stream bool, onText func(string)) error {
	one := func(data []byte) error {
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return &provider.Error{Provider: Name, Type: "stream_error", Message: "malformed response chunk: " + err.Error()}
		}
		if c.Error != nil {
			return inStream(c.Error)
		}
		if d := acc.add(&c); d != "" && onText != nil {
			onText(d)
		}
		return nil
	}
	if !stream {
		b := bytes.TrimSpace(body)
		if len(b) > 0 && b[0] == '[' {
			var arr []json.RawMessage
			if err := json.Unmarshal(b, &arr); err != nil {
				return &provider.Error{Provider: Name, Type: "stream_error", Message: "malformed response array: " + err.Error()}
			}
			for _, d := range arr {
				if err := one(d); err != nil {
					return err
				}
			}
		} else if err := one(b); err != nil {
			return err
		}
	} else if err := events(bytes.NewReader(body), one); err != nil {
		if _, ok := err.(*provider.Error); ok {
			return err
		}
		return &provider.Error{Provider: Name, Type: "stream_error", Message: "read stream: " + err.Error()}
	}
	if acc.chunks == 0 {
		return &provider.Error{Provider: Name, Type: provider.ErrEmptyStream, Message: "the 200 response carried no GenerateContentResponse: not an answer"}
	}
	return nil
}

func inStream(e *apiError) *provider.Error {
	typ := e.typ()
	if typ == "" {
		typ = "stream_error"
	}
	return &provider.Error{Provider: Name, Type: typ, Message: e.Message, InStream: true, Retryable: transient(e.Status)}
}

// transient reports whether an error chunk's rpc status is worth a retry.
func transient(status string) bool {
	switch status {
	case "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED":
		return true
	}
	return false
}

// ParseError reads a failed (non-2xx) response into an *provider.Error:
// the status and retry rule of every provider, the type from the
// envelope's ErrorInfo reason or rpc status.
func ParseError(status int, header http.Header, body []byte) *provider.Error {
	e := provider.ParseError(Name, status, header, body)
	var env struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &env) == nil && env.Error != nil {
		e.Type = env.Error.typ()
		if env.Error.Message != "" {
			e.Message = env.Error.Message
		}
	}
	return e
}

// rpcStatus is the google.rpc code name the API answers an HTTP status
// with.
func rpcStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "UNKNOWN"
}

// ErrorBody is an error in the API's shape, which the Gen AI SDKs turn
// into their ApiError: the rpc status of the HTTP status, and typ (when
// it says more) as an ErrorInfo reason, which ParseError reads back.
func ErrorBody(status int, typ, msg string) []byte {
	rpc := rpcStatus(status)
	e := map[string]any{"code": status, "message": msg, "status": rpc}
	if typ != "" && typ != rpc {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": typ, "domain": "agentctl"}}
	}
	return marshal(map[string]any{"error": e})
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
