package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// Script is a scripted model: the turns it answers, in order. Fixtures
// declare it in YAML; parsing the file is the caller's job.
type Script struct {
	Turns []ScriptTurn `yaml:"turns"`
	// Summary answers compaction requests; empty means a digest of the
	// request's messages.
	Summary string `yaml:"summary"`
	// Threads answer a proxied client's side conversations (opencode's
	// title call, a quota check): calls that are not the agent's and would
	// otherwise take the agent's next turn. See For.
	Threads []ScriptThread `yaml:"threads"`
}

// ScriptThread is the script of one side conversation: the calls whose
// system text contains System, answered turn N to the thread's N-th call.
// It is picked by the system text, not by arrival order, because a client
// sends its side calls before or after the agent's as it happens to run.
type ScriptThread struct {
	System string       `yaml:"system"`
	Turns  []ScriptTurn `yaml:"turns"`
}

// For returns the script that answers a call whose system text is system:
// the first thread whose System it contains, else s's own turns. The
// result has no threads, so a call is answered by one sequence only.
func (s Script) For(system string) Script {
	out := Script{Turns: s.Turns, Summary: s.Summary}
	for _, t := range s.Threads {
		if strings.Contains(system, t.System) {
			out.Turns = t.Turns
			break
		}
	}
	return out
}

// ScriptTurn is one assistant turn.
type ScriptTurn struct {
	Text      string       `yaml:"text"`
	ToolCalls []ScriptCall `yaml:"tool_calls"`
	// Usage overrides the deterministic token estimate.
	Usage *ScriptUsage `yaml:"usage"`
	// Delay is slept half-way through the text, honouring ctx, so tests
	// can interrupt a turn mid-stream ("2s", "150ms").
	Delay time.Duration `yaml:"delay"`
	// Error makes the turn fail with an *Error of Type "scripted_error"
	// and this Message (after Delay, with no text), to simulate a
	// provider failure.
	Error string `yaml:"error"`
}

// ScriptCall is one tool call of a scripted turn.
type ScriptCall struct {
	Name string
	// Args is the JSON object; in YAML it is written as a mapping.
	Args json.RawMessage
}

// ScriptUsage is the token usage a scripted turn reports.
type ScriptUsage struct {
	InputTokens  int64 `yaml:"input_tokens"`
	OutputTokens int64 `yaml:"output_tokens"`
}

// UnmarshalYAML reads {name, args} where args is a YAML mapping (or a
// string holding a JSON object) and keeps args as JSON, key order intact.
// Unknown keys are an error, so a misspelled "arg:" does not silently
// become a call with no arguments.
func (c *ScriptCall) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d:%d: tool call: want a mapping with name and args", n.Line, n.Column)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name":
			if err := v.Decode(&c.Name); err != nil {
				return err
			}
		case "args":
			raw, err := yamlArgs(v)
			if err != nil {
				return err
			}
			c.Args = raw
		default:
			return fmt.Errorf("line %d:%d: tool call: unknown field %q (want name, args)", k.Line, k.Column, k.Value)
		}
	}
	if c.Name == "" {
		return fmt.Errorf("line %d:%d: tool call: name is required", n.Line, n.Column)
	}
	return nil
}

func yamlArgs(v *yaml.Node) (json.RawMessage, error) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		s := strings.TrimSpace(v.Value)
		if json.Valid([]byte(s)) && strings.HasPrefix(s, "{") {
			return json.RawMessage(s), nil
		}
		return nil, fmt.Errorf("line %d:%d: args: want a mapping or a JSON object string", v.Line, v.Column)
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return json.RawMessage(`{}`), nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d:%d: args: want a mapping", v.Line, v.Column)
	}
	var b strings.Builder
	budget := maxArgNodes
	if err := nodeJSON(&b, v, &budget); err != nil {
		return nil, err
	}
	return json.RawMessage(b.String()), nil
}

// maxArgNodes bounds the YAML nodes one call's args may expand to, aliases
// counted at every use. A script is input like a spec: a few nested
// aliases ("billion laughs") would otherwise expand to gigabytes.
const maxArgNodes = 100_000

