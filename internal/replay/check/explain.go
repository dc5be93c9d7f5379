package check

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/session"
)

// Rule is an earlier (or plausible alternative) projection rule, written as
// a rewrite of today's payload. When today's payload rewritten by a rule
// has the recorded digest, the log was made with that rule, and the log's
// payload is known exactly.
type Rule struct {
	Name string
	Doc  string
	// Apply returns the payload and tool list the rule would have sent.
	// It must not modify msgs.
	Apply func(msgs []session.Message, tools []string) ([]session.Message, []string)
}

// Rules are the projection rules verify tries to explain a divergence
// with, in order. Add one whenever a projection rule changes, so that
// yesterday's logs get a precise diff instead of a list of suspects.
var Rules = []Rule{
	{Name: "tool_name", Doc: "tool replies without the tool's name",
		Apply: mapMessages(func(m session.Message) (session.Message, bool) {
			if m.Role == session.RoleTool {
				m.Name = ""
			}
			return m, true
		})},
	{Name: "summary_prefix", Doc: `the compaction summary without the "` + strings.TrimSpace(session.SummaryPrefix) + `" prefix`,
		Apply: mapMessages(func(m session.Message) (session.Message, bool) {
			if m.Role == session.RoleSystem && strings.HasPrefix(m.Content, session.SummaryPrefix) {
				m.Content = strings.TrimPrefix(m.Content, session.SummaryPrefix)
			}
			return m, true
		})},
	{Name: "pinned_first_user", Doc: "no first user message pinned after a compaction summary",
		Apply: func(msgs []session.Message, tools []string) ([]session.Message, []string) {
			out := make([]session.Message, 0, len(msgs))
			for i, m := range msgs {
				if m.Role == session.RoleUser && i > 0 && msgs[i-1].Role == session.RoleSystem &&
					strings.HasPrefix(msgs[i-1].Content, session.SummaryPrefix) {
					continue
				}
				out = append(out, m)
			}
			return out, tools
		}},
	{Name: "cancel_closure", Doc: "tool calls without a result left open (no synthetic cancellation)",
		Apply: mapMessages(func(m session.Message) (session.Message, bool) {
			return m, !(m.Role == session.RoleTool && m.Seq == 0)
		})},
	{Name: "error_content", Doc: `tool errors sent as plain text instead of {"error":...}`,
		Apply: mapMessages(func(m session.Message) (session.Message, bool) {
			if m.Role == session.RoleTool && m.Seq != 0 {
				var e map[string]string
				if json.Unmarshal([]byte(m.Content), &e) == nil && len(e) == 1 && e["error"] != "" {
					m.Content = e["error"]
				}
			}
			return m, true
		})},
	{Name: "tool_list", Doc: "request digests without the offered tool names",
		Apply: func(msgs []session.Message, _ []string) ([]session.Message, []string) { return msgs, nil }},
	{Name: "system_prompt", Doc: "no system prompt message",
		Apply: func(msgs []session.Message, tools []string) ([]session.Message, []string) {
			if len(msgs) > 0 && msgs[0].Role == session.RoleSystem && msgs[0].Seq == 0 {
				return msgs[1:], tools
			}
			return msgs, tools
		}},
}

func mapMessages(f func(session.Message) (session.Message, bool)) func([]session.Message, []string) ([]session.Message, []string) {
	return func(msgs []session.Message, tools []string) ([]session.Message, []string) {
		out := make([]session.Message, 0, len(msgs))
		for _, m := range msgs {
			if m2, keep := f(m); keep {
				out = append(out, m2)
			}
		}
		return out, tools
	}
}

// explain builds the divergence of call: the rule that reproduces the
// log's digest with a field diff, or the suspects since the last agreement.
func explain(call session.Event, turn int, got string, msgs []session.Message, tools []string, prev []session.Message, agreed int64) *Divergence {
	d := &Divergence{Code: CodeDigestMismatch, Turn: turn, Seq: call.Seq, LogDigest: call.RequestDigest,
		ReplayDigest: got, AgreedSeq: agreed, ReplayCount: len(msgs)}
	for _, r := range Rules {
		lm, lt := r.Apply(msgs, tools)
		if session.Digest(lm, lt) != call.RequestDigest {
			continue
		}
		d.Rule, d.RuleDoc = r.Name, r.Doc
		d.Diffs = diffPayloads(lm, msgs)
		if strings.Join(lt, ",") != strings.Join(tools, ",") || (lt == nil) != (tools == nil) {
			d.Diffs = append(d.Diffs, FieldDiff{Index: -1, Role: "-", Field: "tools", Log: show(lt), Replay: show(tools)})
		}
		return d
	}
	seen := map[string]bool{}
	for _, m := range prev {
		seen[msgKey(m)] = true
	}
	for i, m := range msgs {
		if !seen[msgKey(m)] {
			d.Suspects = append(d.Suspects, MessageRef{Index: i, Seq: m.Seq, Role: m.Role, Preview: preview(m)})
		}
	}
	return d
}

