package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/fixtures"
	"github.com/agentctl/agentctl/runner"
	"github.com/agentctl/agentctl/runner/mcp"
	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/runner/spec"
	"github.com/agentctl/agentctl/runner/tools"
	"github.com/agentctl/agentctl/session"
)

// buildProvider maps the spec's model section to a provider. Unknown names
// are rejected by spec validation before this point; the default case is a
// guard for specs recorded by a newer agentctl.
func buildProvider(sp *spec.Spec) (provider.Provider, error) {
	m := sp.Model
	key := func(def string) string {
		name := m.APIKeyEnv
		if name == "" {
			name = def
		}
		return os.Getenv(name)
	}
	switch m.Provider {
	case "scripted":
		script, err := spec.LoadScript(m.Script)
		if err != nil {
			return nil, err
		}
		return provider.NewScripted(script, m.ID), nil
	case "openai":
		k := key("OPENAI_API_KEY")
		if k == "" && m.BaseURL == "" {
			return nil, fmt.Errorf("model %s: no API key; set OPENAI_API_KEY (or the variable named by model.api_key_env), or use provider: scripted to run without a key", m.ID)
		}
		return provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.BaseURL, APIKey: k, MaxRetries: 3})
	case "anthropic":
		k := key("ANTHROPIC_API_KEY")
		if k == "" && m.BaseURL == "" {
			return nil, fmt.Errorf("model %s: no API key; set ANTHROPIC_API_KEY (or the variable named by model.api_key_env), or use provider: scripted to run without a key", m.ID)
		}
		return provider.NewAnthropic(provider.AnthropicConfig{BaseURL: m.BaseURL, APIKey: k, MaxRetries: 3})
	}
	return nil, fmt.Errorf("model.provider %q is not one this agentctl knows (scripted, openai, anthropic)", m.Provider)
}

// buildTools makes the mode's registry plus the spec's custom tools and
// the tools of its MCP servers (listed live, in the sandbox; home is the
// agentctl home, hidden from them), or with offline set the MCP tools
// the session of those events recorded, answering from the recording.
func buildTools(sp *spec.Spec, home string, offline ...session.Event) (*tools.Registry, error) {
	names := sp.Tools
	reg, err := tools.Builtins(sp.Mode, names)
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
	var set *mcp.Set
	if len(offline) > 0 {
		set, err = offlineMCPTools(sp, offline)
	} else {
		set, err = mcpTools(sp, home)
	}
	if err != nil {
		return nil, err
	}
	all = append(all, set.Tools...)
	reg, err = tools.NewRegistry().With(all...)
	if err != nil {
		return nil, err
	}
	// Whatever the spec came from (a file, a session header on resume or
	// fork), read-only mode brings back no tool with side effects.
	if err := tools.CheckMode(sp.Mode, reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// specConfig is the part of a runner config every command derives the
// same way from a spec: the spec, its provider and its tool registry.
func specConfig(sp *spec.Spec, home string) (runner.Config, error) {
	if sp.External() {
		return externalConfig(sp)
	}
	prov, err := buildProvider(sp)
	if err != nil {
		return runner.Config{}, err
	}
	reg, err := buildTools(sp, home)
	if err != nil {
		return runner.Config{}, err
	}
	return runner.Config{Spec: sp, Provider: prov, Tools: reg, NewProvider: buildProvider}, nil
}

// specFromArg loads a spec file, with a hint when the path is wrong.
func specFromArg(path string) (*spec.Spec, error) {
	if _, err := os.Stat(path); err != nil {
		matches, _ := filepath.Glob("fixtures/agents/*.yaml")
		hint := "; 'agentctl run' with no spec runs the embedded example agent"
		if len(matches) > 0 {
			hint = fmt.Sprintf("; try one of the fixtures, e.g. agentctl run %s", matches[0])
		}
		return nil, fmt.Errorf("spec %s: %w%s", path, err, hint)
	}
	return spec.Load(path)
}

// sessionSpec is the spec a recorded session goes on with (resume, replay
// run, replay fork): the file named by specFile or the one the session ran
// from, never the copy in the header (see spec.ForSession), adjusted by the
// command's --workspace and --unsandboxed flags; changes lists how it
// differs from the recorded spec.
//
// A recorded spec path inside the agentctl home is refused: a home handed
// over from elsewhere could carry a spec of its own there, and its header
// would name it. The embedded default agent, which run extracts into the
// home, is extracted afresh instead.
func sessionSpec(f *Factory, hdr session.Event, specFile, workspace string, unsandboxed bool) (sp *spec.Spec, changes []string, err error) {
	if specFile == "" && hdr.SpecPath != "" {
		home, herr := filepath.Abs(f.Home)
		if herr != nil {
			return nil, nil, herr
		}
		rec := filepath.Clean(hdr.SpecPath)
		defaultDir := filepath.Join(home, "default-agent")
		switch {
		case rec == filepath.Join(defaultDir, fixtures.DefaultAgent):
			if _, err := fixtures.Extract(defaultDir); err != nil {
				return nil, nil, fmt.Errorf("extract the embedded default agent: %w", err)
			}
		case rec == home || strings.HasPrefix(rec, home+string(filepath.Separator)):
			return nil, nil, fmt.Errorf("the session's recorded spec %s is inside the agentctl home, where a home from elsewhere could have placed it; pass --spec FILE with the spec to go on with", rec)
		}
	}
	sp, err = spec.ForSession(hdr, specFile)
	if err != nil {
		return nil, nil, err
	}
	if unsandboxed {
		sp.Sandbox.Unconfined = true
	}
	if workspace != "" {
		abs, err := filepath.Abs(workspace)
		if err != nil {
			return nil, nil, err
		}
		sp.Workspace.Path, sp.Workspace.From = abs, ""
	}
	return sp, spec.Changes(hdr, sp), nil
}

// warnSpecChanges says on stderr that a replay or fork runs the tools of a
// spec file that differs from the one the session recorded.
func warnSpecChanges(f *Factory, cmd, id string, sp *spec.Spec, changes []string) {
	if len(changes) > 0 {
		fmt.Fprintf(f.Err, "warning: %s %s: the spec %s differs from the one the session recorded (changed: %s); its tools and workspace are used\n",
			cmd, id, sp.Path, strings.Join(changes, ", "))
	}
}
