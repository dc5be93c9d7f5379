package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// An imported session (session.ImportedFrom) was run by another tool: it
// has no spec file, and its tools (Claude Code's Bash, Codex's
// exec_command, …) are not agentctl's. Offline replay and fork still work
// on it, from a minimal spec (ImportedSpec) and, for replay, the recorded
// results standing in for the tools (RecordedTools).

// ImportedSpec is the spec an imported session replays or forks with when
// no spec file is given: its pinned model, system prompt and first user
// message, write mode, no tools of its own, an empty workspace, no
// budget, no done checks, a window no transcript fills (the recording's
// own compactions are not redone) and as many turns as it recorded plus
// 200.
func ImportedSpec(evs []session.Event) *spec.Spec {
	hdr := evs[0]
	sp := &spec.Spec{Name: hdr.Name, Model: spec.Model{Provider: hdr.Provider, ID: hdr.Model, MaxTokens: spec.DefaultMaxTokens},
		System: hdr.System, Mode: tools.ModeWrite, Compaction: spec.Compaction{Window: 1 << 50, Threshold: spec.DefaultThreshold}}
	turns := 0
	for _, e := range evs {
		switch {
		case e.Kind == session.KindUserMessage && sp.Prompt == "" && turns == 0:
			sp.Prompt = e.Text
		case e.Kind == session.KindAssistantMessage:
			turns++
		}
	}
	sp.MaxTurns = turns + spec.DefaultMaxTurns
	return sp
}

// UnavailableTools names the tools the session's messages called (so a
// provider accepts the history that calls them) and answers every new
// call with an error saying the imported session's tools are not
// agentctl's: what a fork continues with when no spec file gives tools.
// The header's tool definitions (an import that recorded them: attrs
// tool_definitions) are offered too, each with its own description and
// schema, so a fork asks with the tools the session had.
func UnavailableTools(evs []session.Event) *tools.Registry {
	reg := tools.NewRegistry()
	defs := importedToolDefs(evs[0])
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			reg, _ = reg.With(&recordedTool{name: name, unavailable: true, def: defs.get(name)})
		}
	}
	for _, d := range defs.order {
		add(d)
	}
	for _, c := range session.Fold(evs).Calls {
		add(c.Tool)
	}
	return reg
}

// toolDefs are the tool definitions an imported session's header keeps
// (attrs tool_definitions), by name, in their order.
type toolDefs struct {
	byName map[string]toolDef
	order  []string
}

type toolDef struct {
	description string
	schema      json.RawMessage
}

func (d toolDefs) get(name string) toolDef { return d.byName[name] }

// importedToolDefs reads the header's tool definitions as the source sent
// them: Anthropic's {name, description, input_schema}, or OpenAI's
// {name, description, parameters}, bare or under "function".
func importedToolDefs(hdr session.Event) toolDefs {
	var a struct {
		Defs []json.RawMessage `json:"tool_definitions"`
	}
	out := toolDefs{byName: map[string]toolDef{}}
	if json.Unmarshal(hdr.Attrs, &a) != nil {
		return out
	}
	type shape struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	for _, raw := range a.Defs {
		var d struct {
			shape
			Function *shape `json:"function"`
		}
		if json.Unmarshal(raw, &d) != nil {
			continue
		}
		x := d.shape
		if d.Function != nil && x.Name == "" {
			x = *d.Function
		}
		schema := x.InputSchema
		if len(schema) == 0 {
			schema = x.Parameters
		}
		if x.Name == "" || out.byName[x.Name].schema != nil {
			continue
		}
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.byName[x.Name] = toolDef{description: x.Description, schema: schema}
		out.order = append(out.order, x.Name)
	}
	return out
}

// RecordedTools answers each call with the result the recording has for
// it: one tool per name the session's messages called, which hands out
// the recorded results of that tool's calls in log order (a call the
// transcript has no result for is an error saying so). Its tools count as
// having side effects, so the runner runs them one at a time, in order.
func RecordedTools(evs []session.Event) *tools.Registry {
	fold := session.Fold(evs)
	defs := importedToolDefs(evs[0])
	byName := map[string]*recordedTool{}
	var order []*recordedTool
	for _, c := range fold.Calls {
		if c.RequestSeq == 0 {
			continue // an orphan result: no message asks for it again
		}
		t := byName[c.Tool]
		if t == nil {
			t = &recordedTool{name: c.Tool, def: defs.get(c.Tool)}
			byName[c.Tool] = t
			order = append(order, t)
		}
		r := tools.Result{Status: session.ResultError, Error: "the recording has no result for this call"}
		if e, ok := session.EventAt(evs, c.ResultSeq); ok && c.ResultSeq > 0 {
			r = tools.Result{Status: e.Status, Output: e.Output, Error: e.Error}
		}
		t.results = append(t.results, r)
	}
	reg := tools.NewRegistry()
	for _, t := range order {
		reg, _ = reg.With(t) // names are distinct: byName
	}
	return reg
}

type recordedTool struct {
	name        string
	unavailable bool
	// def is the source's definition of the tool, when the import kept it.
	def     toolDef
	mu      sync.Mutex
	results []tools.Result
	next    int
}

func (t *recordedTool) Name() string { return t.name }
func (t *recordedTool) Description() string {
	if t.def.description != "" {
		return t.def.description
	}
	return "answers with the result the recording has for the call"
}
func (t *recordedTool) Parameters() json.RawMessage {
	if len(t.def.schema) > 0 {
		return t.def.schema
	}
	return json.RawMessage(`{"type":"object"}`)
}
func (t *recordedTool) SideEffects() bool { return !t.unavailable }

func (t *recordedTool) Run(ctx context.Context, _ tools.Call) tools.Result {
	if t.unavailable {
		return tools.Result{Status: session.ResultError, Error: fmt.Sprintf("%s is a tool of the session's source, not agentctl's: it cannot run here (fork with --spec FILE to give the session tools)", t.name)}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next >= len(t.results) {
		return tools.Result{Status: session.ResultError, Error: fmt.Sprintf("the recording has %d calls of %s; the replay made more", len(t.results), t.name)}
	}
	r := t.results[t.next]
	t.next++
	return r
}

// followUp is a user message the recording has after its first: the
// replay gives it once the runner has served afterTurns turns.
type followUp struct {
	afterTurns int
	text       string
}

// followUps lists the recording's user messages after the one the run
// starts with, each with the number of assistant turns before it.
// Prompts after the last turn are left out: the recording has no answer
// to give them.
func followUps(evs []session.Event) []followUp {
	var out []followUp
	turns, first := 0, true
	for _, e := range evs {
		switch e.Kind {
		case session.KindAssistantMessage:
			turns++
		case session.KindUserMessage:
			if first && turns == 0 {
				first = false
				continue
			}
			out = append(out, followUp{afterTurns: turns, text: e.Text})
		}
	}
	for len(out) > 0 && out[len(out)-1].afterTurns >= turns {
		out = out[:len(out)-1]
	}
	return out
}
