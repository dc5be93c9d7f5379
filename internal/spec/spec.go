// Package spec reads agent specs: the YAML file that says which model runs,
// with which tools, in which workspace, under which budget, and when the run
// is done. Decoding is strict (an unknown key or a wrong type is an error
// with file:line) because a misspelt `approvals:` that silently decodes to
// nothing would let an agent run unguarded.
package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec/strict"
)

// Spec is one agent spec. Paths in it are relative to the spec file; Load
// resolves them to absolute paths.
type Spec struct {
	Name        string       `yaml:"name" json:"name"`
	Model       Model        `yaml:"model" json:"model"`
	System      string       `yaml:"system" json:"system,omitempty"`
	Prompt      string       `yaml:"prompt" json:"prompt"`
	Workspace   Workspace    `yaml:"workspace" json:"workspace"`
	Mode        string       `yaml:"mode" json:"mode"`
	Tools       []string     `yaml:"tools" json:"tools,omitempty"`
	CustomTools []CustomTool `yaml:"custom_tools" json:"custom_tools,omitempty"`
	// MCPServers and MCPTools: tools from MCP servers (see mcp.go).
	MCPServers []MCPServer        `yaml:"mcp_servers" json:"mcp_servers,omitempty"`
	MCPTools   map[string]MCPTool `yaml:"mcp_tools" json:"mcp_tools,omitempty"`
	Approvals  []Approval         `yaml:"approvals" json:"approvals,omitempty"`
	Budget     Budget             `yaml:"budget" json:"budget"`
	Compaction Compaction         `yaml:"compaction" json:"compaction"`
	Done       []DoneCheck        `yaml:"done" json:"done,omitempty"`
	Retries    int                `yaml:"retries" json:"retries,omitempty"`
	// OnTruncated says what a turn cut at the output cap (finish_reason
	// length) leads to: TruncatedFail (the default, also when empty),
	// TruncatedContinue or TruncatedEvaluate. Empty stays empty in the
	// recorded spec, so sessions recorded before the key existed keep
	// their spec hash; read it with Truncated.
	OnTruncated string   `yaml:"on_truncated" json:"on_truncated,omitempty"`
	MaxTurns    int      `yaml:"max_turns" json:"max_turns,omitempty"`
	ToolTimeout Duration `yaml:"tool_timeout" json:"tool_timeout,omitempty"`
	Sandbox     Sandbox  `yaml:"sandbox" json:"sandbox"`
	// Progress names files in the workspace (PROGRESS.md,
	// feature-list.json) that the harness shows the model on resume and
	// after a compaction; see progress.go.
	Progress []string `yaml:"progress" json:"progress,omitempty"`
	// Subagents names the child specs the task tool's agent argument can
	// pick, each a spec file relative to this one (see subagent.go).
	Subagents map[string]string `yaml:"subagents" json:"subagents,omitempty"`
	// Agent, when set, runs an external agent program instead of the
	// model + tools loop (see Agent). Nil for agentctl's own agents, so
	// their recorded spec and its hash do not change.
	Agent *Agent `yaml:"agent" json:"agent,omitempty"`
	// Tags label the sessions the spec runs (key=value, in their header's
	// attrs and the sessions view's tags column): run --tag adds to them.
	// Nil when absent, so specs without them keep their hash.
	Tags map[string]string `yaml:"tags" json:"tags,omitempty"`

	// Path is the absolute path of the spec file; Dir its directory.
	Path string `yaml:"-" json:"-"`
	Dir  string `yaml:"-" json:"-"`
}

