package provider

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	assestream "github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// The Parse functions read an answer from the bytes a provider sent, with
// the same stream parsers (the SDKs' decoders and accumulators) and the
// same normalisation the live providers use, so that an answer recorded
// through agentctl's model proxy reads exactly as one the runner asked
// for. body is the whole response body as the wire carried it: SSE when
// stream is true, the JSON object otherwise; a body cut short (a client
// that went away) gives what it holds with the parse error. reqModel
// stands in when the answer names no model. A 2xx body that carries an
// error (an error event in a stream) returns an *Error; a non-2xx status
// is the caller's to map with ParseError.

// ParseChatCompletion reads a Chat Completions answer.
func ParseChatCompletion(body []byte, stream bool, reqModel string) (Response, error) {
	var acc openai.ChatCompletionAccumulator
	if !stream {
		if err := json.Unmarshal(body, &acc.ChatCompletion); err != nil {
			return Response{Model: reqModel}, &Error{Provider: "openai", Type: "stream_error", Message: "malformed chat.completion body: " + err.Error()}
		}
		return openAIResponse(&acc, reqModel), nil
	}
	s := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(sseResponse(body)), nil)
	chunks := 0
	for s.Next() {
		chunks++
		acc.AddChunk(s.Current())
	}
	resp := openAIResponse(&acc, reqModel)
	if err := s.Err(); err != nil {
		return resp, openAIError(err)
	}
	if chunks == 0 {
		return resp, &Error{Provider: "openai", Type: ErrEmptyStream, Message: "the 200 response carried no stream chunk: not an answer"}
	}
	return resp, nil
}

// ParseMessages reads an Anthropic Messages answer. Thinking blocks are
// kept in Response.Thinking.
func ParseMessages(body []byte, stream bool, reqModel string) (Response, error) {
	var msg anthropic.Message
	if !stream {
		if err := json.Unmarshal(body, &msg); err != nil {
			return Response{Model: reqModel}, &Error{Provider: "anthropic", Type: "stream_error", Message: "malformed message body: " + err.Error()}
		}
		return anthropicResponse(&msg, iterationsOf(msg.Usage.RawJSON()), reqModel), nil
	}
	s := assestream.NewStream[anthropic.MessageStreamEventUnion](assestream.NewDecoder(sseResponse(body)), nil)
	var iters []anthropicIteration
	var accErr error
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil && accErr == nil {
			accErr = err
		}
		if ev.Type == "message_delta" {
			iters = iterationsOf(ev.Usage.RawJSON())
		}
	}
	resp := anthropicResponse(&msg, iters, reqModel)
	if err := s.Err(); err != nil {
		return resp, anthropicError(err)
	}
	if accErr != nil {
		return resp, &Error{Provider: "anthropic", Type: "stream_error", Message: accErr.Error()}
	}
	if msg.ID == "" && msg.Type == "" {
		return resp, &Error{Provider: "anthropic", Type: ErrEmptyStream, Message: "the 200 response carried no message_start event: not an answer"}
	}
	return resp, nil
}

