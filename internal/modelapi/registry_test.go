package modelapi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi"
	_ "github.com/agentctl/agentctl/internal/modelapi/all"
)

func TestLookupUnknownNamesKnown(t *testing.T) {
	_, err := modelapi.Lookup("gemnii")
	var ue *modelapi.UnknownError
	if !errors.As(err, &ue) {
		t.Fatalf("modelapi.Lookup(gemnii) = %v, want an *modelapi.UnknownError", err)
	}
	if !strings.Contains(err.Error(), `"gemnii"`) {
		t.Errorf("modelapi.Lookup(gemnii) error %q does not name the asked name", err)
	}
	for _, p := range modelapi.Providers() {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("modelapi.Lookup(gemnii) error %q does not name known provider %s", err, p)
		}
	}
	if _, _, err := modelapi.LookupWire("gemnii"); !errors.As(err, &ue) {
		t.Errorf("modelapi.LookupWire(gemnii) = %v, want an *modelapi.UnknownError", err)
	}
}

// TestRegistered: the registry holds the APIs agentctl has always spoken,
// each under the names logs and specs already carry.
func TestRegistered(t *testing.T) {
	for _, tc := range []struct{ provider, client string }{
		{"openai", "chat_completions"}, {"anthropic", "messages"}, {"scripted", "scripted"},
	} {
		a, err := modelapi.Lookup(tc.provider)
		if err != nil || a.Name != tc.client {
			t.Errorf("Lookup(%q) = %q, %v, want %q", tc.provider, a.Name, err, tc.client)
		}
	}
	for _, tc := range []struct{ api, provider string }{
		{"chat_completions", "openai"}, {"responses", "openai"}, {"messages", "anthropic"},
		{"count_tokens", "anthropic"}, {"models", "openai"},
	} {
		a, _, err := modelapi.LookupWire(tc.api)
		if err != nil || a.Provider != tc.provider {
			t.Errorf("LookupWire(%q) = %q, %v, want provider %q", tc.api, a.Provider, err, tc.provider)
		}
	}
}

func init() {
	modelapi.Register(modelapi.API{Name: "registry-test-api", Provider: "registrytest", GenAIProvider: "test.registry"})
}

// TestGenAIProviderName: the OTLP exporters name a provider as its API's
// GenAIProvider says, else by its own name.
func TestGenAIProviderName(t *testing.T) {
	for _, tc := range []struct{ provider, want string }{
		{"registrytest", "test.registry"}, {"openai", "openai"}, {"anthropic", "anthropic"}, {"unknown", "unknown"},
	} {
		if got := modelapi.GenAIProviderName(tc.provider); got != tc.want {
			t.Errorf("GenAIProviderName(%q) = %q, want %q", tc.provider, got, tc.want)
		}
	}
}