// Model names the provider and model id the session pins.
type Model struct {
	Provider  string `yaml:"provider" json:"provider"`
	ID        string `yaml:"id" json:"id"`
	Script    string `yaml:"script" json:"script,omitempty"`
	BaseURL   string `yaml:"base_url" json:"base_url,omitempty"`
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	MaxTokens int64  `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// Price is the model's price, for a model agentctl's price table does
	// not know (a scripted model, a local server, a new release): a cost
	// budget needs one to reserve each call against. It is the price of
	// this model id only; a resume or fork on another model drops it.
	Price *Price `yaml:"price" json:"price,omitempty"`
}

// KeyEnv is the environment variable the model's API key is read from:
// model.api_key_env, else the provider's usual one (its modelapi.API's
// KeyEnv: OPENAI_API_KEY, ANTHROPIC_API_KEY); "" for a provider that takes
// no key (scripted).
func (m Model) KeyEnv() string { return modelapi.KeyEnv(m.api()) }

// NeedsKey reports whether the model cannot be called without the key in
// KeyEnv: a provider's own endpoint. A server at base_url (a local vLLM,
// a test server) may need none.
func (m Model) NeedsKey() bool { return m.KeyEnv() != "" && m.BaseURL == "" }

// api is m as the model API registry reads it.
func (m Model) api() modelapi.Model {
	return modelapi.Model{Provider: m.Provider, ID: m.ID, Script: m.Script, BaseURL: m.BaseURL, APIKeyEnv: m.APIKeyEnv}
}

// API is the registered model API m.Provider names; an unknown provider is
// a *modelapi.UnknownError naming the known ones.
func (m Model) API() (modelapi.API, error) { return modelapi.Lookup(m.Provider) }

// ModelProblem is one problem of a model section: Key is the key it is
// about ("provider", "script", "id"), Msg says what is wrong without the
// section's name ("script is required …").
type ModelProblem struct {
	Key string
	Msg string
}

// Check returns the problems of the model section: provider and id are
// required, the provider must be a registered API, and that API's own
// Check (the scripted model's script). It is the one check of a model
// section, for specs and for eval suites alike.
func (m Model) Check() []ModelProblem {
	var ps []ModelProblem
	if len(modelapi.Providers()) == 0 {
		// A program (or a test) that loads specs without linking the
		// APIs: say so rather than list no providers.
		return []ModelProblem{{"provider", "no model API is registered in this program: it must import internal/modelapi/all"}}
	}
	if m.Provider == "" {
		ps = append(ps, ModelProblem{"", "provider is required: " + strings.Join(modelapi.Providers(), ", ")})
	} else if api, err := m.API(); err != nil {
		ps = append(ps, ModelProblem{"provider", fmt.Sprintf("provider %q is not one of %s", m.Provider, strings.Join(modelapi.Providers(), ", "))})
	} else if api.Check != nil {
		for _, msg := range api.Check(m.api()) {
			ps = append(ps, ModelProblem{"", msg})
		}
	}
	if m.ID == "" {
		ps = append(ps, ModelProblem{"", "id is required (the model the session pins)"})
	}
	return ps
}

// Scripted reports whether m is the in-process scripted model (no key,
// no network, model.script), as its registered API says.
func (m Model) Scripted() bool {
	api, err := m.API()
	return err == nil && api.Scripted
}

// Price is a model's price in USD per million tokens. Cache reads and
// writes cost the input price unless given.
type Price struct {
	Input      float64  `yaml:"input" json:"input"`
	Output     float64  `yaml:"output" json:"output"`
	CacheRead  *float64 `yaml:"cache_read" json:"cache_read,omitempty"`
	CacheWrite *float64 `yaml:"cache_write" json:"cache_write,omitempty"`
}

// Provider is p as the provider package prices calls.
func (p Price) Provider() pricing.Price {
	out := pricing.Price{Input: p.Input, Output: p.Output, CacheRead: p.Input, CacheWrite: p.Input, CacheWrite1h: p.Input}
	if p.CacheRead != nil {
		out.CacheRead = *p.CacheRead
	}
	if p.CacheWrite != nil {
		out.CacheWrite, out.CacheWrite1h = *p.CacheWrite, *p.CacheWrite
	}
	return out
}

// Workspace is copied from From into the session, or used in place at Path.
type Workspace struct {
	From string `yaml:"from" json:"from,omitempty"`
	Path string `yaml:"path" json:"path,omitempty"`
	// Git keeps the workspace as git state (a run branch, a commit per
	// change); nil means the default, see Spec.WantsGit.
	Git *bool `yaml:"git" json:"git,omitempty"`
}

// CustomTool is a tool implemented by a command: args JSON on stdin, the
// idempotency key in AGENTCTL_IDEMPOTENCY_KEY.
type CustomTool struct {
	Name        string          `yaml:"name" json:"name"`
	Description string          `yaml:"description" json:"description"`
	Parameters  json.RawMessage `yaml:"-" json:"parameters"`
	Command     []string        `yaml:"command" json:"command"`
	SideEffects bool            `yaml:"side_effects" json:"side_effects"`
	Idempotent  bool            `yaml:"idempotent" json:"idempotent"`
	Lookup      []string        `yaml:"lookup" json:"lookup,omitempty"`

	// sideEffectsSet records that the YAML said side_effects at all, which
	// read-only mode requires (as false).
	sideEffectsSet bool
}

// UnmarshalYAML decodes a custom tool strictly and turns its parameters
// mapping into JSON Schema bytes.
func (c *CustomTool) UnmarshalYAML(n *yaml.Node) error {
	type plain struct {
		Name        string    `yaml:"name"`
		Description string    `yaml:"description"`
		Parameters  yaml.Node `yaml:"parameters"`
		Command     []string  `yaml:"command"`
		SideEffects *bool     `yaml:"side_effects"`
		Idempotent  bool      `yaml:"idempotent"`
		Lookup      []string  `yaml:"lookup"`
	}
	if err := checkKeys(n, "name", "description", "parameters", "command", "side_effects", "idempotent", "lookup"); err != nil {
		return err
	}
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = CustomTool{Name: p.Name, Description: p.Description, Command: p.Command,
		Idempotent: p.Idempotent, Lookup: p.Lookup, sideEffectsSet: p.SideEffects != nil}
	if p.SideEffects != nil {
		c.SideEffects = *p.SideEffects
	}
	if p.Parameters.Kind != 0 {
		js, err := NodeToJSON(&p.Parameters)
		if err != nil {
			return err
		}
		c.Parameters = js
	}
	return nil
}

// Approval says which calls wait for a human: every call of Tool, or only
// those whose path argument, resolved in the workspace, matches the Path
// glob (doublestar syntax: ** crosses folders, * and ? do not, [abc] and
// {a,b} as in a shell; case is ignored). For list_files and grep, whose
// path is a folder to walk, the rule also matches a folder that could hold
// a matching path.
type Approval struct {
	Tool string `yaml:"tool" json:"tool"`
	Path string `yaml:"path" json:"path,omitempty"`
}

// Budget limits a run. Zero means no limit for that dimension.
type Budget struct {
	MaxTokens    int64    `yaml:"max_tokens" json:"max_tokens,omitempty"`
	MaxToolCalls int64    `yaml:"max_tool_calls" json:"max_tool_calls,omitempty"`
	MaxCostUSD   float64  `yaml:"max_cost_usd" json:"max_cost_usd,omitempty"`
	MaxWall      Duration `yaml:"max_wall" json:"max_wall,omitempty"`
}

// Session is b as a session's fold holds it (session.State.Budget).
func (b Budget) Session() session.Budget {
	return session.Budget{MaxTokens: b.MaxTokens, MaxToolCalls: b.MaxToolCalls, MaxCostUSD: b.MaxCostUSD, MaxWall: time.Duration(b.MaxWall)}
}

// Compaction: when the projection passes Threshold of Window (estimated
// tokens), older events are summarised.
type Compaction struct {
	Window    int64   `yaml:"window" json:"window,omitempty"`
	Threshold float64 `yaml:"threshold" json:"threshold,omitempty"`
}

// DoneCheck is one evaluation run when the agent says it is done.
type DoneCheck struct {
	Command string `yaml:"command" json:"command"`
}

// Sandbox settings for tool subprocesses.
type Sandbox struct {
	Network string   `yaml:"network" json:"network,omitempty"` // deny (default) | allow
	Allow   []string `yaml:"allow" json:"allow,omitempty"`     // host:port allowed when denied
	Env     []string `yaml:"env" json:"env,omitempty"`         // variable names passed through
	// Memory is the address-space ceiling of a tool process ("512MiB",
	// "2GiB"; "unlimited"); empty means the sandbox default (4 GiB).
	Memory string `yaml:"memory" json:"memory,omitempty"`
	// CPU is the CPU-time ceiling of a tool process; 0 means the sandbox
	// default (10m).
	CPU Duration `yaml:"cpu" json:"cpu,omitempty"`
	// Pids caps the processes and threads of one tool call (a number, or
	// "unlimited"); empty means the sandbox default (512). It is enforced
	// where a pids cgroup is available (`agentctl sandbox check`).
	Pids string `yaml:"pids" json:"pids,omitempty"`
	// ReadOnly lists host folders tools may read besides the ones the
	// sandbox keeps (/usr, /bin, /lib*, /etc, /opt): a toolchain installed
	// under the home, such as ~/.pyenv. Absolute, or starting with ~/.
	// Credential folders inside them stay hidden.
	ReadOnly []string `yaml:"read_only" json:"read_only,omitempty"`
	// Unconfined runs tools without namespaces where the machine cannot
	// provide them. It must be set explicitly; agentctl never falls back
	// to it on its own.
	Unconfined bool `yaml:"unconfined" json:"unconfined,omitempty"`
}

// MemoryBytes parses Memory: 0 for the default, -1 for unlimited.
func (s Sandbox) MemoryBytes() (int64, error) {
	return ParseBytes(s.Memory)
}

// ReadOnlyFolders returns ReadOnly with a leading ~/ replaced by home.
func (s Sandbox) ReadOnlyFolders(home string) []string {
	var out []string
	for _, p := range s.ReadOnly {
		if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
			p = filepath.Join(home, rest)
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}

// PidsLimit parses Pids: 0 for the default, -1 for unlimited.
func (s Sandbox) PidsLimit() (int64, error) {
	v := strings.TrimSpace(s.Pids)
	switch v {
	case "":
		return 0, nil
	case "unlimited":
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a process count (use a number from 1, or unlimited)", v)
	}
	return n, nil
}

// ParseBytes reads a size such as "512MiB", "2G" or "1048576" (bytes);
// "" is 0 and "unlimited" is -1.
func ParseBytes(v string) (int64, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return 0, nil
	case "unlimited":
		return -1, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	mult := int64(1)
	num := v
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size (use forms like 512MiB, 2GiB or unlimited)", v)
	}
	return n * mult, nil
}

// Duration is a time.Duration written as "10m" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML accepts Go duration strings.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration (use forms like 90s, 10m, 1h)", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// What a truncated turn (finish_reason length) leads to.
const (
	// TruncatedFail ends the run failed, reason "truncated: …". The
	// default: a cut answer is incomplete by construction, and ending loud
	// is the only choice that never passes it off as a success.
	TruncatedFail = "fail"
	// TruncatedContinue asks the model to go on: a user message says the
	// answer was cut, and the loop continues (within max_turns). Tool
	// calls of the turn are run; a call whose arguments were cut fails
	// its schema check and the model is told.
	TruncatedContinue = "continue"
	// TruncatedEvaluate treats a truncated turn without tool calls as the
	// model saying it is done: the done checks decide. It needs done
	// checks, else nothing would judge the cut answer.
	TruncatedEvaluate = "evaluate"
)

// Truncated is the on_truncated policy, TruncatedFail when unset.
func (s *Spec) Truncated() string {
	if s.OnTruncated == "" {
		return TruncatedFail
	}
	return s.OnTruncated
}

// Defaults applied by Load.
const (
	DefaultThreshold = 0.75
	DefaultWindow    = 128000
	DefaultMaxTurns  = 200
	DefaultMaxTokens = 4096
)

// Error is a spec problem at a place in a file (strict.Error, shared
// with the other strict YAML readers: model scripts, suites).
type Error = strict.Error

// loadOne reads, strictly decodes, validates and resolves one spec file,
// without the specs its subagents name (Load checks those).
func loadOne(path string) (*Spec, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	var s Spec
	root, err := DecodeStrict(path, data, &s)
	if err != nil {
		return nil, err
	}
	s.Path, s.Dir = abs, filepath.Dir(abs)
	if err := s.validate(path, root); err != nil {
		return nil, err
	}
	s.resolve()
	return &s, nil
}

// DecodeStrict decodes YAML into v rejecting unknown keys, and returns the
// document node so callers can point at lines. Errors are *Error.
func DecodeStrict(file string, data []byte, v any) (*yaml.Node, error) {
	return strict.Decode(file, data, v)
}

// checkKeys rejects mapping keys outside allowed; custom UnmarshalYAML
// methods need it because Node.Decode is not strict.
func checkKeys(n *yaml.Node, allowed ...string) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		ok := false
		for _, a := range allowed {
			ok = ok || k.Value == a
		}
		if !ok {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: field %s not found in type object", k.Line, k.Value)}}
		}
	}
	return nil
}

// NodeToJSON converts a YAML node (a mapping such as a JSON Schema or tool
// args) to JSON bytes.
func NodeToJSON(n *yaml.Node) (json.RawMessage, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("line %d: cannot express as JSON: %v", n.Line, err)
	}
	return b, nil
}

// LineOf finds the line of the value at a path of mapping keys and
// sequence indexes ("custom_tools", 2, "name"), or of the deepest node
// found, so validation errors can point at the line to change.
func LineOf(n *yaml.Node, path ...any) int {
	cur := n
	for _, p := range path {
		switch k := p.(type) {
		case string:
			if cur.Kind != yaml.MappingNode {
				return cur.Line
			}
			found := false
			for i := 0; i+1 < len(cur.Content); i += 2 {
				if cur.Content[i].Value == k {
					cur, found = cur.Content[i+1], true
					break
				}
			}
			if !found {
				return cur.Line
			}
		case int:
			if cur.Kind != yaml.SequenceNode || k >= len(cur.Content) {
				return cur.Line
			}
			cur = cur.Content[k]
		}
	}
	return cur.Line
}

var knownTools = map[string]bool{"read_file": true, "write_file": true, "edit_file": true, "list_files": true, "grep": true, "bash": true, TaskTool: true}

func (s *Spec) validate(file string, root *yaml.Node) error {
	var errs []error
	bad := func(msg string, path ...any) {
		errs = append(errs, &Error{File: file, Line: LineOf(root, path...), Msg: msg})
	}
	if s.Name == "" {
		bad("name is required")
	}
	for _, p := range s.Model.Check() {
		path := []any{"model"}
		if p.Key != "" {
			path = append(path, p.Key)
		}
		bad("model."+p.Msg, path...)
	}
	if s.Agent != nil {
		s.validateAgent(bad)
	} else if s.Prompt == "" {
		bad("prompt is required (the first user message; --prompt can override it)")
	}
	switch s.Mode {
	case "":
		s.Mode = "write"
	case "read-only", "write":
	default:
		bad(fmt.Sprintf("mode %q is not read-only or write", s.Mode), "mode")
	}
	if s.Workspace.From != "" && s.Workspace.Path != "" {
		bad("workspace takes from (copied) or path (used in place), not both", "workspace")
	}
	if len(s.Tags) > session.MaxTags {
		bad(fmt.Sprintf("tags: %d tags, at most %d", len(s.Tags), session.MaxTags), "tags")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Tags)) {
		if err := session.ValidateTags(map[string]string{k: s.Tags[k]}); err != nil {
			bad(err.Error(), "tags", k)
		}
	}
	for i, name := range s.Progress {
		if why := badProgressName(name); why != "" {
			bad(fmt.Sprintf("progress file %q %s", name, why), "progress", i)
		}
	}
	for i, t := range s.Tools {
		if !knownTools[t] {
			bad(fmt.Sprintf("unknown tool %q (built-ins: bash, edit_file, grep, list_files, read_file, task, write_file; others go under custom_tools)", t), "tools", i)
		}
		if s.Mode == "read-only" && (t == "write_file" || t == "edit_file" || t == "bash" || t == TaskTool) {
			bad(fmt.Sprintf("tool %q is not available in read-only mode", t), "tools", i)
		}
	}
	seen := map[string]bool{}
	for i, c := range s.CustomTools {
		if s.Mode == "read-only" {
			switch {
			case c.SideEffects:
				bad(fmt.Sprintf("custom tool %q has side_effects: true, and read-only mode offers no tool with side effects; use mode: write, or remove the tool", c.Name), "custom_tools", i, "side_effects")
			case !c.sideEffectsSet:
				bad(fmt.Sprintf("custom tool %q must say side_effects: false to be offered in read-only mode (a tool that changes nothing declares it; one that does needs mode: write)", c.Name), "custom_tools", i)
			}
		}
		switch {
		case c.Name == "":
			bad("custom tool needs a name", "custom_tools", i)
		case knownTools[c.Name] || seen[c.Name]:
			bad(fmt.Sprintf("tool name %q is already taken", c.Name), "custom_tools", i, "name")
		case strings.Contains(c.Name, "__") && s.IsMCPTool(c.Name):
			bad(fmt.Sprintf("custom tool name %q would collide with the tools of mcp server %q (<server>__<tool>)", c.Name, strings.SplitN(c.Name, "__", 2)[0]), "custom_tools", i, "name")
		}
		seen[c.Name] = true
		if len(c.Command) == 0 {
			bad(fmt.Sprintf("custom tool %q needs a command", c.Name), "custom_tools", i)
		}
		if c.Idempotent && !c.SideEffects {
			bad(fmt.Sprintf("custom tool %q is idempotent but has no side_effects; idempotency only matters for side effects", c.Name), "custom_tools", i, "idempotent")
		}
		if len(c.Parameters) == 0 {
			s.CustomTools[i].Parameters = json.RawMessage(`{"type":"object"}`)
		}
	}
	for i, a := range s.Approvals {
		if a.Tool == "" {
			bad("approval rule needs a tool", "approvals", i)
			continue
		}
		custom := s.customTool(a.Tool)
		if !s.approvalToolKnown(a.Tool) {
			bad(fmt.Sprintf("approval rule names tool %q, which is neither a built-in nor one of custom_tools nor a tool of mcp_servers (<server>__<tool>; globs such as github__* allowed; a misspelt name would leave the tool ungated)", a.Tool), "approvals", i, "tool")
			continue
		}
		if a.Path == "" {
			continue
		}
		switch {
		case a.Tool == "bash":
			bad("an approval rule for bash cannot have a path: bash takes none and can change anything in the workspace; gate every bash call with {tool: bash}", "approvals", i, "path")
		case custom != nil && !hasPathParam(custom.Parameters):
			bad(fmt.Sprintf("custom tool %q has no path parameter, so an approval rule with a path would never match it; declare parameters.properties.path or drop the rule's path", a.Tool), "approvals", i, "path")
		}
		if msg := checkGlob(a.Path); msg != "" {
			bad(msg, "approvals", i, "path")
		}
	}
	if s.Budget.MaxTokens < 0 || s.Budget.MaxToolCalls < 0 || s.Budget.MaxCostUSD < 0 || s.Budget.MaxWall < 0 {
		bad("budget limits must not be negative", "budget")
	}
	if p := s.Model.Price; p != nil && (p.Input < 0 || p.Output < 0 || (p.CacheRead != nil && *p.CacheRead < 0) || (p.CacheWrite != nil && *p.CacheWrite < 0)) {
		bad("model.price: prices must not be negative (USD per million tokens)", "model", "price")
	}
	if s.Compaction.Threshold < 0 || s.Compaction.Threshold > 1 {
		bad(fmt.Sprintf("compaction.threshold %v must be between 0 and 1", s.Compaction.Threshold), "compaction", "threshold")
	}
	if s.Compaction.Threshold == 0 {
		s.Compaction.Threshold = DefaultThreshold
	}
	if s.Compaction.Window == 0 {
		s.Compaction.Window = DefaultWindow
	}
	if s.Retries < 0 {
		bad("retries must not be negative", "retries")
	}
	switch s.OnTruncated {
	case "", TruncatedFail, TruncatedContinue:
	case TruncatedEvaluate:
		if len(s.Done) == 0 {
			bad("on_truncated: evaluate needs done checks to judge a truncated answer; add done: or use fail or continue", "on_truncated")
		}
	default:
		bad(fmt.Sprintf("on_truncated %q is not fail, continue or evaluate", s.OnTruncated), "on_truncated")
	}
	if s.MaxTurns == 0 {
		s.MaxTurns = DefaultMaxTurns
	}
	if s.Model.MaxTokens == 0 {
		s.Model.MaxTokens = DefaultMaxTokens
	}
	switch s.Sandbox.Network {
	case "", "deny", "allow":
	default:
		bad(fmt.Sprintf("sandbox.network %q is not deny or allow", s.Sandbox.Network), "sandbox", "network")
	}
	for i, a := range s.Sandbox.Allow {
		host, port, err := net.SplitHostPort(a)
		n, perr := strconv.Atoi(port)
		ip := net.ParseIP(host)
		switch {
		case err != nil || host == "" || perr != nil || n < 1 || n > 65535:
			bad(fmt.Sprintf("sandbox.allow %q is not host:port", a), "sandbox", "allow", i)
		case ip != nil && !ip.IsLoopback():
			bad(fmt.Sprintf("sandbox.allow %q: only host names and loopback addresses can be allowed; use the host name", a), "sandbox", "allow", i)
		}
	}
	if _, err := s.Sandbox.MemoryBytes(); err != nil {
		bad("sandbox.memory "+err.Error(), "sandbox", "memory")
	}
	if s.Sandbox.CPU < 0 {
		bad("sandbox.cpu must not be negative", "sandbox", "cpu")
	}
	if _, err := s.Sandbox.PidsLimit(); err != nil {
		bad("sandbox.pids "+err.Error(), "sandbox", "pids")
	}
	for i, p := range s.Sandbox.ReadOnly {
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~/") {
			bad(fmt.Sprintf("sandbox.read_only %q must be an absolute folder or start with ~/", p), "sandbox", "read_only", i)
		}
	}
	s.validateMCP(bad)
	for i, d := range s.Done {
		if strings.TrimSpace(d.Command) == "" {
			bad("done check needs a command", "done", i)
		}
	}
	return errors.Join(errs...)
}

// customTool returns the custom tool called name, or nil.
func (s *Spec) customTool(name string) *CustomTool {
	for i := range s.CustomTools {
		if s.CustomTools[i].Name == name {
			return &s.CustomTools[i]
		}
	}
	return nil
}

// hasPathParam reports whether a JSON Schema declares properties.path.
func hasPathParam(schema json.RawMessage) bool {
	var v struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &v) != nil {
		return false
	}
	_, ok := v.Properties["path"]
	return ok
}

// checkGlob says what is wrong with an approval path glob, or "". It must
// parse (doublestar syntax) and be written as the clean workspace-relative
// path it is matched against, or it would silently never match.
func checkGlob(glob string) string {
	if !doublestar.ValidatePattern(glob) {
		return fmt.Sprintf("approval path %q is not a valid glob: check its brackets [...] and braces {...}, and escape a literal one with \\", glob)
	}
	clean := path.Clean(glob)
	switch {
	case strings.HasPrefix(glob, "/"):
		return fmt.Sprintf("approval path %q is absolute; write it relative to the workspace, as %q", glob, strings.TrimLeft(clean, "/"))
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return fmt.Sprintf("approval path %q leaves the workspace; rules match paths inside it", glob)
	case clean != glob:
		return fmt.Sprintf("approval path %q is not a clean relative path (./, .., doubled or trailing /); write it as %q", glob, clean)
	}
	return ""
}

// resolve makes every path in the spec absolute, relative to the spec file.
func (s *Spec) resolve() {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(s.Dir, p)
	}
	s.Model.Script = abs(s.Model.Script)
	s.Workspace.From = abs(s.Workspace.From)
	s.Workspace.Path = abs(s.Workspace.Path)
	for name, p := range s.Subagents {
		s.Subagents[name] = abs(p)
	}
	s.resolveMCP()
	if s.Agent != nil && len(s.Agent.Command) > 0 && strings.Contains(s.Agent.Command[0], "/") {
		s.Agent.Command[0] = abs(s.Agent.Command[0])
	}
	for i := range s.CustomTools {
		c := &s.CustomTools[i]
		if len(c.Command) > 0 && strings.Contains(c.Command[0], "/") {
			c.Command[0] = abs(c.Command[0])
		}
		if len(c.Lookup) > 0 && strings.Contains(c.Lookup[0], "/") {
			c.Lookup[0] = abs(c.Lookup[0])
		}
	}
}

// JSON is the spec as recorded in the session header.
func (s *Spec) JSON() json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// UnmarshalJSON reads the string form written by MarshalJSON.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// FromHeader rebuilds the resolved spec recorded in a session header, so a
// session resumes with the spec it started with even if the file changed or
// moved since.
func FromHeader(raw json.RawMessage) (*Spec, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("the session header records no spec")
	}
	var s Spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode the spec recorded in the session header: %w", err)
	}
	return &s, nil
}