// nodeJSON writes a YAML node as JSON, keeping mapping key order (decoding
// into a map would sort the keys and change the args' bytes). Each node
// written, through an alias or not, spends one of *budget.
func nodeJSON(b *strings.Builder, n *yaml.Node, budget *int) error {
	if *budget--; *budget < 0 {
		return fmt.Errorf("line %d:%d: args: excessive aliasing: the value expands to more than %d YAML nodes; write it out or use fewer aliases", n.Line, n.Column, maxArgNodes)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nodeJSON(b, n.Alias, budget)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return nodeJSON(b, n.Content[0], budget)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			key, _ := plainJSON(n.Content[i].Value)
			b.Write(key)
			b.WriteByte(':')
			if err := nodeJSON(b, n.Content[i+1], budget); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := nodeJSON(b, c, budget); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d:%d: args: %w", n.Line, n.Column, err)
		}
		out, err := plainJSON(v)
		if err != nil {
			return fmt.Errorf("line %d:%d: args: %w", n.Line, n.Column, err)
		}
		b.Write(out)
	}
	return nil
}

// plainJSON is json.Marshal without HTML escaping: commands like
// "a > b && c" stay readable in the log.
func plainJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ErrScriptExhausted matches (with errors.Is) the error a scripted model
// returns when the run asks for more turns than the script has.
var ErrScriptExhausted = errors.New("scripted: the script ran out of turns")

type exhaustedError struct{ turns, asked int }

func (e *exhaustedError) Error() string {
	unit := "turns"
	if e.turns == 1 {
		unit = "turn"
	}
	return fmt.Sprintf("scripted: the script has %d %s and the run asked for turn %d; add turns or end the last one without tool calls", e.turns, unit, e.asked)
}

func (e *exhaustedError) Is(target error) bool { return target == ErrScriptExhausted }

// Scripted is the in-memory model: it answers from a Script, so fixtures,
// tests and the first run need no network and no key. It is not safe for
// concurrent use: Complete serves turns from a counter.
type Scripted struct {
	script Script
	model  string
	turn   int // turns consumed
}

var _ Provider = (*Scripted)(nil)

// NewScripted returns a scripted model that reports model as its model id.
func NewScripted(s Script, model string) *Scripted {
	return &Scripted{script: s, model: model}
}

// Name returns "scripted".
func (s *Scripted) Name() string { return "scripted" }

// Turn reports how many turns have been consumed.
func (s *Scripted) Turn() int { return s.turn }

// SetTurn sets how many turns have been consumed, so a resumed run continues
// with turn n+1 of the script.
func (s *Scripted) SetTurn(n int) { s.turn = n }

// Complete serves the next turn of the script.
//
// A turn is consumed when it completes or fails with its scripted Error. A
// turn cancelled during its Delay is not consumed: it returns the first
// half of its text with ctx.Err(), and the next call (a resumed run) serves
// it again. Compaction requests never consume a turn. Tool call ids are
// "call_<turn>_<index>", turn 1-based and index 0-based, so they are the
// same on every run. Usage, when the turn gives none, is estimated from
// character counts (see estimateTokens).
// An answer longer than req.MaxTokens is cut
// as a live provider cuts it (see capOutput).
func (s *Scripted) Complete(ctx context.Context, req Request, onText func(string)) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{Model: s.model}, err
	}
	if req.Purpose == PurposeCompaction {
		return s.summarise(req, onText), nil
	}
	if s.turn >= len(s.script.Turns) {
		return Response{Model: s.model}, &exhaustedError{turns: len(s.script.Turns), asked: s.turn + 1}
	}
	n := s.turn + 1
	t := s.script.Turns[s.turn]
	if t.Error != "" {
		if err := sleep(ctx, t.Delay); err != nil {
			return Response{Model: s.model}, err
		}
		s.turn++
		return Response{Model: s.model}, &Error{Provider: "scripted", Type: "scripted_error", Message: t.Error}
	}

	r := Response{Text: t.Text, Model: s.model, FinishReason: FinishStop}
	outChars := utf8.RuneCountInString(t.Text)
	for i, c := range t.ToolCalls {
		args := normaliseArgs(string(c.Args))
		r.ToolCalls = append(r.ToolCalls, session.ToolCall{ID: fmt.Sprintf("call_%d_%d", n, i), Name: c.Name, Args: args})
		outChars += utf8.RuneCount(args)
	}
	if len(r.ToolCalls) > 0 {
		r.FinishReason = FinishToolCalls
	}
	s.setUsage(&r, t.Usage, req, outChars)
	capOutput(&r, req.MaxTokens)

	runes := []rune(r.Text)
	first, second := string(runes[:len(runes)/2]), string(runes[len(runes)/2:])
	emitChunks(onText, first)
	if err := sleep(ctx, t.Delay); err != nil {
		return Response{Text: first, Model: s.model}, err
	}
	emitChunks(onText, second)
	s.turn++
	return r, nil
}

