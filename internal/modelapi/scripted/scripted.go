// Package scripted registers agentctl's scripted model: a spec's
// provider: scripted answers from model.script in process, with no key and
// no network. It has no wire of its own: the proxy serves a script over
// whichever wire the agent speaks (proxy.NewScripted).
package scripted

import (
	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
)

func init() {
	modelapi.Register(modelapi.API{
		Name:     "scripted",
		Provider: "scripted",
		Scripted: true,
		Check: func(m modelapi.Model) []string {
			if m.Script == "" {
				return []string{"script is required for the scripted provider (a YAML file of turns)"}
			}
			return nil
		},
		Client: func(c modelapi.ClientConfig) (provider.Provider, error) {
			s, err := provider.LoadScript(c.Script)
			if err != nil {
				return nil, err
			}
			return provider.NewScripted(s, c.Model), nil
		},
	})
}
