package spec

import (
	"fmt"
	"os"

	"github.com/agentctl/agentctl/runner/provider"
)

// LoadScript reads a scripted model's YAML (turns, summary) strictly.
func LoadScript(path string) (provider.Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return provider.Script{}, fmt.Errorf("read model script: %w", err)
	}
	var s provider.Script
	if _, err := DecodeStrict(path, data, &s); err != nil {
		return provider.Script{}, err
	}
	if len(s.Turns) == 0 {
		return provider.Script{}, &Error{File: path, Msg: "the script has no turns (add a turns: list)"}
	}
	return s, nil
}
