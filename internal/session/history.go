package session

import (
	"bytes"
	"encoding/json"
)

// The history-prefix rule: which requests continue which conversation.
// The proxy groups the requests of an agent it does not drive by it, and
// internal/otelsession groups traces by it (an app that makes each model
// call its own trace), so both agree on what "the same conversation" is.

// SameMessage compares what the agent controls in a message: role, text,
// tool calls and the call a result answers. A tool call with an id is the
// same call when id and name match: clients send the arguments back
// normalised (Claude Code adds the defaults of its tools' schemas, such as
// Edit's "replace_all": false), which is no change of history. Calls
// without ids are compared by their args as JSON values too.
func SameMessage(a, b Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := a.ToolCalls[i], b.ToolCalls[i]
		if x.ID != y.ID || x.Name != y.Name || (x.ID == "" && !SameJSON(x.Args, y.Args)) {
			return false
		}
	}
	return true
}

// SameJSON reports whether a and b are the same JSON value (equal bytes,
// or equal once both are decoded and encoded again: key order and spacing
// do not count).
func SameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, err1 := json.Marshal(x)
	yb, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && bytes.Equal(xb, yb)
}

// Extends reports whether msgs begins with every message of history
// (SameMessage): a request that extends a conversation's last request and
// answer continues that conversation.
func Extends(history, msgs []Message) bool {
	if len(history) > len(msgs) {
		return false
	}
	for i := range history {
		if !SameMessage(history[i], msgs[i]) {
			return false
		}
	}
	return true
}
