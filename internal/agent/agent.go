package agent

import (
	"fmt"
	"os"

	"github.com/agentctl/agentctl/internal/agenthost"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/provider/endpoint"
	"github.com/agentctl/agentctl/internal/provider/gemini"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/spec"
)

// Config is the part of a runner config every command derives the same
// way from a spec: the spec with its provider and tool registry (and the
// factory that builds a subagent's provider), or, for an external agent
// (spec agent:), the spec with the backend its proxy serves model calls
// from.
func Config(sp *spec.Spec, home string) (runner.Config, error) {
	if sp.External() {
		b, err := Backend(sp)
		if err != nil {
			return runner.Config{}, err
		}
		return runner.Config{Spec: sp, Agent: &agenthost.Agent{Backend: b}}, nil
	}
	prov, err := Provider(sp)
	if err != nil {
		return runner.Config{}, err
	}
	reg, err := Tools(sp, home)
	if err != nil {
		return runner.Config{}, err
	}
	return runner.Config{Spec: sp, Provider: prov, Tools: reg, NewProvider: Provider}, nil
}

// Provider maps the spec's model section to a provider. Unknown names are
// rejected by spec validation before this point; the error is a guard for
// specs recorded by a newer agentctl.
func Provider(sp *spec.Spec) (provider.Provider, error) {
	m := sp.Model
	switch m.Provider {
	case "scripted":
		return scripted(m, func(s provider.Script) provider.Provider { return provider.NewScripted(s, m.ID) })
	case "openai":
		k, err := apiKey(m)
		if err != nil {
			return nil, err
		}
		return provider.NewOpenAI(provider.OpenAIConfig{BaseURL: m.BaseURL, APIKey: k, MaxRetries: 3})
	case "anthropic":
		k, err := apiKey(m)
		if err != nil {
			return nil, err
		}
		return provider.NewAnthropic(provider.AnthropicConfig{BaseURL: m.BaseURL, APIKey: k, MaxRetries: 3})
	case gemini.Name:
		k, err := apiKey(m)
		if err != nil {
			return nil, err
		}
		return gemini.New(gemini.Config{BaseURL: m.BaseURL, APIKey: k, MaxRetries: 3})
	}
	return nil, unknownProvider(m.Provider)
}

// apiKey reads the model's key from its variable (spec.Model.KeyEnv). A
// key is required where spec.Model.NeedsKey says so.
func apiKey(m spec.Model) (string, error) {
	k := os.Getenv(m.KeyEnv())
	if k == "" && m.NeedsKey() {
		def := spec.Model{Provider: m.Provider}.KeyEnv()
		return "", fmt.Errorf("model %s: no API key; set %s (or the variable named by model.api_key_env), or use provider: scripted to run without a key", m.ID, def)
	}
	return k, nil
}

// Backend is the model backend an external agent's proxy serves from: the
// spec's scripted model over the wire, or the real provider upstream (the
// agent's SDK sends the key, which the proxy forwards and never records).
func Backend(sp *spec.Spec) (proxy.Backend, error) {
	m := sp.Model
	switch m.Provider {
	case "scripted":
		return scripted(m, func(s provider.Script) proxy.Backend { return proxy.NewScripted(s, m.ID) })
	case "openai", "anthropic", gemini.Name:
		return proxy.NewUpstream(endpoint.Base(m.Provider, m.BaseURL), nil)
	}
	return nil, unknownProvider(m.Provider)
}

// scripted serves the model's script, in process (a provider) or over the
// wire (a backend).
func scripted[T any](m spec.Model, serve func(provider.Script) T) (T, error) {
	s, err := provider.LoadScript(m.Script)
	if err != nil {
		var none T
		return none, err
	}
	return serve(s), nil
}

func unknownProvider(name string) error {
	return fmt.Errorf("model.provider %q is not one this agentctl knows (scripted, openai, anthropic, gemini)", name)
}