func msgKey(m session.Message) string {
	b, _ := json.Marshal(session.Wire(m))
	return string(b)
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func preview(m session.Message) string {
	s := m.Content
	if s == "" && len(m.ToolCalls) > 0 {
		var names []string
		for _, c := range m.ToolCalls {
			names = append(names, c.Name)
		}
		s = "→ " + strings.Join(names, ", ")
	}
	return clip.Runes(s, 60)
}

// diffPayloads compares the log's payload with replay's message by message.
// A message on one side only is reported as such and the walk resyncs.
func diffPayloads(log, rep []session.Message) []FieldDiff {
	var out []FieldDiff
	i, j := 0, 0
	for i < len(log) || j < len(rep) {
		switch {
		case i >= len(log):
			out = append(out, FieldDiff{Index: j, Seq: rep[j].Seq, Role: rep[j].Role, Field: "message", Log: "(absent)", Replay: preview(rep[j])})
			j++
		case j >= len(rep):
			out = append(out, FieldDiff{Index: i, Seq: log[i].Seq, Role: log[i].Role, Field: "message", Log: preview(log[i]), Replay: "(absent)"})
			i++
		case msgKey(log[i]) == msgKey(rep[j]):
			i++
			j++
		case j+1 < len(rep) && msgKey(log[i]) == msgKey(rep[j+1]):
			out = append(out, FieldDiff{Index: j, Seq: rep[j].Seq, Role: rep[j].Role, Field: "message", Log: "(absent)", Replay: preview(rep[j])})
			j++
		case i+1 < len(log) && msgKey(log[i+1]) == msgKey(rep[j]):
			out = append(out, FieldDiff{Index: j, Seq: log[i].Seq, Role: log[i].Role, Field: "message", Log: preview(log[i]), Replay: "(absent)"})
			i++
		default:
			out = append(out, fieldDiffs(j, log[i], rep[j])...)
			i++
			j++
		}
	}
	return out
}

func fieldDiffs(idx int, a, b session.Message) []FieldDiff {
	var out []FieldDiff
	add := func(field, x, y string) {
		if x != y {
			out = append(out, FieldDiff{Index: idx, Seq: b.Seq, Role: b.Role, Field: field, Log: x, Replay: y})
		}
	}
	add("role", a.Role, b.Role)
	add("content", a.Content, b.Content)
	add("tool_calls", show(a.ToolCalls), show(b.ToolCalls))
	add("tool_call_id", a.ToolCallID, b.ToolCallID)
	add("name", a.Name, b.Name)
	return out
}

// Text renders the divergence the way a workflow engine reports
// non-determinism: the code, where, and both sides.
func (d *Divergence) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] turn %d (model_call seq %d): the request differs from the recording\n", d.Code, d.Turn, d.Seq)
	fmt.Fprintf(&b, "  log has %s, replay produced %s\n", d.LogDigest, d.ReplayDigest)
	if d.AgreedSeq > 0 {
		fmt.Fprintf(&b, "  last agreeing call: seq %d\n", d.AgreedSeq)
	} else {
		b.WriteString("  no earlier call agreed\n")
	}
	if d.Rule != "" {
		fmt.Fprintf(&b, "  the log's digest is reproduced by rule %q (%s); the payloads differ in:\n", d.Rule, d.RuleDoc)
		for _, f := range d.Diffs {
			where := fmt.Sprintf("message %d (%s", f.Index, f.Role)
			if f.Index < 0 {
				where = "request (tools"
			}
			if f.Seq > 0 {
				where += fmt.Sprintf(", seq %d", f.Seq)
			}
			fmt.Fprintf(&b, "    %s) field %s: log has %s, replay produced %s\n", where, f.Field, quote(f.Log), quote(f.Replay))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "  no known rule reproduces the log's digest (the log keeps digests, not payloads);\n")
	fmt.Fprintf(&b, "  the difference is among the %d message(s) of today's %d-message payload that are new since the last agreeing call:\n", len(d.Suspects), d.ReplayCount)
	for _, s := range d.Suspects {
		seq := "synthetic"
		if s.Seq > 0 {
			seq = fmt.Sprintf("seq %d", s.Seq)
		}
		fmt.Fprintf(&b, "    message %d (%s, %s): %s\n", s.Index, s.Role, seq, quote(s.Preview))
	}
	return b.String()
}

func quote(s string) string {
	if s == "(absent)" {
		return s
	}
	return fmt.Sprintf("%q", clip.Runes(s, 80))
}
