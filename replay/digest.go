package replay

import (
	"encoding/json"
	"hash"

	"crypto/sha256"
	"encoding/hex"

	"github.com/agentctl/agentctl/session"
)

// wireMessage is the per-message record session.Digest hashes. It must stay
// field for field the same as the type inside session.Digest; the test
// TestIncrementalDigestMatches checks the two agree on every fixture.
type wireMessage struct {
	Role       string             `json:"role"`
	Content    string             `json:"content"`
	ToolCalls  []session.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string             `json:"tool_call_id,omitempty"`
	Name       string             `json:"name,omitempty"`
}

// digester computes session.Digest for a sequence of payloads that grow by
// appending, as the projection does between compactions: the messages
// already hashed are not encoded again, so verifying a session costs time
// linear in its events, not in the sum of its payload sizes.
//
// The running hash covers a stable prefix of the payload. The synthetic
// cancellations that close pending calls at the end of a payload are not
// part of it (the next event may answer those calls), and a payload whose
// prefix no longer matches what was hashed (after a compaction) starts
// over. Not safe for concurrent use.
type digester struct {
	h    hash.Hash
	enc  *json.Encoder
	n    int             // messages in the running hash
	last session.Message // payload[n-1] when it was hashed
}

func newDigester() *digester {
	d := &digester{}
	d.reset()
	return d
}

func (d *digester) reset() {
	d.h = sha256.New()
	d.enc = json.NewEncoder(d.h)
	d.n = 0
	d.last = session.Message{}
}

// sameMessage is a cheap identity check of a message hashed earlier: the
// projection appends messages and never edits them, so seq, role and sizes
// are enough to notice a payload that was rebuilt (a compaction).
func sameMessage(a, b session.Message) bool {
	return a.Seq == b.Seq && a.Role == b.Role && len(a.Content) == len(b.Content) &&
		a.ToolCallID == b.ToolCallID && a.Name == b.Name && len(a.ToolCalls) == len(b.ToolCalls)
}

// digest returns session.Digest(msgs, tools).
func (d *digester) digest(msgs []session.Message, tools []string) string {
	if d.n > len(msgs) || (d.n > 0 && !sameMessage(msgs[d.n-1], d.last)) {
		d.reset()
	}
	end := len(msgs)
	for end > d.n && msgs[end-1].Seq == 0 && msgs[end-1].Role == session.RoleTool {
		end--
	}
	for i := d.n; i < end; i++ {
		encodeMessage(d.enc, msgs[i])
	}
	if end > d.n {
		d.n, d.last = end, msgs[end-1]
	}
	c, err := d.h.(hash.Cloner).Clone()
	if err != nil { // never for crypto/sha256; fall back to the batch form
		return session.Digest(msgs, tools)
	}
	enc := json.NewEncoder(c)
	for _, m := range msgs[end:] {
		encodeMessage(enc, m)
	}
	_ = enc.Encode(tools)
	return "sha256:" + hex.EncodeToString(c.Sum(nil))
}

func encodeMessage(enc *json.Encoder, m session.Message) {
	_ = enc.Encode(wireMessage{m.Role, m.Content, m.ToolCalls, m.ToolCallID, m.Name})
}
