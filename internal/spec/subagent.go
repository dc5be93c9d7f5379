package spec

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// TaskTool is the built-in tool that starts a subagent: a child harness
// with its own session log, a fresh window, a tool set never wider than
// its parent's and a budget carved out of the parent's.
const TaskTool = "task"

// MaxDepth is how deep subagents nest: a session started by `run` is at
// depth 0, its children at 1. A task call deeper than this is refused
// (an error result), and so is a chain of declared subagents longer than
// it at load, so a child spawning children cannot recurse without end.
const MaxDepth = 3

// defaultTools are the built-ins a mode offers when the spec lists none
// (the task tool is never offered unless listed).
var defaultTools = map[string][]string{
	"read-only": {"grep", "list_files", "read_file"},
	"write":     {"bash", "edit_file", "grep", "list_files", "read_file", "write_file"},
}

// Load reads, strictly decodes, validates and resolves a spec file, and
// loads every spec its subagents name the same way, checking that none
// asks for a tool, a provider or a reach its parent lacks (CheckChild).
func Load(path string) (*Spec, error) {
	s, err := loadOne(path)
	if err != nil {
		return nil, err
	}
	if err := s.checkSubagents([]string{s.Path}); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadChild loads the spec of a subagent its parent's task call names by
// path (a file in the workspace, which the agent may have written) and
// checks it against parent like a declared one. It may not name
// subagents: those are more spec files, anywhere on the host, that it
// would have agentctl read (and quote in errors).
func LoadChild(path string, parent *Spec) (*Spec, error) {
	child, err := loadOne(path)
	if err != nil {
		return nil, err
	}
	if err := CheckChild(parent, child); err != nil {
		return nil, fmt.Errorf("subagent spec %s: %w", path, err)
	}
	if len(child.Subagents) > 0 {
		return nil, fmt.Errorf("subagent spec %s names subagents of its own; a spec from the workspace may not name more spec files (declare them in the top spec's subagents:)", path)
	}
	return child, nil
}

// checkSubagents loads the specs s.Subagents names, recursively; chain
// holds the spec files from the top one down to s.
func (s *Spec) checkSubagents(chain []string) error {
	names := make([]string, 0, len(s.Subagents))
	for n := range s.Subagents {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 0 && !slices.Contains(s.ToolNames(), TaskTool) {
		return &Error{File: s.Path, Msg: fmt.Sprintf("subagents are named (%s), but tools does not list task, so no call could start them; add task to tools or drop subagents", strings.Join(names, ", "))}
	}
	for _, n := range names {
		p := s.Subagents[n]
		where := fmt.Sprintf("subagents.%s (%s)", n, p)
		if slices.Contains(chain, p) {
			return &Error{File: s.Path, Msg: fmt.Sprintf("%s: the spec is its own ancestor (%s); a subagent cannot start itself", where, strings.Join(append(slices.Clone(chain), p), " -> "))}
		}
		if len(chain) > MaxDepth {
			return &Error{File: s.Path, Msg: fmt.Sprintf("%s: subagents nest deeper than %d levels (%s)", where, MaxDepth, strings.Join(append(slices.Clone(chain), p), " -> "))}
		}
		child, err := loadOne(p)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", s.Path, where, err)
		}
		if err := CheckChild(s, child); err != nil {
			return &Error{File: s.Path, Msg: fmt.Sprintf("%s: %v", where, err)}
		}
		if err := child.checkSubagents(append(slices.Clone(chain), p)); err != nil {
			return err
		}
	}
	return nil
}

// ToolNames is the set of tools the spec offers the model, sorted: the
// listed built-ins (the mode's when none are listed) and the custom tools.
func (s *Spec) ToolNames() []string {
	names := slices.Clone(s.Tools)
	if len(names) == 0 {
		names = slices.Clone(defaultTools[s.Mode])
		if s.Mode == "" {
			names = slices.Clone(defaultTools["write"])
		}
	}
	for _, c := range s.CustomTools {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// CheckChild refuses a subagent spec that would reach further than its
// parent: a tool the parent lacks (the error names them), a custom tool
// of the same name with another command, write mode under a read-only
// parent, a provider endpoint or API key the parent does not use (a
// spec from the workspace could send the key elsewhere), or a workspace
// or sandbox of its own (a subagent works in its parent's).
func CheckChild(parent, child *Spec) error {
	have := parent.ToolNames()
	var wider []string
	for _, n := range child.ToolNames() {
		if !slices.Contains(have, n) {
			wider = append(wider, n)
		}
	}
	if len(wider) > 0 {
		return fmt.Errorf("asks for %s, which its parent does not have (the parent has %s); a subagent's tools are never wider than its parent's",
			strings.Join(wider, ", "), strings.Join(have, ", "))
	}
	for _, c := range child.CustomTools {
		p := parent.customTool(c.Name)
		if p == nil || !slices.Equal(p.Command, c.Command) || !slices.Equal(p.Lookup, c.Lookup) || p.SideEffects != c.SideEffects || p.Idempotent != c.Idempotent {
			return fmt.Errorf("custom tool %q differs from the parent's of that name; a subagent uses its parent's tools as they are (list it under tools, or copy the parent's definition exactly)", c.Name)
		}
	}
	if parent.Mode == "read-only" && child.Mode != "read-only" {
		return fmt.Errorf("mode %s under a read-only parent; use mode: read-only", child.Mode)
	}
	if m := child.Model; !m.Scripted() && (m.Provider != parent.Model.Provider || m.BaseURL != parent.Model.BaseURL || m.APIKeyEnv != parent.Model.APIKeyEnv) {
		return fmt.Errorf("model provider %s (base_url %q, api_key_env %q) is not the parent's (%s, %q, %q); a subagent calls the parent's provider with the parent's key, or a scripted model",
			m.Provider, m.BaseURL, m.APIKeyEnv, parent.Model.Provider, parent.Model.BaseURL, parent.Model.APIKeyEnv)
	}
	if child.Workspace != (Workspace{}) {
		return fmt.Errorf("names a workspace; a subagent works in its parent's workspace, drop workspace:")
	}
	if len(child.MCPServers) > 0 || len(child.MCPTools) > 0 {
		// A child's servers would be started from its spec, which may
		// come from the workspace: a command run without bash.
		return fmt.Errorf("names MCP servers or mcp_tools; a subagent starts no servers of its own, drop mcp_servers: and mcp_tools:")
	}
	if !sandboxEmpty(child.Sandbox) {
		return fmt.Errorf("has sandbox settings; a subagent's tools run in its parent's sandbox, drop sandbox:")
	}
	return nil
}

func sandboxEmpty(s Sandbox) bool {
	return s.Network == "" && len(s.Allow) == 0 && len(s.Env) == 0 && s.Memory == "" && s.CPU == 0 &&
		s.Pids == "" && len(s.ReadOnly) == 0 && !s.Unconfined
}
