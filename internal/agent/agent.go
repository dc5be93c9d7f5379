package agent

import (
	"fmt"
	"os"

	"github.com/agentctl/agentctl/internal/agenthost"
	"github.com/agentctl/agentctl/internal/modelapi"
	// A program that runs specs speaks every registered model API.
	_ "github.com/agentctl/agentctl/internal/modelapi/all"
	"github.com/agentctl/agentctl/internal/provider"
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

// Provider makes the client of the spec's model section: its registered
// model API's (modelapi.Lookup). An unknown provider is rejected by spec
// validation before this point; the error is a guard for specs recorded by
// a newer agentctl, and names the known ones.
func Provider(sp *spec.Spec) (provider.Provider, error) {
	m := sp.Model
	api, err := m.API()
	if err != nil {
		return nil, fmt.Errorf("model.provider: %w", err)
	}
	k, err := apiKey(m)
	if err != nil {
		return nil, err
	}
	return api.Client(modelapi.ClientConfig{Model: m.ID, Script: m.Script, BaseURL: m.BaseURL, APIKey: k, KeyEnv: m.KeyEnv(), MaxRetries: 3})
}

// apiKey reads the model's key from its variable (spec.Model.KeyEnv). A
// key is required where spec.Model.NeedsKey says so.
func apiKey(m spec.Model) (string, error) {
	if m.KeyEnv() == "" {
		return "", nil
	}
	k := os.Getenv(m.KeyEnv())
	if k == "" && m.NeedsKey() {
		def := spec.Model{Provider: m.Provider}.KeyEnv()
		return "", fmt.Errorf("model %s: no API key; set %s (or the variable named by model.api_key_env), or use provider: scripted to run without a key", m.ID, def)
	}
	return k, nil
}

// Backend is the model backend an external agent's proxy serves from: the
// spec's scripted model over the wire, or the real provider upstream at
// its base URL (the agent's SDK sends the key, which the proxy forwards
// and never records).
func Backend(sp *spec.Spec) (proxy.Backend, error) {
	m := sp.Model
	api, err := m.API()
	if err != nil {
		return nil, fmt.Errorf("model.provider: %w", err)
	}
	if api.Scripted {
		s, err := provider.LoadScript(m.Script)
		if err != nil {
			return nil, err
		}
		return proxy.NewScripted(s, m.ID), nil
	}
	return proxy.NewUpstream(modelapi.Base(m.Provider, m.BaseURL), nil)
}
