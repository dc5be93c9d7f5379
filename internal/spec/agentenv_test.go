package spec

import (
	"slices"
	"strings"
	"testing"
)

// TestReservedEnvIsAgentEnv: the names a spec's agent.env may not set are
// the ones AgentEnv sets (the model default aside, which a spec may
// change), so the rule and the variables cannot drift apart.
func TestReservedEnvIsAgentEnv(t *testing.T) {
	var names []string
	for _, kv := range (AgentEnv{Base: "http://x/s/1", SessionID: "1", Key: "k", Model: "m", Prompt: "p"}).Vars() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "OPENAI_DEFAULT_MODEL" { // a default a spec may change
			names = append(names, k)
		}
	}
	slices.Sort(names)
	want := slices.Clone(ReservedEnv())
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("AgentEnv sets %v, ReservedEnv is %v", names, want)
	}
}
