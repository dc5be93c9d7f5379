package session

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Decoder decodes events like Decode, several times faster: a hand-written
// parser reads the records the log holds (the fields of Event, in any
// order, with JSON escapes) without reflection. Any record it does not
// fully understand (an unknown or case-folded key, a duplicate key, null, a
// number in an unexpected form, a surrogate escape, invalid UTF-8, a syntax
// error) is handed to Decode, so the result is always exactly Decode's.
//
// With Shared set, the strings of the events share memory with the record
// passed to Decode: the caller must never modify it afterwards (the
// recorder reads a whole log into one buffer it never writes again). The
// json.RawMessage fields are copies in any case, so that a caller editing
// one cannot change a string.
//
// A Decoder is not safe for concurrent use; its zero value copies.
type Decoder struct {
	// Shared lets strings alias the record bytes; see above.
	Shared bool

	strs []byte // unescaped strings: never handed out as []byte
	raws []byte // RawMessage values: each capped so appends copy
	key  uint64 // fields seen in the current record
}

// Arena chunks start at minChunk and double up to maxChunk, so a short
// log does not pay for clearing a large one. A chunk is never grown in
// place: what was handed out keeps pointing at the old one.
const (
	minChunk = 1 << 10
	maxChunk = 64 << 10
)

// chunk returns a fresh arena chunk with room for n bytes, after old.
func chunk(old []byte, n int) []byte {
	return make([]byte, 0, max(n, min(maxChunk, 2*cap(old)), minChunk))
}

// Decode parses one JSON-encoded event; see Decoder.
func (d *Decoder) Decode(b []byte) (Event, error) {
	if e, ok := d.fast(b); ok {
		return e, nil
	}
	return Decode(b)
}

// The fields of Event, one bit each, to catch a key given twice.
const (
	fSeq = iota
	fTS
	fKind
	fSessionID
	fName
	fProvider
	fModel
	fSystem
	fSpec
	fSpecPath
	fSpecHash
	fAgentctlVersion
	fHarnessCommit
	fWorkspace
	fParentSessionID
	fForkedFrom
	fParentSeq
	fText
	fToolCalls
	fRequestDigest
	fLatencyMS
	fInputTokens
	fOutputTokens
	fCostUSD
	fFinishReason
	fCallID
	fTool
	fArgs
	fIdempotencyKey
	fOutput
	fArtifact
	fScope
	fThrough
	fSummary
	fSourceSeqs
	fStatus
	fOutcome
	fReason
	fEvidence
	fError
	fChildSessionID
	fAttrs
	fRefusal
	fCacheReadInputTokens
	fCacheCreationInputTokens
	fMaxTokens
	fResponseID
	fErrorType
	fAttempt
	fGitSHA
)

// parser walks one record. Every method returns false on anything the fast
// path does not handle, and the caller falls back to encoding/json.
type parser struct {
	d *Decoder
	b []byte
	i int
}

