package gemini

import (
	"net/http"
	"strings"

	"github.com/agentctl/agentctl/internal/provider"
)

// Encoder writes one answer in the API's shape as it is produced (a
// scripted model's, or one replay renders from a session's events): Text
// for each delta, Finish with the whole turn. Streamed, each delta is a
// chunk of its own, SSE (alt=sse) or an element of the JSON array
// streamGenerateContent sends without it; otherwise one
// GenerateContentResponse is written at Finish. The same turn always
// gives the same bytes.
type Encoder struct {
	w         http.ResponseWriter
	stream    bool
	sse       bool
	id, model string
	began     bool
	chunks    int
}

// NewEncoder returns the encoder of an answer to a request of method
// with query rawQuery (alt=sse picks SSE).
func NewEncoder(w http.ResponseWriter, method, rawQuery, id, model string) *Encoder {
	return &Encoder{w: w, stream: method == MethodStream, sse: strings.Contains("&"+rawQuery+"&", "&alt=sse&"), id: id, model: model}
}

func (e *Encoder) start() {
	if e.began {
		return
	}
	e.began = true
	if !e.stream {
		return
	}
	h := e.w.Header()
	if e.sse {
		h.Set("Content-Type", "text/event-stream")
	} else {
		h.Set("Content-Type", "application/json")
	}
	e.w.WriteHeader(http.StatusOK)
	if !e.sse {
		e.w.Write([]byte("["))
	}
}

func (e *Encoder) chunk(v map[string]any) {
	b := marshal(v)
	if e.sse {
		e.w.Write(append(append([]byte("data: "), b...), "\r\n\r\n"...))
	} else {
		if e.chunks > 0 {
			e.w.Write([]byte(",\r\n"))
		}
		e.w.Write(b)
	}
	e.chunks++
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (e *Encoder) response(parts []any, finish string, r *provider.Response) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": e.model, "responseId": e.id}
	if r != nil {
		u := map[string]any{"promptTokenCount": r.InputTokens, "candidatesTokenCount": r.OutputTokens,
			"totalTokenCount": r.InputTokens + r.OutputTokens}
		if r.CacheReadTokens > 0 {
			u["cachedContentTokenCount"] = r.CacheReadTokens
		}
		out["usageMetadata"] = u
	}
	return out
}

// Began reports whether anything was written (for a stream, the status
// line).
func (e *Encoder) Began() bool { return e.began }

// Text writes one delta of answer text.
func (e *Encoder) Text(delta string) {
	e.start()
	if !e.stream || delta == "" {
		return
	}
	e.chunk(e.response([]any{map[string]any{"text": delta}}, "", nil))
}

// finishReason is the API's finishReason of a normalised one.
func finishReason(f string) string {
	switch f {
	case provider.FinishStop, provider.FinishToolCalls, "":
		return "STOP"
	case provider.FinishLength:
		return "MAX_TOKENS"
	case provider.FinishContentFilter:
		return "SAFETY"
	}
	return strings.ToUpper(f)
}

// Finish ends the answer with the whole turn r: its function calls (an
// id CallID made is not sent: the API never gives one), the refusal's
// text, the finishReason and the usage.
func (e *Encoder) Finish(r provider.Response) {
	e.start()
	parts := []any{}
	if !e.stream && r.Text != "" {
		parts = append(parts, map[string]any{"text": r.Text})
	}
	if r.Refusal != "" && !strings.HasPrefix(r.Refusal, BlockedWithoutText) {
		parts = append(parts, map[string]any{"text": r.Refusal})
	}
	for _, tc := range r.ToolCalls {
		fc := map[string]any{"name": tc.Name, "args": provider.NormaliseArgs(string(tc.Args))}
		if !synthesized(tc.ID) {
			fc["id"] = tc.ID
		}
		parts = append(parts, map[string]any{"functionCall": fc})
	}
	finish := finishReason(r.FinishReason)
	kind, reason, isBlock := blockOf(r.Refusal)
	if isBlock && kind == blockFinish {
		finish = reason // the filter that ended the answer, as recorded
	}
	body := e.response(parts, finish, &r)
	if isBlock && kind == blockPrompt {
		// A blocked prompt has no candidate: Gemini answers its
		// promptFeedback alone.
		delete(body, "candidates")
		body["promptFeedback"] = map[string]any{"blockReason": reason}
	}
	if !e.stream {
		e.w.Header().Set("Content-Type", "application/json")
		e.w.WriteHeader(http.StatusOK)
		e.w.Write(marshal(body))
		return
	}
	e.chunk(body)
	if !e.sse {
		e.w.Write([]byte("]"))
	}
}
