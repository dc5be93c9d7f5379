package all_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi/modelapitest"
)

// geminiSuite runs the contract for Gemini's API on real answers of
// Google's API: the Vercel AI SDK's recorded fixtures (internal/modelapi/
// gemini/testdata/vercel-ai, see its README: a stream's chunks are kept one
// a line, framed here as Gemini's SSE). The request is gemini-cli's real
// first request (testdata/gemini-cli-0.61.0). Token counts are read off
// each file: input promptTokenCount, output candidatesTokenCount plus
// thoughtsTokenCount, from the last chunk of a stream.
func geminiSuite(t *testing.T) modelapitest.Suite {
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "gemini", "testdata", dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := read("gemini-cli-0.61.0", "turn1.json")
	const vercel = "vercel-ai"
	plain := func(name string, w modelapitest.Want) modelapitest.Capture {
		return modelapitest.Capture{Source: filepath.Join(vercel, name), Body: read(vercel, name), Want: w}
	}
	streamed := func(name string, w modelapitest.Want) modelapitest.Capture {
		var sse []byte
		for _, line := range strings.Split(strings.TrimSpace(string(read(vercel, name))), "\n") {
			sse = append(sse, "data: "+line+"\r\n\r\n"...)
		}
		return modelapitest.Capture{Source: filepath.Join(vercel, name), Body: sse, Stream: true, Want: w}
	}
	const noCapture = "no recorded answer of Google's API for it was found (the corpus has none; the Vercel AI SDK's fixtures have none of this case)"
	return modelapitest.Suite{
		Request: func(stream bool) (string, []byte) {
			if stream {
				return "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", req
			}
			return "/v1beta/models/gemini-2.5-flash:generateContent", req
		},
		Captures: map[modelapitest.Case]modelapitest.Capture{
			modelapitest.StreamedText: streamed("google-text.chunks.txt", modelapitest.Want{Text: `There are **3** "r"s in strawberry.`,
				FinishReason: "stop", InputTokens: 9, OutputTokens: 23 + 185}),
			modelapitest.PlainAnswer: plain("google-text.json", modelapitest.Want{Text: "There are **3** r's in strawberry.",
				FinishReason: "stop", InputTokens: 9, OutputTokens: 28 + 244}),
			modelapitest.ToolCalls: streamed("google-tool-call.chunks.txt", modelapitest.Want{ToolCalls: []string{"weather"},
				FinishReason: "tool_calls", InputTokens: 29, OutputTokens: 15 + 45}),
			modelapitest.Refusal: plain("issue-19758-prompt-block.json", modelapitest.Want{
				Refusal:      "(the provider blocked the answer: promptFeedback.blockReason PROHIBITED_CONTENT",
				FinishReason: "content_filter", InputTokens: 9}),
		},
		Missing: map[modelapitest.Case]string{
			modelapitest.ParallelToolCalls: noCapture + " (the SDK's parallel-call fixture is its own summary, not the API's answer)",
			modelapitest.LengthCut:         noCapture + " (MAX_TOKENS is covered by internal/modelapi/gemini TestFinishAndBlocks)",
			modelapitest.UsageWithCache:    noCapture + " (cachedContentTokenCount is covered by internal/modelapi/gemini's tests)",
			modelapitest.ErrorMidStream:    noCapture + " (an error chunk is covered by internal/modelapi/gemini TestErrors)",
		},
	}
}
