package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi"
)

// A model API registered by a test, as a new API's package registers its
// own: the spec must accept it, its checks and its key variable, with no
// change to this package (before the registry, a switch here listed
// scripted, openai and anthropic, and rejected it).
func init() {
	modelapi.Register(modelapi.API{
		Name: "spec-test-api", Provider: "spectest", KeyEnv: "SPECTEST_API_KEY", BaseURL: "https://spectest.invalid/v1",
		Check: func(m modelapi.Model) []string {
			if strings.HasPrefix(m.ID, "retired-") {
				return []string{"id " + m.ID + " is retired"}
			}
			return nil
		},
		Client: func(modelapi.ClientConfig) (modelapi.Provider, error) {
			return nil, errors.New("spectest: no client in spec tests")
		},
		Env: modelapi.Env{BaseURL: []string{"SPECTEST_BASE_URL"}, BaseSuffix: "/v9", Key: []string{"SPECTEST_API_KEY"}},
	})
}

func TestModelProviderFromRegistry(t *testing.T) {
	for _, tc := range []struct {
		name, model, wantErr string
		wantKeyEnv           string
	}{
		{"registered", "{provider: spectest, id: m1}", "", "SPECTEST_API_KEY"},
		{"own key variable", "{provider: spectest, id: m1, api_key_env: MY_KEY}", "", "MY_KEY"},
		{"its own check", "{provider: spectest, id: retired-1}", `:2: model.id retired-1 is retired`, ""},
		{"misspelt", "{provider: gemnii, id: m1}", `:2: model.provider "gemnii" is not one of anthropic, openai, scripted, spectest`, ""},
		{"missing", "{id: m1}", `model.provider is required: anthropic, openai, scripted, spectest`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "agent.yaml")
			os.WriteFile(p, []byte("name: x\nmodel: "+tc.model+"\nprompt: hi\n"), 0o644)
			sp, err := Load(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := sp.Model.KeyEnv(); got != tc.wantKeyEnv {
				t.Errorf("KeyEnv() = %q, want %q", got, tc.wantKeyEnv)
			}
			if !sp.Model.NeedsKey() {
				t.Errorf("NeedsKey() = false for a provider with a key variable and no base_url")
			}
		})
	}
}

// TestAgentEnvFromRegistry: an external agent is pointed at the proxy
// through every registered API's variables, and a spec may not set them
// (before, two fixed lists named OpenAI's and Anthropic's only).
func TestAgentEnvFromRegistry(t *testing.T) {
	vars := AgentEnv{Base: "http://127.0.0.1:1/s/a", SessionID: "a", Key: "k"}.Vars()
	for _, want := range []string{"SPECTEST_BASE_URL=http://127.0.0.1:1/s/a/v9", "SPECTEST_API_KEY=k", "OPENAI_BASE_URL=http://127.0.0.1:1/s/a/v1", "ANTHROPIC_BASE_URL=http://127.0.0.1:1/s/a"} {
		if !slices.Contains(vars, want) {
			t.Errorf("AgentEnv.Vars() = %v, want %s among them", vars, want)
		}
	}
	p := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(p, []byte("name: x\nmodel: {provider: scripted, id: s, script: m.yaml}\nagent:\n  command: [node]\n  env: {SPECTEST_BASE_URL: http://elsewhere}\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "SPECTEST_BASE_URL") {
		t.Errorf("Load of a spec setting SPECTEST_BASE_URL = %v, want it refused", err)
	}
}
