package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"unicode/utf8"
)

// WireMessage is the record Digest hashes for each message of a request:
// the request digest's one definition. Seq is left out: it is bookkeeping,
// not payload.
type WireMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// Wire returns m as Digest hashes it.
func Wire(m Message) WireMessage {
	return WireMessage{m.Role, m.Content, m.ToolCalls, m.ToolCallID, m.Name}
}

// Digest is the stable fingerprint of a request payload recorded in
// model_call events, so replay can tell whether today's code would have
// sent the same messages: SHA-256 over what json.Encoder writes for each
// message's WireMessage, then for the tool names.
func Digest(messages []Message, tools []string) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, m := range messages {
		_ = enc.Encode(Wire(m))
	}
	_ = enc.Encode(tools)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Digester computes Digest for a sequence of payloads that grow by
// appending, as the projection does between compactions: the messages
// already hashed are not encoded again, so verifying a session costs time
// linear in its events, not in the sum of its payload sizes.
//
// The running hash covers a stable prefix of the payload. The synthetic
// cancellations that close pending calls at the end of a payload are not
// part of it (the next event may answer those calls), and a payload whose
// prefix no longer matches what was hashed (after a compaction) starts
// over. Not safe for concurrent use.
type Digester struct {
	h    hash.Hash
	n    int          // messages in the running hash
	last Message      // payload[n-1] when it was hashed
	line []byte       // scratch for one encoded message
	args bytes.Buffer // scratch for compacting tool call args
}

// NewDigester returns a Digester with nothing hashed yet.
func NewDigester() *Digester {
	d := &Digester{}
	d.reset()
	return d
}

func (d *Digester) reset() {
	d.h = sha256.New()
	d.n = 0
	d.last = Message{}
}

// sameMessage is a cheap identity check of a message hashed earlier: the
// projection appends messages and never edits them, so seq, role and sizes
// are enough to notice a payload that was rebuilt (a compaction).
func sameMessage(a, b Message) bool {
	return a.Seq == b.Seq && a.Role == b.Role && len(a.Content) == len(b.Content) &&
		a.ToolCallID == b.ToolCallID && a.Name == b.Name && len(a.ToolCalls) == len(b.ToolCalls)
}

// Digest returns Digest(msgs, tools), hashing only the messages appended
// since the previous call.
func (d *Digester) Digest(msgs []Message, tools []string) string {
	if d.n > len(msgs) || (d.n > 0 && !sameMessage(msgs[d.n-1], d.last)) {
		d.reset()
	}
	end := len(msgs)
	for end > d.n && msgs[end-1].Seq == 0 && msgs[end-1].Role == RoleTool {
		end--
	}
	for i := d.n; i < end; i++ {
		d.write(d.h, msgs[i])
	}
	if end > d.n {
		d.n, d.last = end, msgs[end-1]
	}
	c, err := d.h.(hash.Cloner).Clone()
	if err != nil { // never for crypto/sha256; fall back to the batch form
		return Digest(msgs, tools)
	}
	for _, m := range msgs[end:] {
		d.write(c, m)
	}
	d.line = appendTools(d.line[:0], tools)
	c.Write(d.line)
	var sum [sha256.Size]byte
	return "sha256:" + hex.EncodeToString(c.Sum(sum[:0]))
}

// write hashes m as json.Encoder would write it.
func (d *Digester) write(h hash.Hash, m Message) {
	line, ok := d.appendMessage(d.line[:0], m)
	if !ok {
		encodeMessage(json.NewEncoder(h), m)
		return
	}
	d.line = line
	h.Write(line)
}

func encodeMessage(enc *json.Encoder, m Message) {
	_ = enc.Encode(Wire(m))
}

// appendMessage appends the line json.Encoder.Encode writes for m's
// wireMessage, without reflection. It reports false when a tool call's
// args are not valid JSON: the encoder fails then and writes nothing, and
// the caller leaves the case to it.
func (d *Digester) appendMessage(dst []byte, m Message) ([]byte, bool) {
	dst = append(dst, `{"role":`...)
	dst = appendString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = appendString(dst, m.Content)
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i, c := range m.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = appendString(dst, c.ID)
			dst = append(dst, `,"name":`...)
			dst = appendString(dst, c.Name)
			if len(c.Args) > 0 {
				dst = append(dst, `,"args":`...)
				// json.RawMessage is written compacted, <, > and & escaped.
				d.args.Reset()
				if json.Compact(&d.args, c.Args) != nil {
					return dst, false
				}
				var esc bytes.Buffer
				if bytes.ContainsAny(d.args.Bytes(), "<>&\u2028\u2029") {
					json.HTMLEscape(&esc, d.args.Bytes())
					dst = append(dst, esc.Bytes()...)
				} else {
					dst = append(dst, d.args.Bytes()...)
				}
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = appendString(dst, m.ToolCallID)
	}
	if m.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, m.Name)
	}
	return append(dst, '}', '\n'), true
}

// appendTools appends the line json.Encoder.Encode writes for tools.
func appendTools(dst []byte, tools []string) []byte {
	if tools == nil {
		return append(dst, "null\n"...)
	}
	dst = append(dst, '[')
	for i, t := range tools {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, t)
	}
	return append(dst, ']', '\n')
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json does with HTML escaping
// on (json.Encoder's default): <, > and & as \u003c..., control bytes
// escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
