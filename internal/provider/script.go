package provider

import (
	"fmt"
	"os"

	"github.com/agentctl/agentctl/internal/spec/strict"
)

// LoadScript reads a scripted model's YAML (turns, summary) strictly, with
// the spec loader's checks (unknown keys, alias budget). It lives here, not
// in spec, so that spec need not import provider and, through it, the
// vendor SDKs.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("read model script: %w", err)
	}
	var s Script
	if _, err := strict.Decode(path, data, &s); err != nil {
		return Script{}, err
	}
	if len(s.Turns) == 0 {
		return Script{}, &strict.Error{File: path, Msg: "the script has no turns (add a turns: list)"}
	}
	for i, t := range s.Threads {
		if t.System == "" {
			// An empty System would match every call and silence the turns.
			return Script{}, &strict.Error{File: path, Msg: fmt.Sprintf("threads[%d]: system is required (text the side conversation's system prompt contains)", i)}
		}
		if len(t.Turns) == 0 {
			return Script{}, &strict.Error{File: path, Msg: fmt.Sprintf("threads[%d] (system %q) has no turns (add a turns: list)", i, t.System)}
		}
	}
	return s, nil
}
