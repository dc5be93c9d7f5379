package runner

import (
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// SpecTools is the registry a spec declares: the built-ins of its mode
// (narrowed to its tools: list), its custom commands, and extra (the
// tools of its MCP servers, which package agent lists), checked against
// the mode. It lives here, not in package agent, so the runner's own
// tests build a spec's tools the way a run does.
func SpecTools(sp *spec.Spec, extra ...tools.Tool) (*tools.Registry, error) {
	reg, err := tools.Builtins(sp.Mode, sp.Tools)
	if err != nil {
		return nil, err
	}
	var all []tools.Tool
	for _, n := range reg.Names() {
		t, _ := reg.Get(n)
		all = append(all, t)
	}
	for _, c := range sp.CustomTools {
		all = append(all, tools.NewCommand(tools.CommandDef{
			Name: c.Name, Description: c.Description, Parameters: c.Parameters,
			Command: c.Command, SideEffects: c.SideEffects, Idempotent: c.Idempotent,
			Lookup: c.Lookup, Dir: sp.Dir,
		}))
	}
	all = append(all, extra...)
	reg, err = tools.NewRegistry().With(all...)
	if err != nil {
		return nil, err
	}
	if err := tools.CheckMode(sp.Mode, reg); err != nil {
		return nil, err
	}
	return reg, nil
}
