package modelapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// The helpers below are shared by the registered wires: a content value's
// text, a tool call's arguments, and the writing of an answer. They are
// here, not in each wire, so that every wire reads and writes them the
// same way.

// Obj is a JSON object as a wire renders it.
type Obj = map[string]any

// Marshal is JSON without HTML escaping and without the trailing newline:
// the bytes of an answer agentctl renders, the same on every run.
func Marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Text reads a content value that is a string, or an array of parts whose
// text fields (text, input_text, output_text, refusal) are joined.
func Text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteString(p.Refusal)
	}
	return b.String()
}

// Content is a message content value decoded in the one pass of a
// request's Unmarshal, as Text reads it.
type Content string

// UnmarshalJSON reads the content as Text does; it never fails.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content(Text(b))
	return nil
}

// Args is a tool call's arguments as the session keeps them: compact
// JSON, `{}` when empty or broken.
func Args(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	var b bytes.Buffer
	if s == "" || json.Compact(&b, []byte(s)) != nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(b.Bytes())
}

// Writer writes one answer: SSE events, flushed one by one, when Stream is
// set, else one JSON object. The wires' Encoders are built on it.
type Writer struct {
	W      http.ResponseWriter
	Stream bool
	began  bool
}

// Begin marks the answer begun; it reports true the first time only, when
// (streaming) it has written the SSE headers and status 200 and the
// caller writes the stream's opening event.
func (w *Writer) Begin() bool {
	if w.began {
		return false
	}
	w.began = true
	if !w.Stream {
		return true
	}
	h := w.W.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.W.WriteHeader(http.StatusOK)
	return true
}

// Began reports whether Begin was called.
func (w *Writer) Began() bool { return w.began }

// Event writes one SSE event (no event: line when name is "") and
// flushes it.
func (w *Writer) Event(name string, v any) {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(Marshal(v))
	b.WriteString("\n\n")
	w.Raw(b.Bytes())
}

// Raw writes b as it is and flushes it.
func (w *Writer) Raw(b []byte) {
	w.W.Write(b)
	if f, ok := w.W.(http.Flusher); ok {
		f.Flush()
	}
}

// JSON writes a plain answer: status 200 and v.
func (w *Writer) JSON(v any) {
	w.W.Header().Set("Content-Type", "application/json")
	w.W.WriteHeader(http.StatusOK)
	w.W.Write(Marshal(v))
}
