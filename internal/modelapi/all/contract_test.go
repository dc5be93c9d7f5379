package all_test

import (
	"encoding/json"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi"
	_ "github.com/agentctl/agentctl/internal/modelapi/all"
	"github.com/agentctl/agentctl/internal/modelapi/modelapitest"
	"github.com/agentctl/agentctl/internal/testenv/corpus"
)

// TestContract runs the contract suite (modelapitest) for every
// registered API, from its captures below. A registered API without an
// entry fails: adding an API is adding its captures here.
func TestContract(t *testing.T) {
	suites := map[string]func(t *testing.T) modelapitest.Suite{
		"chat_completions": chatSuite,
		"responses":        responsesSuite,
		"messages":         messagesSuite,
		"scripted":         func(*testing.T) modelapitest.Suite { return modelapitest.Suite{} },
	}
	for _, api := range modelapi.All() {
		t.Run(api.Name, func(t *testing.T) {
			suite, ok := suites[api.Name]
			if !ok {
				t.Fatalf("API %s has no contract captures: add its suite to TestContract", api.Name)
			}
			modelapitest.Run(t, api, suite(t))
		})
	}
}

func body(t *testing.T, v map[string]any, stream bool) []byte {
	v["stream"] = stream
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	oaDir = "sse/openai-chat-completions/openai__openai-python/"
	anDir = "sse/anthropic-messages/anthropics__anthropic-sdk-python/"
)

func sse(t *testing.T, rel string, w modelapitest.Want) modelapitest.Capture {
	return modelapitest.Capture{Source: rel, Body: corpus.File(t, rel), Stream: true, Want: w}
}

func cassette(t *testing.T, rel string, i int, stream bool, w modelapitest.Want) modelapitest.Capture {
	b, _ := corpus.CassetteBody(t, rel, i)
	return modelapitest.Capture{Source: rel, Body: b, Stream: stream, Want: w}
}

func chatSuite(t *testing.T) modelapitest.Suite {
	return modelapitest.Suite{
		Request: func(stream bool) (string, []byte) {
			return "/v1/chat/completions", body(t, map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "What's the weather in New York?"}}}, stream)
		},
		Captures: map[modelapitest.Case]modelapitest.Capture{
			modelapitest.StreamedText: sse(t, oaDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin",
				modelapitest.Want{FinishReason: "stop", InputTokens: 14, OutputTokens: 30}),
			modelapitest.ToolCalls: sse(t, oaDir+"2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin",
				modelapitest.Want{ToolCalls: []string{"get_weather"}, FinishReason: "tool_calls", InputTokens: 44, OutputTokens: 16}),
			modelapitest.ParallelToolCalls: sse(t, oaDir+"f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin",
				modelapitest.Want{ToolCalls: []string{"GetWeatherArgs", "get_stock_price"}, FinishReason: "tool_calls", InputTokens: 149, OutputTokens: 60}),
			modelapitest.Refusal: sse(t, oaDir+"ca015b8b1ebaac98be76f2f855f8694b77f608de5e2a3799276be06ce3fbb15b.bin",
				modelapitest.Want{Refusal: "I'm", FinishReason: "stop", InputTokens: 17, OutputTokens: 12}),
			modelapitest.LengthCut: sse(t, oaDir+"69363a555f8ea9b6eee0bb022af0afcd22d4f0e85418ab38ee24d2a570a84ff0.bin",
				modelapitest.Want{FinishReason: "length", InputTokens: 17, OutputTokens: 1}),
		},
		Missing: map[modelapitest.Case]string{
			modelapitest.PlainAnswer:    "the corpus has no non-streamed Chat Completions answer",
			modelapitest.UsageWithCache: "no Chat Completions capture in the corpus has cached_tokens above 0",
			modelapitest.ErrorMidStream: "the corpus has no Chat Completions stream with an error chunk",
		},
	}
}

func responsesSuite(t *testing.T) modelapitest.Suite {
	const rel = "sse/openai-responses/pydantic__pydantic-ai/test_openai_responses_phase_streamed_on_part_start.yaml"
	return modelapitest.Suite{
		Request: func(stream bool) (string, []byte) {
			return "/v1/responses", body(t, map[string]any{"model": "gpt-5.5", "input": "What is the capital of France?"}, stream)
		},
		Captures: map[modelapitest.Case]modelapitest.Capture{
			modelapitest.ToolCalls:    cassette(t, rel, 0, true, modelapitest.Want{ToolCalls: []string{"get_capital"}, FinishReason: "tool_calls", InputTokens: 63, OutputTokens: 69}),
			modelapitest.StreamedText: cassette(t, rel, 1, true, modelapitest.Want{FinishReason: "stop", InputTokens: 147, OutputTokens: 16}),
		},
		Missing: map[modelapitest.Case]string{
			modelapitest.PlainAnswer:       "the corpus has no non-streamed Responses answer",
			modelapitest.ParallelToolCalls: "the corpus's Responses capture calls one tool per turn",
			modelapitest.Refusal:           "the corpus has no Responses refusal",
			modelapitest.LengthCut:         "the corpus has no Responses answer cut at max_output_tokens (response.incomplete)",
			modelapitest.UsageWithCache:    "the corpus's Responses capture has cached_tokens 0",
			modelapitest.ErrorMidStream:    "the corpus has no Responses stream ending in response.failed or an error event",
		},
	}
}

func messagesSuite(t *testing.T) modelapitest.Suite {
	const goDir = "sse/anthropic-messages/anthropics__anthropic-sdk-go/cassettes/"
	return modelapitest.Suite{
		Request: func(stream bool) (string, []byte) {
			return "/v1/messages", body(t, map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024,
				"messages": []any{map[string]any{"role": "user", "content": "What's the weather in San Francisco?"}}}, stream)
		},
		Captures: map[modelapitest.Case]modelapitest.Capture{
			modelapitest.StreamedText: sse(t, anDir+"basic_response.txt", modelapitest.Want{Text: "Hello there!", FinishReason: "stop", InputTokens: 11, OutputTokens: 6}),
			modelapitest.PlainAnswer: cassette(t, goDir+"tool_runner_basic.yaml", 0, false,
				modelapitest.Want{ToolCalls: []string{"get_weather"}, FinishReason: "tool_calls", InputTokens: 402, OutputTokens: 89}),
			modelapitest.ToolCalls: sse(t, anDir+"tool_use_response.txt", modelapitest.Want{ToolCalls: []string{"get_weather"}, FinishReason: "tool_calls", InputTokens: 377, OutputTokens: 65}),
			modelapitest.LengthCut: sse(t, anDir+"incomplete_partial_json_response.txt", modelapitest.Want{ToolCalls: []string{"make_file"}, FinishReason: "length", InputTokens: 450, OutputTokens: 124}),
			modelapitest.UsageWithCache: cassette(t, "sse/anthropic-messages/pydantic__pydantic-ai/test_anthropic_compaction_usage_with_cache_streaming.yaml", 0, true,
				modelapitest.Want{FinishReason: "stop", InputTokens: 100 + 55096 + 181, CacheReadTokens: 55096, OutputTokens: 83 + 8}),
		},
		Missing: map[modelapitest.Case]string{
			modelapitest.ParallelToolCalls: "no Messages capture in the corpus has two tool_use blocks in one turn",
			modelapitest.Refusal:           "the corpus has no Messages answer with stop_reason refusal",
			modelapitest.ErrorMidStream:    "the corpus has no Messages stream with an event: error (its one error capture is an HTTP 400, sse/errors)",
		},
	}
}
