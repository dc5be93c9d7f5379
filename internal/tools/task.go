package tools

import (
	"context"
	"encoding/json"
)

// NameTask is the built-in that starts a subagent (spec.TaskTool). The
// harness runs it itself (package runner: a child harness in-process),
// so the Tool here only describes it to the model.
const NameTask = "task"

// task is the definition of the task tool.
type task struct{}

var _ Tool = task{}

// NewTask returns the task tool's definition. Its Run refuses: only the
// harness can start a child harness.
func NewTask() Tool { return task{} }

func (task) Name() string { return NameTask }

func (task) Description() string {
	return "Hand a self-contained piece of work to a subagent: a fresh agent with its own context window, " +
		"working in the same workspace with at most your tools and a share of your budget. " +
		"Only its final answer comes back. prompt says what to do and what to report; agent picks one of the " +
		"subagents the spec names, spec a subagent spec file in the workspace; with neither, the subagent " +
		"runs your own spec with the new prompt."
}

func (task) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"prompt":{"type":"string","description":"the subagent's first user message"},` +
		`"agent":{"type":"string","description":"name of a subagent the spec declares"},` +
		`"spec":{"type":"string","description":"path of a subagent spec file inside the workspace"}},` +
		`"required":["prompt"],"additionalProperties":false}`)
}

// SideEffects is true: a subagent may change the workspace, and its call
// is recorded with an intent so a resumed parent finds its child.
func (task) SideEffects() bool { return true }

func (task) Run(context.Context, Call) Result {
	return Result{Status: statusError, Error: "the task tool runs only inside the agentctl harness"}
}
