package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// TestRefusedKeyHintNamesItsVariable: a refused key's hint names the
// variable the key was read from (a spec's api_key_env), not only the
// provider's usual one, for both clients.
func TestRefusedKeyHintNamesItsVariable(t *testing.T) {
	openAI401 := jsonReply(401, []byte(`{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	anthropic401 := jsonReply(401, []byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	for _, tc := range []struct {
		name   string
		make   func(base, keyEnv string) (Provider, error)
		reply  reply
		keyEnv string
		want   string
	}{
		{"openai, own variable", func(b, k string) (Provider, error) {
			return NewOpenAI(OpenAIConfig{BaseURL: b, APIKey: "sk-test", KeyEnv: k, MaxRetries: -1})
		}, openAI401, "TEAM_OPENAI_KEY", "check the API key in TEAM_OPENAI_KEY"},
		{"openai, default", func(b, k string) (Provider, error) {
			return NewOpenAI(OpenAIConfig{BaseURL: b, APIKey: "sk-test", KeyEnv: k, MaxRetries: -1})
		}, openAI401, "", "check the API key in " + OpenAIKeyEnv},
		{"anthropic, own variable", func(b, k string) (Provider, error) {
			return NewAnthropic(AnthropicConfig{BaseURL: b, APIKey: "sk-test", KeyEnv: k, MaxRetries: -1})
		}, anthropic401, "TEAM_CLAUDE_KEY", "check the API key in TEAM_CLAUDE_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, tc.reply)
			p, err := tc.make(srv.URL, tc.keyEnv)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(context.Background(), Request{Model: "m", Messages: []session.Message{{Role: session.RoleUser, Content: "hi"}}}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Complete = %v, want the hint %q", err, tc.want)
			}
		})
	}
}
