package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// cassetteBodies returns the recorded response bodies of a VCR cassette in
// the corpus copy (pydantic-ai's body.string or go-vcr's body).
func cassetteBodies(t *testing.T, rel string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Interactions []struct {
			Response struct {
				Body yaml.Node `yaml:"body"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, in := range c.Interactions {
		var s string
		if in.Response.Body.Kind == yaml.MappingNode {
			var m struct {
				String string `yaml:"string"`
			}
			in.Response.Body.Decode(&m)
			s = m.String
		} else {
			in.Response.Body.Decode(&s)
		}
		out = append(out, []byte(s))
	}
	return out
}

// replayServer serves the bodies in order, as the provider did.
func replayServer(t *testing.T, bodies [][]byte) *httptest.Server {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(bodies) {
			http.Error(w, `{"error":{"message":"no more recorded turns","type":"invalid_request_error"}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(bodies[i])
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestProvidersRecordSameEvents runs the real loop against the real
// recorded two-turn tool loops of OpenAI and Anthropic and checks both are
// recorded as the same sequence of events with the captured values.
func TestProvidersRecordSameEvents(t *testing.T) {
	tests := []struct {
		name     string
		cassette string
		tool     string
		build    func(url string) (provider.Provider, error)
	}{
		{
			name:     "openai",
			cassette: "sse/openai-chat-completions/pydantic__pydantic-ai/test_run_stream_sync_streams_real_model.yaml",
			tool:     "get_capital",
			build: func(url string) (provider.Provider, error) {
				return provider.NewOpenAI(provider.OpenAIConfig{BaseURL: url + "/v1", APIKey: "k", MaxRetries: -1})
			},
		},
		{
			name:     "anthropic",
			cassette: "sse/anthropic-messages/anthropics__anthropic-sdk-go/cassettes/tool_runner_streaming_all.yaml",
			tool:     "get_weather",
			build: func(url string) (provider.Provider, error) {
				return provider.NewAnthropic(provider.AnthropicConfig{BaseURL: url, APIKey: "k", MaxRetries: -1})
			},
		},
	}
	var shapes [][]session.Kind
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := replayServer(t, cassetteBodies(t, tt.cassette))
			prov, err := tt.build(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			script := filepath.Join(dir, "tool.sh")
			os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho 'the answer from the tool'\n"), 0o755)
			sp := &spec.Spec{Name: tt.name, Model: spec.Model{Provider: tt.name, ID: "recorded", MaxTokens: 512},
				Prompt: "use the tool", Mode: "write", MaxTurns: 5, Compaction: spec.Compaction{Window: 1 << 20, Threshold: 0.75}}
			reg := tools.NewRegistry(tools.NewCommand(tools.CommandDef{Name: tt.tool, Description: "recorded tool",
				Parameters: json.RawMessage(`{"type":"object"}`), Command: []string{script}}))
			store := recorder.Store{Root: filepath.Join(dir, "home")}
			res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: prov, Tools: reg})
			if err != nil || res.Status != session.StatusDone {
				t.Fatalf("Start = %+v, %v", res, err)
			}
			evs, _, err := store.Load(res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []session.Kind
			var calls []session.ToolCall
			var results []session.Event
			var usage []session.Event
			for _, e := range evs {
				kinds = append(kinds, e.Kind)
				switch e.Kind {
				case session.KindAssistantMessage:
					calls = append(calls, e.ToolCalls...)
				case session.KindToolResult:
					results = append(results, e)
				case session.KindModelCall:
					usage = append(usage, e)
				}
			}
			shapes = append(shapes, kinds)
			if len(calls) != 1 || calls[0].Name != tt.tool || calls[0].ID == "" || !json.Valid(calls[0].Args) {
				t.Fatalf("tool calls = %+v", calls)
			}
			if len(results) != 1 || results[0].CallID != calls[0].ID || results[0].Status != session.ResultOK {
				t.Fatalf("tool results = %+v", results)
			}
			if len(usage) != 2 || usage[0].InputTokens == 0 || usage[0].OutputTokens == 0 || usage[0].FinishReason != provider.FinishToolCalls || usage[1].FinishReason != provider.FinishStop {
				t.Fatalf("model calls = %+v", usage)
			}
		})
	}
	if len(shapes) == 2 {
		a, b := shapes[0], shapes[1]
		if len(a) != len(b) {
			t.Fatalf("event shapes differ:\nopenai    %v\nanthropic %v", a, b)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("event %d differs: openai %s, anthropic %s", i+1, a[i], b[i])
			}
		}
	}
}
