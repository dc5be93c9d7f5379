package session

import (
	"bytes"
	"encoding/json"
	"strings"
)

// MapStrings replaces every string e holds by f of it: each string field
// but Kind (the record's type, not content), the strings inside its JSON
// fields (Spec, Args, Attrs, each tool call's ID, Name and Args; object
// keys as well as values), and the strings of Raw for a kind this version
// does not know. It is how the recorder redacts an event before it is
// written: one place that names every field, so that none is forgotten
// (TestMapStringsCoversEveryField fails when a field is added to Event
// and not here). f must accept any string and is called for empty ones
// only through JSON. A JSON field keeps its bytes when f changes none of
// its strings.
func (e *Event) MapStrings(f func(string) string) {
	str := func(p *string) {
		if *p != "" {
			*p = f(*p)
		}
	}
	for _, p := range []*string{
		&e.SessionID, &e.Name, &e.Provider, &e.Model, &e.System, &e.SpecPath, &e.SpecHash,
		&e.AgentctlVersion, &e.HarnessCommit, &e.Workspace, &e.ParentSessionID,
		&e.Text, &e.RequestDigest, &e.FinishReason,
		&e.CallID, &e.Tool, &e.IdempotencyKey, &e.Output, &e.Artifact, &e.Scope,
		&e.Summary, &e.Status, &e.Outcome, &e.Reason, &e.Evidence, &e.Error,
		&e.ChildSessionID, &e.Refusal, &e.ResponseID, &e.ErrorType,
		&e.GitSHA,
	} {
		str(p)
	}
	e.Spec = MapJSONStrings(e.Spec, f)
	e.Args = MapJSONStrings(e.Args, f)
	e.Attrs = MapJSONStrings(e.Attrs, f)
	e.Raw = MapJSONStrings(e.Raw, f)
	if len(e.ToolCalls) > 0 {
		calls := make([]ToolCall, len(e.ToolCalls)) // the caller's slice may be shared
		for i, c := range e.ToolCalls {
			str(&c.ID)
			str(&c.Name)
			c.Args = MapJSONStrings(c.Args, f)
			calls[i] = c
		}
		e.ToolCalls = calls
	}
}

// MapJSONStrings returns the JSON text raw with f applied to each string
// in it (object keys included), and raw itself when f changes none. A
// string that f changes is written back escaped as Encode writes it (no
// HTML escapes); everything else keeps its bytes. raw that is not JSON
// (an unterminated string) is returned with f applied to it whole, as
// text, so that nothing passes unmapped.
func MapJSONStrings(raw json.RawMessage, f func(string) string) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var out []byte // nil until a string changes
	done := 0      // raw[:done] is in out
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		start := i
		escaped := false
		for i++; i < len(raw) && raw[i] != '"'; i++ {
			if raw[i] == '\\' {
				escaped = true
				i++
			}
		}
		if i >= len(raw) {
			return json.RawMessage(f(string(raw)))
		}
		lit := raw[start : i+1]
		var s string
		if !escaped {
			s = string(lit[1 : len(lit)-1])
		} else if json.Unmarshal(lit, &s) != nil {
			return json.RawMessage(f(string(raw)))
		}
		t := f(s)
		if t == s {
			continue
		}
		out = append(out, raw[done:start]...)
		out = appendJSONString(out, t)
		done = i + 1
	}
	if out == nil {
		return raw
	}
	return append(out, raw[done:]...)
}

func appendJSONString(b []byte, s string) []byte {
	var w bytes.Buffer
	enc := json.NewEncoder(&w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, strings.TrimSuffix(w.String(), "\n")...)
}
