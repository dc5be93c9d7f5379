package session

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestAppendMessageMatchesEncoder: the digester's hand-written encoding is
// byte for byte what json.Encoder writes, for strings full of what JSON
// escapes and for args valid, spaced, HTML-laden or broken.
func TestAppendMessageMatchesEncoder(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	alphabet := []string{"a", "Z", " ", "\n", "\t", "\r", "\b", "\f", "\"", "\\", "/", "<", ">", "&", "é", "€", "😀",
		"\u2028", "\u2029", "\x00", "\x1f", "\x7f", "\xff", "\xe2\x80", "{", "}"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	argsList := []string{"", `{"path":"a.go"}`, `{ "path" : "a<b>&c" , "n": [1, 2] }`, "{\"s\":\"\u2028\"}", `[1,`, `null`, `"x"`, ` {"a":1} `}
	d := NewDigester()
	for i := range 5000 {
		m := Message{Role: str(), Content: str(), ToolCallID: str(), Name: str(), Seq: int64(i)}
		if r.IntN(4) == 0 {
			m.ToolCallID, m.Name = "", ""
		}
		for range r.IntN(3) {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: str(), Name: str(), Args: json.RawMessage(argsList[r.IntN(len(argsList))])})
		}
		if r.IntN(5) == 0 {
			m.ToolCalls = []ToolCall{}
		}
		var want bytes.Buffer
		encodeMessage(json.NewEncoder(&want), m)
		got, ok := d.appendMessage(nil, m)
		if !ok {
			if want.Len() != 0 {
				t.Fatalf("appendMessage(%+v) gave up; json.Encoder wrote %q", m, want.Bytes())
			}
			continue
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendMessage(%+v) =\n%q\njson.Encoder wrote\n%q", m, got, want.Bytes())
		}
	}
	for _, tools := range [][]string{nil, {}, {"a"}, {str(), str()}} {
		var want bytes.Buffer
		_ = json.NewEncoder(&want).Encode(tools)
		if got := appendTools(nil, tools); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendTools(%q) = %q, want %q", tools, got, want.Bytes())
		}
	}
}
