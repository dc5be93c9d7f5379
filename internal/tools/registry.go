package tools

import (
	"fmt"
	"slices"
	"strings"
)

// The modes. A mode is a tool set: read-only and write are different
// registries, not different prompts.
const (
	ModeReadOnly = "read-only"
	ModeWrite    = "write"
)

// builtinNames lists every built-in.
var builtinNames = []string{NameReadFile, NameWriteFile, NameEditFile, NameListFiles, NameGrep, NameBash}

// readOnlyNames lists the built-ins offered in read-only mode.
var readOnlyNames = []string{NameGrep, NameListFiles, NameReadFile}

// Registry is a set of tools by name. It is immutable once built and safe
// for concurrent use.
type Registry struct {
	tools map[string]Tool
}

// NewRegistry returns a registry of tools. It panics if two tools share a
// name, a programming error; use With to add tools from configuration.
func NewRegistry(tools ...Tool) *Registry {
	r, err := (&Registry{}).With(tools...)
	if err != nil {
		panic(err)
	}
	return r
}

// With returns a new registry holding r's tools and tools. A name already
// taken is an error naming it.
func (r *Registry) With(tools ...Tool) (*Registry, error) {
	m := make(map[string]Tool, len(r.tools)+len(tools))
	for name, t := range r.tools {
		m[name] = t
	}
	for _, t := range tools {
		if _, dup := m[t.Name()]; dup {
			return nil, fmt.Errorf("tools: tool %q registered twice", t.Name())
		}
		m[t.Name()] = t
	}
	return &Registry{tools: m}, nil
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Names returns the tool names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.tools))
	for name := range r.tools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Defs returns the definitions to offer a model, sorted by name so that the
// request prefix is stable.
func (r *Registry) Defs() []Def {
	names := r.Names()
	defs := make([]Def, len(names))
	for i, name := range names {
		t := r.tools[name]
		defs[i] = Def{Name: name, Description: t.Description(), Parameters: t.Parameters()}
	}
	return defs
}

// Builtins returns the built-in tools of mode ("read-only" or "write"),
// limited to names when names is not empty. Asking for a tool the mode does
// not offer is an error wrapping ErrMode; an unknown name is an error
// wrapping ErrUnknownTool that lists the known ones.
func Builtins(mode string, names []string) (*Registry, error) {
	var offered []string
	switch mode {
	case ModeReadOnly:
		offered = readOnlyNames
	case ModeWrite:
		offered = builtinNames
	default:
		return nil, fmt.Errorf("tools: unknown mode %q (known: %s, %s)", mode, ModeReadOnly, ModeWrite)
	}
	if len(names) == 0 {
		names = offered
	}
	var tools []Tool
	seen := map[string]bool{}
	for _, name := range names {
		if name == NameTask {
			if mode != ModeWrite {
				return nil, fmt.Errorf("%w: %s (%s mode offers %s)", ErrMode, name, mode, strings.Join(offered, ", "))
			}
			if !seen[name] {
				tools = append(tools, NewTask())
			}
			seen[name] = true
			continue
		}
		if !slices.Contains(builtinNames, name) {
			known := append(slices.Clone(builtinNames), NameTask)
			slices.Sort(known)
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownTool, name, strings.Join(known, ", "))
		}
		if !slices.Contains(offered, name) {
			return nil, fmt.Errorf("%w: %s (%s mode offers %s)", ErrMode, name, mode, strings.Join(offered, ", "))
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		tools = append(tools, newBuiltin(name))
	}
	return NewRegistry(tools...), nil
}

// CheckMode refuses a registry that does not fit mode: in read-only mode
// no tool with side effects may exist for the model, whichever way the
// registry was built (a spec file, a session header on resume or fork, an
// eval, code). The error wraps ErrMode and names the tools.
func CheckMode(mode string, reg *Registry) error {
	if mode != ModeReadOnly || reg == nil {
		return nil
	}
	var bad []string
	for _, name := range reg.Names() {
		if reg.tools[name].SideEffects() {
			bad = append(bad, name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	verb := "has"
	if len(bad) > 1 {
		verb = "have"
	}
	return fmt.Errorf("%w: %s %s side effects, and read-only mode offers no tool with side effects (use mode: write, or remove the tool)", ErrMode, strings.Join(bad, ", "), verb)
}