func (d *Decoder) fast(b []byte) (Event, bool) {
	var e Event
	p := parser{d: d, b: b}
	d.key = 0
	p.ws()
	if !p.eat('{') {
		return Event{}, false
	}
	p.ws()
	if p.eat('}') {
		return Event{}, false // no kind: Decode says so
	}
	for {
		p.ws()
		k, ok := p.key()
		if !ok {
			return Event{}, false
		}
		p.ws()
		if !p.eat(':') {
			return Event{}, false
		}
		p.ws()
		if !p.field(&e, k) {
			return Event{}, false
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if !p.eat('}') {
			return Event{}, false
		}
		break
	}
	p.ws()
	if p.i != len(b) || e.Kind == "" {
		return Event{}, false
	}
	if !e.Kind.Known() {
		e.Raw = append(json.RawMessage(nil), b...)
	}
	return e, true
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// key reads an object key without escapes and returns its bytes.
func (p *parser) key() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// seen marks field f and reports whether it was already set.
func (p *parser) seen(f uint) bool {
	bit := uint64(1) << f
	if p.d.key&bit != 0 {
		return true
	}
	p.d.key |= bit
	return false
}

func (p *parser) field(e *Event, k []byte) bool {
	var f uint
	var s *string
	var n *int64
	var raw *json.RawMessage
	switch string(k) {
	case "seq":
		f, n = fSeq, &e.Seq
	case "ts":
		if p.seen(fTS) {
			return false
		}
		return p.time(&e.TS)
	case "kind":
		if p.seen(fKind) {
			return false
		}
		v, ok := p.str()
		e.Kind = Kind(v)
		return ok
	case "session_id":
		f, s = fSessionID, &e.SessionID
	case "name":
		f, s = fName, &e.Name
	case "provider":
		f, s = fProvider, &e.Provider
	case "model":
		f, s = fModel, &e.Model
	case "system":
		f, s = fSystem, &e.System
	case "spec":
		f, raw = fSpec, &e.Spec
	case "spec_path":
		f, s = fSpecPath, &e.SpecPath
	case "spec_hash":
		f, s = fSpecHash, &e.SpecHash
	case "agentctl_version":
		f, s = fAgentctlVersion, &e.AgentctlVersion
	case "harness_commit":
		f, s = fHarnessCommit, &e.HarnessCommit
	case "workspace":
		f, s = fWorkspace, &e.Workspace
	case "parent_session_id":
		f, s = fParentSessionID, &e.ParentSessionID
	case "forked_from":
		f, n = fForkedFrom, &e.ForkedFrom
	case "parent_seq":
		f, n = fParentSeq, &e.ParentSeq
	case "text":
		f, s = fText, &e.Text
	case "tool_calls":
		if p.seen(fToolCalls) {
			return false
		}
		return p.toolCalls(&e.ToolCalls)
	case "request_digest":
		f, s = fRequestDigest, &e.RequestDigest
	case "latency_ms":
		f, n = fLatencyMS, &e.LatencyMS
	case "input_tokens":
		f, n = fInputTokens, &e.InputTokens
	case "output_tokens":
		f, n = fOutputTokens, &e.OutputTokens
	case "cost_usd":
		if p.seen(fCostUSD) {
			return false
		}
		return p.float(&e.CostUSD)
	case "finish_reason":
		f, s = fFinishReason, &e.FinishReason
	case "call_id":
		f, s = fCallID, &e.CallID
	case "tool":
		f, s = fTool, &e.Tool
	case "args":
		f, raw = fArgs, &e.Args
	case "idempotency_key":
		f, s = fIdempotencyKey, &e.IdempotencyKey
	case "output":
		f, s = fOutput, &e.Output
	case "artifact":
		f, s = fArtifact, &e.Artifact
	case "scope":
		f, s = fScope, &e.Scope
	case "through":
		f, n = fThrough, &e.Through
	case "summary":
		f, s = fSummary, &e.Summary
	case "source_seqs":
		if p.seen(fSourceSeqs) {
			return false
		}
		return p.ints(&e.SourceSeqs)
	case "status":
		f, s = fStatus, &e.Status
	case "outcome":
		f, s = fOutcome, &e.Outcome
	case "reason":
		f, s = fReason, &e.Reason
	case "evidence":
		f, s = fEvidence, &e.Evidence
	case "error":
		f, s = fError, &e.Error
	case "child_session_id":
		f, s = fChildSessionID, &e.ChildSessionID
	case "attrs":
		f, raw = fAttrs, &e.Attrs
	case "refusal":
		f, s = fRefusal, &e.Refusal
	case "cache_read_input_tokens":
		f, n = fCacheReadInputTokens, &e.CacheReadInputTokens
	case "cache_creation_input_tokens":
		f, n = fCacheCreationInputTokens, &e.CacheCreationInputTokens
	case "max_tokens":
		f, n = fMaxTokens, &e.MaxTokens
	case "response_id":
		f, s = fResponseID, &e.ResponseID
	case "error_type":
		f, s = fErrorType, &e.ErrorType
	case "attempt":
		f, n = fAttempt, &e.Attempt
	case "git_sha":
		f, s = fGitSHA, &e.GitSHA
	default:
		// Unknown keys, and keys encoding/json would match ignoring case.
		return false
	}
	if p.seen(f) {
		return false
	}
	var ok bool
	switch {
	case s != nil:
		*s, ok = p.str()
	case n != nil:
		*n, ok = p.int()
	default:
		*raw, ok = p.raw()
	}
	return ok
}

// str reads a JSON string. Without escapes it is the record's bytes
// (shared or copied); with escapes it is unescaped into the arena.
func (p *parser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	esc, high := false, false
	for p.i < len(p.b) {
		c := p.b[p.i]
		if plain[c] {
			p.i++
			continue
		}
		switch {
		case c == '"':
			span := p.b[start:p.i]
			p.i++
			if high && !utf8.Valid(span) {
				return "", false // encoding/json replaces bad bytes with U+FFFD
			}
			if esc {
				return p.unescape(span)
			}
			return p.d.share(span), true
		case c == '\\':
			esc = true
			p.i += 2
			continue
		case c < 0x20:
			return "", false
		case c >= 0x80:
			high = true
		}
		p.i++
	}
	return "", false
}

// plain marks the bytes a string may hold that need no second look.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (d *Decoder) share(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if d.Shared {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// alloc returns n bytes of a string arena chunk, to be filled once.
func (d *Decoder) alloc(n int) []byte {
	if cap(d.strs)-len(d.strs) < n {
		d.strs = chunk(d.strs, n)
	}
	d.strs = d.strs[:len(d.strs)+n]
	return d.strs[len(d.strs)-n:]
}

// unescape decodes the body of a string holding backslash escapes. The
// result is never longer than the input.
func (p *parser) unescape(s []byte) (string, bool) {
	var out []byte
	if p.d.Shared {
		out = p.d.alloc(len(s))[:0]
	} else {
		out = make([]byte, 0, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(s) {
			return "", false
		}
		switch s[i] {
		case '"', '\\', '/':
			out = append(out, s[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+4 >= len(s) {
				return "", false
			}
			r, ok := hex4(s[i+1 : i+5])
			if !ok || utf8.RuneLen(r) < 0 { // surrogates: leave them to encoding/json
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default:
			return "", false
		}
	}
	if len(out) == 0 {
		return "", true
	}
	if p.d.Shared {
		// out lies in the arena and is never written again.
		p.d.strs = p.d.strs[:len(p.d.strs)-len(s)+len(out)]
		return unsafe.String(&out[0], len(out)), true
	}
	return string(out), true
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number returns the literal of a JSON number, checked against the
// grammar, and whether it is an integer (no fraction or exponent).
func (p *parser) number() (lit []byte, integer, ok bool) {
	start := p.i
	b := p.b
	i := p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, false
		}
	}
	p.i = i
	return b[start:i], integer, true
}

func (p *parser) int() (int64, bool) {
	lit, integer, ok := p.number()
	if !ok || !integer {
		return 0, false
	}
	if len(lit) <= 18 { // cannot overflow
		var n int64
		neg := lit[0] == '-'
		if neg {
			lit = lit[1:]
		}
		for _, c := range lit {
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, true
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	return n, err == nil
}

func (p *parser) float(v *float64) bool {
	lit, _, ok := p.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	*v = f
	return err == nil
}

func (p *parser) ints(v *[]int64) bool {
	if !p.eat('[') {
		return false
	}
	out := make([]int64, 0, 8)
	p.ws()
	if p.eat(']') {
		*v = out
		return true
	}
	for {
		p.ws()
		n, ok := p.int()
		if !ok {
			return false
		}
		out = append(out, n)
		p.ws()
		if p.eat(',') {
			continue
		}
		if !p.eat(']') {
			return false
		}
		*v = out
		return true
	}
}

func (p *parser) toolCalls(v *[]ToolCall) bool {
	if !p.eat('[') {
		return false
	}
	var out []ToolCall
	p.ws()
	if p.eat(']') {
		*v = []ToolCall{}
		return true
	}
	for {
		p.ws()
		var c ToolCall
		if !p.toolCall(&c) {
			return false
		}
		out = append(out, c)
		p.ws()
		if p.eat(',') {
			continue
		}
		if !p.eat(']') {
			return false
		}
		*v = out
		return true
	}
}

func (p *parser) toolCall(c *ToolCall) bool {
	if !p.eat('{') {
		return false
	}
	p.ws()
	if p.eat('}') {
		return true
	}
	var seen uint8
	for {
		p.ws()
		k, ok := p.key()
		if !ok {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		var bit uint8
		switch string(k) {
		case "id":
			bit = 1
			c.ID, ok = p.str()
		case "name":
			bit = 2
			c.Name, ok = p.str()
		case "args":
			bit = 4
			c.Args, ok = p.raw()
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		p.ws()
		if p.eat(',') {
			continue
		}
		return p.eat('}')
	}
}

// raw reads any JSON value but null and returns a copy of its bytes, as
// json.RawMessage keeps them (null would read as the RawMessage "null").
func (p *parser) raw() (json.RawMessage, bool) {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == 'n' {
		return nil, false
	}
	if !p.skip(0) {
		return nil, false
	}
	span := p.b[start:p.i]
	if !p.d.Shared {
		return append(json.RawMessage(nil), span...), true
	}
	d := p.d
	if cap(d.raws)-len(d.raws) < len(span) {
		d.raws = chunk(d.raws, len(span))
	}
	n := len(d.raws)
	d.raws = append(d.raws, span...)
	return json.RawMessage(d.raws[n:len(d.raws):len(d.raws)]), true
}

// maxDepth bounds the nesting the fast path follows; deeper values go to
// encoding/json, which has its own limit.
const maxDepth = 1000

// skip moves past one JSON value, checking its syntax as encoding/json's
// scanner does (strings may hold any byte but control characters).
func (p *parser) skip(depth int) bool {
	if depth > maxDepth || p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		p.i++
		for p.i < len(p.b) {
			c := p.b[p.i]
			switch {
			case c == '"':
				p.i++
				return true
			case c < 0x20:
				return false
			case c == '\\':
				p.i++
				if p.i >= len(p.b) {
					return false
				}
				switch p.b[p.i] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					if p.i+4 >= len(p.b) {
						return false
					}
					if _, ok := hex4(p.b[p.i+1 : p.i+5]); !ok {
						return false
					}
					p.i += 4
				default:
					return false
				}
			}
			p.i++
		}
		return false
	case c == '{':
		p.i++
		p.ws()
		if p.eat('}') {
			return true
		}
		for {
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != '"' || !p.skip(depth+1) {
				return false
			}
			p.ws()
			if !p.eat(':') {
				return false
			}
			p.ws()
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			return p.eat('}')
		}
	case c == '[':
		p.i++
		p.ws()
		if p.eat(']') {
			return true
		}
		for {
			p.ws()
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			return p.eat(']')
		}
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	default:
		_, _, ok := p.number()
		return ok
	}
}

func (p *parser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// time reads an RFC 3339 timestamp in UTC ("2006-01-02T15:04:05.999999999Z",
// as the log writes them); any other form goes through time.Time's own
// UnmarshalJSON, which is what encoding/json calls.
func (p *parser) time(t *time.Time) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start := p.i
	end := start + 1
	for end < len(p.b) && p.b[end] != '"' && p.b[end] != '\\' {
		end++
	}
	if end >= len(p.b) || p.b[end] != '"' {
		return false
	}
	p.i = end + 1
	s := p.b[start+1 : end]
	if v, ok := fastTime(s); ok {
		*t = v
		return true
	}
	return t.UnmarshalJSON(p.b[start:p.i]) == nil
}

func fastTime(s []byte) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(s[0:4]), num(s[5:7]), num(s[8:10])
	hour, minute, sec := num(s[11:13]), num(s[14:16]), num(s[17:19])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n := num(frac[1:])
		if n < 0 {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nsec = n
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