// capOutput cuts an answer longer than the request's max output tokens as
// a provider does: the text up to the cap (about four characters a token),
// no tool calls (they would come after it), the cap billed as output and
// finish_reason length. The budget's reservation shrinks max output, so a
// scripted run shows what a live one would spend.
func capOutput(r *Response, maxTokens int64) {
	if maxTokens <= 0 || r.OutputTokens <= maxTokens {
		return
	}
	if keep := int((maxTokens - 1) * 4); utf8.RuneCountInString(r.Text) > keep {
		r.Text = string([]rune(r.Text)[:max(keep, 0)])
	}
	r.ToolCalls = nil
	r.OutputTokens, r.FinishReason = maxTokens, FinishLength
	r.CostUSD = pricing.Cost(r.Model, r.InputTokens, r.OutputTokens)
}

func (s *Scripted) summarise(req Request, onText func(string)) Response {
	text := s.script.Summary
	if text == "" {
		text = Digest(req.Messages)
	}
	r := Response{Text: text, Model: s.model, FinishReason: FinishStop}
	s.setUsage(&r, nil, req, utf8.RuneCountInString(text))
	capOutput(&r, req.MaxTokens)
	emitChunks(onText, r.Text)
	return r
}

func (s *Scripted) setUsage(r *Response, u *ScriptUsage, req Request, outChars int) {
	if u != nil {
		r.InputTokens, r.OutputTokens = u.InputTokens, u.OutputTokens
	} else {
		r.InputTokens, r.OutputTokens = estimateTokens(requestChars(req)), estimateTokens(outChars)
	}
	r.CostUSD = pricing.Cost(s.model, r.InputTokens, r.OutputTokens)
}

// estimateTokens is the usual four characters per token, plus one so that
// no call is free: deterministic, which is all a fixture needs.
func estimateTokens(chars int) int64 { return int64(chars/4 + 1) }

// requestChars counts the characters of the request's messages: contents
// and tool call arguments.
func requestChars(req Request) int {
	n := 0
	for _, m := range req.Messages {
		n += utf8.RuneCountInString(m.Content)
		for _, tc := range m.ToolCalls {
			n += utf8.RuneCount(tc.Args)
		}
	}
	return n
}

// Digest is the scripted model's summary when the script has none:
// "Summary of N messages: " and the first 80 characters of each non-empty
// user, assistant and tool message, joined by " | ". It is built only from
// the messages it is given, so the same request always gets the same
// summary.
func Digest(messages []session.Message) string {
	var parts []string
	for _, m := range messages {
		switch m.Role {
		case session.RoleUser, session.RoleAssistant, session.RoleTool:
		default:
			continue
		}
		if m.Content == "" {
			continue
		}
		r := []rune(m.Content)
		if len(r) > 80 {
			r = r[:80]
		}
		parts = append(parts, string(r))
	}
	return fmt.Sprintf("Summary of %d messages: %s", len(parts), strings.Join(parts, " | "))
}

// emitChunks delivers s in two pieces (split on a rune boundary), so a
// consumer of onText sees streaming rather than one block.
func emitChunks(onText func(string), s string) {
	r := []rune(s)
	emit(onText, string(r[:len(r)/2]))
	emit(onText, string(r[len(r)/2:]))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
