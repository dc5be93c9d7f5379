package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/provider/gemini"
)

// encoder writes one answer in a provider's wire format as it is produced:
// start before the first byte of text, text for each delta, finish with the
// whole turn. For a non-streaming request it buffers and writes one JSON
// object at finish; streaming, it writes and flushes each SSE event.
type encoder struct {
	api    API
	stream bool
	id     string
	model  string
	w      http.ResponseWriter
	seq    int // responses: sequence_number
	began  bool
	inText bool // a text block/part is open
	// gem writes a Gemini answer: its wire format is its package's.
	gem *gemini.Encoder
}

func newEncoder(c *Call, id, model string, w http.ResponseWriter) *encoder {
	e := &encoder{api: c.API, stream: c.Stream, id: id, model: model, w: w}
	if c.API == APIGemini {
		_, method, _, _ := gemini.Route(c.Path)
		e.gem = gemini.NewEncoder(w, method, c.RawQuery, id, model)
	}
	return e
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// event writes one SSE event and flushes it.
func (e *encoder) event(name string, v any) {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(marshal(v))
	b.WriteString("\n\n")
	e.w.Write(b.Bytes())
	flush(e.w)
}

func flush(w io.Writer) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

type obj = map[string]any

func (e *encoder) header() {
	if e.began {
		return
	}
	e.began = true
	if !e.stream {
		return
	}
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	e.w.WriteHeader(http.StatusOK)
	switch e.api {
	case APIChat:
		e.event("", e.chatChunk(obj{"role": "assistant", "content": ""}, nil))
	case APIResponses:
		e.resEvent("response.created", obj{"response": e.responseObject(nil, "in_progress")})
	case APIMessages:
		e.event("message_start", obj{"type": "message_start", "message": obj{
			"id": e.id, "type": "message", "role": "assistant", "model": e.model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": obj{"input_tokens": 0, "output_tokens": 0}}})
	}
}

func (e *encoder) chatChunk(delta obj, finish any) obj {
	return obj{"id": e.id, "object": "chat.completion.chunk", "created": 0, "model": e.model,
		"choices": []any{obj{"index": 0, "delta": delta, "finish_reason": finish}}}
}

func (e *encoder) resEvent(typ string, fields obj) {
	fields["type"] = typ
	fields["sequence_number"] = e.seq
	e.seq++
	e.event(typ, fields)
}

// text streams one delta of answer text.
func (e *encoder) text(delta string) {
	if e.gem != nil {
		e.began = true
		e.gem.Text(delta)
		return
	}
	e.header()
	if !e.stream || delta == "" {
		return
	}
	switch e.api {
	case APIChat:
		e.event("", e.chatChunk(obj{"content": delta}, nil))
	case APIResponses:
		if !e.inText {
			e.inText = true
			e.resEvent("response.output_item.added", obj{"output_index": 0, "item": obj{"id": e.id + "_msg", "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
			e.resEvent("response.content_part.added", obj{"item_id": e.id + "_msg", "output_index": 0, "content_index": 0, "part": obj{"type": "output_text", "text": "", "annotations": []any{}}})
		}
		e.resEvent("response.output_text.delta", obj{"item_id": e.id + "_msg", "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []any{}})
	case APIMessages:
		if !e.inText {
			e.inText = true
			e.event("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}})
		}
		e.event("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": delta}})
	}
}

func anthropicStop(finish string) string {
	switch finish {
	case provider.FinishStop:
		return "end_turn"
	case provider.FinishToolCalls:
		return "tool_use"
	case provider.FinishLength:
		return "max_tokens"
	case provider.FinishContentFilter:
		return "refusal"
	}
	return finish
}

func (e *encoder) chatUsage(r provider.Response) obj {
	return obj{"prompt_tokens": r.InputTokens, "completion_tokens": r.OutputTokens, "total_tokens": r.InputTokens + r.OutputTokens,
		"prompt_tokens_details": obj{"cached_tokens": r.CacheReadTokens}}
}

func (e *encoder) anthropicUsage(r provider.Response) obj {
	return obj{"input_tokens": r.InputTokens - r.CacheReadTokens - r.CacheCreationTokens, "output_tokens": r.OutputTokens,
		"cache_read_input_tokens": r.CacheReadTokens, "cache_creation_input_tokens": r.CacheCreationTokens}
}

func (e *encoder) responseOutput(r provider.Response) []any {
	out := []any{}
	if r.Text != "" || r.Refusal != "" {
		part := obj{"type": "output_text", "text": r.Text, "annotations": []any{}}
		if r.Refusal != "" {
			part = obj{"type": "refusal", "refusal": r.Refusal}
		}
		out = append(out, obj{"id": e.id + "_msg", "type": "message", "role": "assistant", "status": "completed", "content": []any{part}})
	}
	for i, tc := range r.ToolCalls {
		out = append(out, obj{"id": fmt.Sprintf("%s_fc%d", e.id, i), "type": "function_call", "status": "completed",
			"call_id": tc.ID, "name": tc.Name, "arguments": string(tc.Args)})
	}
	return out
}

func (e *encoder) responseObject(r *provider.Response, status string) obj {
	o := obj{"id": e.id, "object": "response", "created_at": 0, "status": status, "model": e.model,
		"output": []any{}, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "error": nil, "incomplete_details": nil}
	if r != nil {
		o["output"] = e.responseOutput(*r)
		o["usage"] = obj{"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens, "total_tokens": r.InputTokens + r.OutputTokens,
			"input_tokens_details": obj{"cached_tokens": r.CacheReadTokens}, "output_tokens_details": obj{"reasoning_tokens": 0}}
		if r.FinishReason == provider.FinishLength {
			o["status"] = "incomplete"
			o["incomplete_details"] = obj{"reason": "max_output_tokens"}
		}
	}
	return o
}

// finish ends the answer with the whole turn r.
func (e *encoder) finish(r provider.Response) {
	if e.gem != nil {
		e.began = true
		e.gem.Finish(r)
		return
	}
	e.header()
	if !e.stream {
		var body obj
		switch e.api {
		case APIChat:
			msg := obj{"role": "assistant", "content": nil, "refusal": nil}
			if r.Text != "" || len(r.ToolCalls) == 0 {
				msg["content"] = r.Text
			}
			if r.Refusal != "" {
				msg["refusal"] = r.Refusal
			}
			if len(r.ToolCalls) > 0 {
				var tcs []any
				for _, tc := range r.ToolCalls {
					tcs = append(tcs, obj{"id": tc.ID, "type": "function", "function": obj{"name": tc.Name, "arguments": string(tc.Args)}})
				}
				msg["tool_calls"] = tcs
			}
			body = obj{"id": e.id, "object": "chat.completion", "created": 0, "model": e.model,
				"choices": []any{obj{"index": 0, "message": msg, "finish_reason": r.FinishReason, "logprobs": nil}}, "usage": e.chatUsage(r)}
		case APIResponses:
			body = e.responseObject(&r, "completed")
		case APIMessages:
			content := []any{}
			if r.Text != "" || r.Refusal != "" {
				content = append(content, obj{"type": "text", "text": r.Text + r.Refusal})
			}
			for _, tc := range r.ToolCalls {
				content = append(content, obj{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": tc.Args})
			}
			body = obj{"id": e.id, "type": "message", "role": "assistant", "model": e.model, "content": content,
				"stop_reason": anthropicStop(r.FinishReason), "stop_sequence": nil, "usage": e.anthropicUsage(r)}
		}
		e.w.Header().Set("Content-Type", "application/json")
		e.w.WriteHeader(http.StatusOK)
		e.w.Write(marshal(body))
		return
	}
	switch e.api {
	case APIChat:
		if r.Refusal != "" {
			e.event("", e.chatChunk(obj{"refusal": r.Refusal}, nil))
		}
		for i, tc := range r.ToolCalls {
			e.event("", e.chatChunk(obj{"tool_calls": []any{obj{"index": i, "id": tc.ID, "type": "function", "function": obj{"name": tc.Name, "arguments": ""}}}}, nil))
			e.event("", e.chatChunk(obj{"tool_calls": []any{obj{"index": i, "function": obj{"arguments": string(tc.Args)}}}}, nil))
		}
		e.event("", e.chatChunk(obj{}, r.FinishReason))
		e.event("", obj{"id": e.id, "object": "chat.completion.chunk", "created": 0, "model": e.model, "choices": []any{}, "usage": e.chatUsage(r)})
		e.w.Write([]byte("data: [DONE]\n\n"))
		flush(e.w)
	case APIResponses:
		if e.inText {
			e.resEvent("response.output_text.done", obj{"item_id": e.id + "_msg", "output_index": 0, "content_index": 0, "text": r.Text, "logprobs": []any{}})
			e.resEvent("response.content_part.done", obj{"item_id": e.id + "_msg", "output_index": 0, "content_index": 0, "part": obj{"type": "output_text", "text": r.Text, "annotations": []any{}}})
		}
		out := e.responseOutput(r)
		for i, it := range out {
			item := it.(obj)
			if item["type"] == "function_call" {
				added := obj{}
				for k, v := range item {
					added[k] = v
				}
				added["arguments"], added["status"] = "", "in_progress"
				e.resEvent("response.output_item.added", obj{"output_index": i, "item": added})
				e.resEvent("response.function_call_arguments.delta", obj{"item_id": item["id"], "output_index": i, "delta": item["arguments"]})
				e.resEvent("response.function_call_arguments.done", obj{"item_id": item["id"], "output_index": i, "arguments": item["arguments"]})
			} else if !e.inText {
				e.resEvent("response.output_item.added", obj{"output_index": i, "item": obj{"id": item["id"], "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
			}
			e.resEvent("response.output_item.done", obj{"output_index": i, "item": item})
		}
		final := e.responseObject(&r, "completed")
		typ := "response.completed"
		if final["status"] == "incomplete" {
			typ = "response.incomplete"
		}
		e.resEvent(typ, obj{"response": final})
	case APIMessages:
		idx := 0
		if r.Refusal != "" {
			if !e.inText {
				e.inText = true
				e.event("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}})
			}
			e.event("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": r.Refusal}})
		}
		if e.inText {
			e.event("content_block_stop", obj{"type": "content_block_stop", "index": 0})
			idx = 1
		}
		for i, tc := range r.ToolCalls {
			n := idx + i
			e.event("content_block_start", obj{"type": "content_block_start", "index": n, "content_block": obj{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": obj{}}})
			e.event("content_block_delta", obj{"type": "content_block_delta", "index": n, "delta": obj{"type": "input_json_delta", "partial_json": string(tc.Args)}})
			e.event("content_block_stop", obj{"type": "content_block_stop", "index": n})
		}
		e.event("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": anthropicStop(r.FinishReason), "stop_sequence": nil}, "usage": e.anthropicUsage(r)})
		e.event("message_stop", obj{"type": "message_stop"})
	}
}

// errorBody is a provider-shaped error: what the client's SDK turns into
// its own error type, so the agent shows the message.
func errorBody(api API, status int, typ, msg string) []byte {
	if api.Provider() == gemini.Name {
		return gemini.ErrorBody(status, typ, msg)
	}
	if api.Provider() == "anthropic" {
		return marshal(obj{"type": "error", "error": obj{"type": typ, "message": msg}})
	}
	return marshal(obj{"error": obj{"message": msg, "type": typ, "param": nil, "code": typ}})
}

// writeError answers with a provider-shaped error.
func writeError(w http.ResponseWriter, api API, status int, typ, msg string) []byte {
	body := errorBody(api, status, typ, msg)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Should-Retry", "false")
	w.WriteHeader(status)
	w.Write(body)
	return body
}
