package spec

import (
	"fmt"
	"github.com/agentctl/agentctl/internal/modelapi"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Agent names an external agent program that runs instead of agentctl's own
// model + tools loop: a process tree (node agent.mjs, a coding-agent CLI)
// started in the session's workspace under the sandbox, whose model traffic
// goes through agentctl's proxy. The model section still says which model
// the session pins: the proxy serves it (a scripted model over the wire, or
// the upstream provider) and enforces the pin, the budget and wall time at
// the model boundary.
type Agent struct {
	// Command is the program and its arguments. A first element with a
	// slash is resolved relative to the spec file; others are looked up on
	// the sandbox's PATH. It runs in the workspace.
	Command []string `yaml:"command" json:"command"`
	// Env is set in the agent's environment on top of the scrubbed one
	// (PATH, HOME = workspace, LANG) and the variables of sandbox.env. The
	// variables agentctl sets to point SDKs at its proxy (ReservedEnv)
	// cannot be set here.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// ModelChange says what a request for a model other than the pinned
	// one gets: ModelChangeRefuse (the default, also when empty), a
	// provider-shaped error, or ModelChangeRecord, served and recorded as
	// a model_changed event.
	ModelChange string `yaml:"model_change" json:"model_change,omitempty"`
	// ReplayIgnore are regular expressions of text in the program's
	// requests that differs from run to run and that no normaliser of
	// the replay matcher knows (a request id of the program's own): every
	// replay of its sessions treats them as volatile, as replay run
	// --ignore does for one replay.
	ReplayIgnore []string `yaml:"replay_ignore" json:"replay_ignore,omitempty"`
}

// What a request for another model than the pinned one gets.
const (
	ModelChangeRefuse = "refuse"
	ModelChangeRecord = "record"
)

// agentctlEnv are the variables of agentctl's own that an external agent
// is given: the prompt, its session, the proxy's URL.
var agentctlEnv = []string{"AGENTCTL_PROMPT", "AGENTCTL_SESSION_ID", "AGENTCTL_PROXY_URL"}

// ReservedEnv lists the variables agentctl sets in an external agent's
// environment (AgentEnv.Vars): the base URLs and keys the SDKs of every
// registered model API read (modelapi.API.Env: OpenAI's and Anthropic's
// official SDKs, the OpenAI Agents SDK, Claude Code, …), the pinned
// model, and agentctl's own. A spec's agent.env may not set them.
func ReservedEnv() []string {
	var names []string
	for _, e := range apiEnvs() {
		names = append(names, e.BaseURL...)
		names = append(names, e.Key...)
		names = append(names, e.Model...)
	}
	return dedupNames(append(names, agentctlEnv...))
}

// apiEnvs are the Env of every registered API, in the registry's order.
func apiEnvs() []modelapi.Env {
	var envs []modelapi.Env
	for _, a := range modelapi.All() {
		envs = append(envs, a.Env)
	}
	return envs
}

func dedupNames(names []string) []string {
	seen := map[string]bool{}
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// AgentEnv is what points an agent program's SDKs at one session of the
// proxy: the same variables for a spec's agent: (the runner) and for
// `agentctl proxy -- COMMAND`, which had two different sets before.
type AgentEnv struct {
	// Base is the proxy's URL with the session's prefix
	// (http://127.0.0.1:PORT/s/<id>); SessionID is that id.
	Base, SessionID string
	// Key, if set, is the API key the SDKs are given (they refuse to start
	// without one even when the proxy needs none); Model, if set, is the
	// model they default to; Prompt, if set, is the task.
	Key, Model, Prompt string
}

// Vars are the variables, later ones of the same name winning: each
// registered API's (modelapi.API.Env), then agentctl's own.
func (e AgentEnv) Vars() []string {
	var v []string
	set := map[string]bool{}
	add := func(names []string, value string) {
		for _, n := range names {
			if !set[n] {
				set[n] = true
				v = append(v, n+"="+value)
			}
		}
	}
	for _, env := range apiEnvs() {
		add(env.BaseURL, e.Base+env.BaseSuffix)
	}
	v = append(v, "AGENTCTL_PROXY_URL="+e.Base, "AGENTCTL_SESSION_ID="+e.SessionID)
	if e.Key != "" {
		for _, env := range apiEnvs() {
			add(env.Key, e.Key)
		}
	}
	if e.Model != "" {
		for _, env := range apiEnvs() {
			add(env.DefaultModel, e.Model)
			add(env.Model, e.Model)
		}
	}
	if e.Prompt != "" {
		v = append(v, "AGENTCTL_PROMPT="+e.Prompt)
	}
	return v
}

// BaseVars are the variables AgentEnv sets to a base URL, each API's
// first one (the one a person is told) apart from the others.
func (e AgentEnv) BaseVars() (told, others []string) {
	seen := map[string]bool{}
	for _, env := range apiEnvs() {
		for i, n := range env.BaseURL {
			if seen[n] {
				continue
			}
			seen[n] = true
			kv := n + "=" + e.Base + env.BaseSuffix
			if i == 0 {
				told = append(told, kv)
			} else {
				others = append(others, n)
			}
		}
	}
	return told, others
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// External reports whether the spec runs an external agent program.
func (s *Spec) External() bool { return s.Agent != nil }

// ModelChangePolicy is agent.model_change, ModelChangeRefuse when unset.
func (a *Agent) ModelChangePolicy() string {
	if a == nil || a.ModelChange == "" {
		return ModelChangeRefuse
	}
	return a.ModelChange
}

// validateAgent checks what an external-agent spec may hold: the command
// and its environment, and none of the keys of agentctl's own loop, which
// the program brings itself (a tools: list would suggest a confinement of
// tools that does not exist: the agent's tools run inside its own process).
// It runs before defaults are applied, so a key left out is told from one
// written.
func (s *Spec) validateAgent(bad func(string, ...any)) {
	a := s.Agent
	if len(a.Command) == 0 {
		bad("agent.command is required: the program and its arguments, e.g. [node, agent.mjs]", "agent")
	}
	for i, c := range a.Command {
		if c == "" {
			bad(fmt.Sprintf("agent.command[%d] is empty", i), "agent", "command", i)
		}
	}
	keys := make([]string, 0, len(a.Env))
	for k := range a.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case !envNameRE.MatchString(k):
			bad(fmt.Sprintf("agent.env %q is not a variable name (letters, digits and _, not starting with a digit)", k), "agent", "env")
		case isReserved(k):
			bad(fmt.Sprintf("agent.env %s is set by agentctl (it points the SDKs at the proxy, which enforces the pinned model and the budget); remove it", k), "agent", "env", k)
		case strings.HasPrefix(k, "AGENTCTL_SANDBOX_"):
			bad(fmt.Sprintf("agent.env %s is reserved for the sandbox", k), "agent", "env", k)
		}
	}
	switch a.ModelChange {
	case "", ModelChangeRefuse, ModelChangeRecord:
	default:
		bad(fmt.Sprintf("agent.model_change %q is not refuse or record", a.ModelChange), "agent", "model_change")
	}
	for i, e := range a.ReplayIgnore {
		if _, err := regexp.Compile(e); err != nil {
			bad(fmt.Sprintf("agent.replay_ignore %q: %v", e, err), "agent", "replay_ignore", i)
		}
	}
	notHere := func(key, why string) {
		bad(fmt.Sprintf("%s does not apply to an external agent: %s; remove it", key, why), key)
	}
	if len(s.Tools) > 0 {
		notHere("tools", "the agent program brings its own tools and runs them itself, inside the sandbox")
	}
	if len(s.CustomTools) > 0 {
		notHere("custom_tools", "the agent program brings its own tools")
	}
	if len(s.Approvals) > 0 {
		notHere("approvals", "agentctl does not see the agent's tool calls before they run, so it cannot gate them")
	}
	if s.Budget.MaxToolCalls != 0 {
		bad("budget.max_tool_calls does not apply to an external agent: its tools run inside the program, before agentctl sees them; limit max_tokens, max_cost_usd or max_wall", "budget", "max_tool_calls")
	}
	if s.Compaction.Window != 0 || s.Compaction.Threshold != 0 {
		notHere("compaction", "the agent manages its own context (a compaction it makes is recorded)")
	}
	if s.OnTruncated != "" {
		notHere("on_truncated", "a truncated answer goes back to the agent, which decides")
	}
	if s.MaxTurns != 0 {
		notHere("max_turns", "turns are the agent's; limit max_tokens, max_cost_usd or max_wall")
	}
	if s.Retries != 0 {
		notHere("retries", "a failed done check ends the run; agentctl cannot hand the failure back to a program it does not drive")
	}
	if s.ToolTimeout != 0 {
		notHere("tool_timeout", "the agent runs its own tools; budget.max_wall bounds the whole run")
	}
}

func isReserved(k string) bool {
	for _, r := range ReservedEnv() {
		if k == r {
			return true
		}
	}
	return false
}

// UnmarshalYAML decodes agent strictly (Node.Decode alone would let a
// misspelt key through).
func (a *Agent) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "command", "env", "model_change", "replay_ignore"); err != nil {
		return err
	}
	type plain Agent
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*a = Agent(p)
	return nil
}
