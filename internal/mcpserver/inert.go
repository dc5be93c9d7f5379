package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/termsafe"
)

// inertJSON re-encodes the JSON b with every string made inert and
// clipped to maxString bytes: control characters and terminal escapes
// become visible escapes (termsafe.String), and a longer string keeps its
// head and a note of how much was cut. Numbers are kept as written.
func inertJSON(b []byte, maxString int) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v = inertValue(v, maxString)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// inertValue walks a decoded JSON value (UseNumber) making strings inert.
func inertValue(v any, maxString int) any {
	switch x := v.(type) {
	case string:
		return inertString(x, maxString)
	case []any:
		for i := range x {
			x[i] = inertValue(x[i], maxString)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[inertString(k, maxString)] = inertValue(val, maxString)
		}
		return out
	}
	return v
}

// inertString is s clipped to max bytes (at a rune boundary, with a note
// saying how many were cut) and escaped for a terminal or a model reading
// it as text.
func inertString(s string, max int) string {
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = fmt.Sprintf("%s…[clipped by agentctl mcp: %d of %d bytes shown]", s[:cut], cut, len(s))
	}
	return termsafe.String(s)
}