// responsesObject is the part of an OpenAI Responses API response object
// an answer is read from.
type responsesObject struct {
	ID     string `json:"id"`
	Model  string `json:"model"`
	Status string `json:"status"`
	Output []struct {
		Type      string `json:"type"`
		Role      string `json:"role"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Input     string `json:"input"`
		Content   []struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		} `json:"content"`
		Summary []struct {
			Text string `json:"text"`
		} `json:"summary"`
	} `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

func (o *responsesObject) response(reqModel string) Response {
	r := Response{Model: o.Model, ResponseID: o.ID, InputTokens: o.Usage.InputTokens,
		CacheReadTokens: o.Usage.InputTokensDetails.CachedTokens, OutputTokens: o.Usage.OutputTokens}
	if r.Model == "" {
		r.Model = reqModel
	}
	var text, refusal, thinking strings.Builder
	for _, it := range o.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				text.WriteString(c.Text)
				refusal.WriteString(c.Refusal)
			}
		case "function_call":
			r.ToolCalls = append(r.ToolCalls, session.ToolCall{ID: it.CallID, Name: it.Name, Args: normaliseArgs(it.Arguments)})
		case "custom_tool_call":
			args, _ := json.Marshal(map[string]string{"input": it.Input})
			r.ToolCalls = append(r.ToolCalls, session.ToolCall{ID: it.CallID, Name: it.Name, Args: args})
		case "reasoning":
			for _, s := range it.Summary {
				thinking.WriteString(s.Text)
			}
		}
	}
	r.Text, r.Refusal, r.Thinking = text.String(), refusal.String(), thinking.String()
	switch {
	case len(r.ToolCalls) > 0:
		r.FinishReason = FinishToolCalls
	case o.Status == "incomplete" && o.IncompleteDetails != nil && o.IncompleteDetails.Reason == "max_output_tokens":
		r.FinishReason = FinishLength
	case o.Status == "incomplete" && o.IncompleteDetails != nil && o.IncompleteDetails.Reason == "content_filter":
		r.FinishReason = FinishContentFilter
	case o.Status == "incomplete" && o.IncompleteDetails != nil:
		r.FinishReason = o.IncompleteDetails.Reason
	case o.Status == "completed" || o.Status == "":
		r.FinishReason = FinishStop
	default:
		r.FinishReason = o.Status
	}
	r.CostUSD = pricing.CostOf(r.Model, pricing.Usage{Input: r.InputTokens, CacheRead: r.CacheReadTokens, Output: r.OutputTokens})
	return r
}

// ParseResponses reads an OpenAI Responses API answer: the response object,
// or from a stream the one its response.completed (or .incomplete,
// .failed) event carries; a stream cut before that gives the text deltas
// seen so far. Reasoning summaries are kept in Response.Thinking.
func ParseResponses(body []byte, stream bool, reqModel string) (Response, error) {
	if !stream {
		var o responsesObject
		if err := json.Unmarshal(body, &o); err != nil {
			return Response{Model: reqModel}, &Error{Provider: "openai", Type: "stream_error", Message: "malformed response body: " + err.Error()}
		}
		return o.response(reqModel), responsesFailed(&o)
	}
	s := ssestream.NewStream[json.RawMessage](ssestream.NewDecoder(sseResponse(body)), nil)
	var partial strings.Builder
	events := 0
	for s.Next() {
		events++
		var ev struct {
			Type     string           `json:"type"`
			Delta    string           `json:"delta"`
			Response *responsesObject `json:"response"`
			Code     string           `json:"code"`
			Message  string           `json:"message"`
		}
		if json.Unmarshal(s.Current(), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "response.output_text.delta":
			partial.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			if ev.Response != nil {
				return ev.Response.response(reqModel), responsesFailed(ev.Response)
			}
		case "error":
			return Response{Model: reqModel, Text: partial.String()}, &Error{Provider: "openai", Type: ev.Code, Message: ev.Message, InStream: true, Retryable: retryableType(ev.Code)}
		}
	}
	resp := Response{Model: reqModel, Text: partial.String()}
	if err := s.Err(); err != nil {
		return resp, openAIError(err)
	}
	if events == 0 {
		return resp, &Error{Provider: "openai", Type: ErrEmptyStream, Message: "the 200 response carried no stream event: not an answer"}
	}
	return resp, &Error{Provider: "openai", Type: "stream_error", Message: "the stream ended before response.completed"}
}

func responsesFailed(o *responsesObject) error {
	if o.Status != "failed" || o.Error == nil {
		return nil
	}
	return &Error{Provider: "openai", Type: o.Error.Code, Message: o.Error.Message, InStream: true, Retryable: retryableType(o.Error.Code)}
}

// ParseError reads a failed (non-2xx) response's body in either
// provider's error envelope into an *Error, as the live providers report
// it.
func ParseError(providerName string, status int, header http.Header, body []byte) *Error {
	e := &Error{Provider: providerName, Status: status, Retryable: shouldRetry(status, header), RetryAfter: retryAfterOf(header)}
	if typ, msg, ok := parseErrorBody(body); ok {
		e.Type, e.Message = typ, msg
	}
	if e.Message == "" {
		e.Message = strings.ToLower(http.StatusText(status))
	}
	return e
}

// sseResponse wraps a captured SSE body as the http.Response the SDKs'
// decoders read.
func sseResponse(body []byte) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
	}
}
