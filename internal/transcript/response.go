package transcript

import (
	"encoding/json"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// The phases the importers share. Each importer is a value with a method
// per phase (decode the records, pair calls with results, build the
// events, finish the header); what is the same in several formats is
// written here once.

// response is the API response an importer is gathering from several
// records (Claude Code's lines of one message.id, OpenHands's actions of
// one model_response.id, Codex's run of output items), with the tool
// intents and results seen since it began, which are written after it, in
// the order they came, when it closes.
type response struct {
	turn *turn
	id   string
	line int
	ops  []pendingOp
}

// pendingOp is an intent (call set) or a result waiting for the open
// response to be written.
type pendingOp struct {
	call   *session.ToolCall
	ts     time.Time
	line   int
	result *pendingResult
}

type pendingResult struct {
	id, output, status string
	attrs              map[string]any
}

// same reports whether id names the open response (an empty id never
// does: each record without one is a response of its own).
func (r *response) same(id string) bool {
	return r.turn != nil && id != "" && id == r.id
}

// start writes the open response, if any, and opens t, the response of
// id, first seen at line.
func (r *response) start(b *builder, t turn, id string, line int) {
	r.flush(b)
	r.turn, r.id, r.line = &t, id, line
}

// intent queues a tool intent, dispatched at ts, behind the response.
func (r *response) intent(tc session.ToolCall, ts time.Time, line int) {
	r.ops = append(r.ops, pendingOp{call: &tc, ts: ts, line: line})
}

// result queues a tool result behind the response.
func (r *response) result(line int, id, output, status string, ts time.Time, attrs map[string]any) {
	r.ops = append(r.ops, pendingOp{ts: ts, line: line, result: &pendingResult{id: id, output: output, status: status, attrs: attrs}})
}

// flush writes the open response (its assistant_message and model_call),
// then what was queued behind it; a result's latency runs from its
// intent's time.
func (r *response) flush(b *builder) {
	if r.turn != nil {
		b.addTurn(*r.turn, r.line)
		r.turn, r.id = nil, ""
	}
	for _, o := range r.ops {
		if o.call != nil {
			b.intent(*o.call, o.ts)
			continue
		}
		x := o.result
		b.result(o.line, x.id, x.output, x.status, "", o.ts, b.latency(x.id, o.ts), x.attrs)
	}
	r.ops = nil
}

// latency is the time from the latest intent of call id to ts, in
// milliseconds (0 when either time is unknown, or no intent was written).
func (b *builder) latency(id string, ts time.Time) int64 {
	for i := len(b.evs) - 1; i >= 0; i-- {
		if e := b.evs[i]; e.Kind == session.KindToolIntent && e.CallID == id {
			if !e.TS.IsZero() && !ts.IsZero() {
				return ts.Sub(e.TS).Milliseconds()
			}
			return 0
		}
	}
	return 0
}

// appendText adds s to the response's text, a line of its own.
func (t *turn) appendText(s string) {
	if t.text != "" {
		t.text += "\n"
	}
	t.text += s
}

// keepVerbatim adds block x to the list attrs[kind]: a part of a record
// that maps to no field, kept as the source wrote it.
func keepVerbatim(attrs map[string]any, kind string, x json.RawMessage) {
	list, _ := attrs[kind].([]json.RawMessage)
	attrs[kind] = append(list, x)
}

// setUsage puts usage u on model_call c, counted as the live provider
// counts it.
func setUsage(c *session.Event, u pricing.Usage) {
	c.InputTokens, c.OutputTokens = u.Input, u.Output
	c.CacheReadInputTokens, c.CacheCreationInputTokens = u.CacheRead, u.CacheCreation
}

// endState records the source's end state in the header, or that it
// records none.
func (b *builder) endState(status string) {
	if status != "" {
		b.attrs["source_status"] = status
	} else {
		b.notRecorded("end state")
	}
}

// fnCall is a tool call as OpenAI's chat API (and LiteLLM after it)
// writes it. It is an alias of the unnamed struct, so a decode error
// names the type as before it was shared (a report's detail).
type fnCall = struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}
