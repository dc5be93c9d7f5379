package agent_test

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/agent"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/tools"
)

// TestConfig: a spec becomes the same runner config whoever asks; the
// registry keeps what a custom tool declares (a hand copy in the tests
// once dropped descriptions and lookups), and the mode check applies to
// specs however they were made.
func TestConfig(t *testing.T) {
	home := t.TempDir()
	sp := testenv.LoadAgent(t, "notify-customer")
	cfg, err := agent.Config(sp, home)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider == nil || cfg.NewProvider == nil || cfg.Agent != nil {
		t.Fatalf("own loop: provider %v, subagent factory set %v, agent host %v", cfg.Provider, cfg.NewProvider != nil, cfg.Agent)
	}
	send, ok := cfg.Tools.Get("send_email")
	if !ok {
		t.Fatalf("send_email missing from %v", cfg.Tools.Names())
	}
	if send.Description() != "Send an e-mail to a customer." || !send.SideEffects() {
		t.Fatalf("send_email: description %q, side effects %v", send.Description(), send.SideEffects())
	}

	ro := *sp
	ro.Mode = tools.ModeReadOnly
	ro.Tools = nil
	if _, err := agent.Config(&ro, home); err == nil || !strings.Contains(err.Error(), "send_email") {
		t.Fatalf("read-only spec with a side-effecting tool: err %v, want a refusal naming send_email", err)
	}
}

// TestProviderNeedsKey: the real providers need a key for their own
// endpoint and say which variable; a base_url may serve without one.
func TestProviderNeedsKey(t *testing.T) {
	for _, tt := range []struct{ provider, env string }{{"openai", "OPENAI_API_KEY"}, {"anthropic", "ANTHROPIC_API_KEY"}} {
		t.Setenv(tt.env, "")
		sp := &spec.Spec{Model: spec.Model{Provider: tt.provider, ID: "m"}}
		if _, err := agent.Provider(sp); err == nil || !strings.Contains(err.Error(), tt.env) {
			t.Errorf("%s without key: err %v, want one naming %s", tt.provider, err, tt.env)
		}
		sp.Model.BaseURL = "http://127.0.0.1:1/v1"
		if _, err := agent.Provider(sp); err != nil {
			t.Errorf("%s at a base_url without key: %v", tt.provider, err)
		}
		if _, err := agent.Backend(sp); err != nil {
			t.Errorf("%s backend: %v", tt.provider, err)
		}
	}
	if _, err := agent.Provider(&spec.Spec{Model: spec.Model{Provider: "bedrock"}}); err == nil || !strings.Contains(err.Error(), "anthropic, openai, scripted") {
		t.Errorf("unknown provider: %v", err)
	}
}
