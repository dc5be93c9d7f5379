package cli

import (
	"fmt"

	"github.com/agentctl/agentctl/proxy"
	"github.com/agentctl/agentctl/runner"
	"github.com/agentctl/agentctl/runner/spec"
)

// Upstream roots of the providers, for an external agent's spec that names
// no model.base_url.
const (
	openAIRoot    = "https://api.openai.com/v1"
	anthropicRoot = "https://api.anthropic.com"
)

// externalConfig is the run of an external agent (spec agent:): no tools
// and no provider of agentctl's own loop, but the backend the proxy serves
// the agent's model calls from: the spec's scripted model over the wire,
// or the real provider upstream (the agent's SDK sends the key, which the
// proxy forwards and never records).
func externalConfig(sp *spec.Spec) (runner.Config, error) {
	b, err := externalBackend(sp)
	if err != nil {
		return runner.Config{}, err
	}
	return runner.Config{Spec: sp, Backend: b}, nil
}

func externalBackend(sp *spec.Spec) (proxy.Backend, error) {
	m := sp.Model
	switch m.Provider {
	case "scripted":
		script, err := spec.LoadScript(m.Script)
		if err != nil {
			return nil, err
		}
		return proxy.NewScripted(script, m.ID), nil
	case "openai", "anthropic":
		base := m.BaseURL
		if base == "" {
			base = openAIRoot
			if m.Provider == "anthropic" {
				base = anthropicRoot
			}
		}
		return proxy.NewUpstream(base, nil)
	}
	return nil, fmt.Errorf("model.provider %q is not one this agentctl knows (scripted, openai, anthropic)", m.Provider)
}
