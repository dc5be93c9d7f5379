package all_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi/modelapitest"
)

// geminiSuite runs the contract for Gemini's API. The corpus holds no
// answer of the real Gemini API, so no case has a capture of Google's;
// the two it runs are the answers of agentctl's fake Gemini API that the
// real gemini-cli consumed (internal/modelapi/gemini/testdata/
// gemini-cli-0.61.0, see its README), named as such. The request is
// gemini-cli's real first request.
func geminiSuite(t *testing.T) modelapitest.Suite {
	dir := filepath.Join("..", "gemini", "testdata", "gemini-cli-0.61.0")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := read("turn1.json")
	fake := func(name string, w modelapitest.Want) modelapitest.Capture {
		return modelapitest.Capture{Source: filepath.Join(dir, name) + " (agentctl's fake Gemini API, not Google's)", Body: read(name), Stream: true, Want: w}
	}
	const noCapture = "the corpus has no capture of the real Gemini API"
	return modelapitest.Suite{
		Request: func(stream bool) (string, []byte) {
			if stream {
				return "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", req
			}
			return "/v1beta/models/gemini-2.5-flash:generateContent", req
		},
		Captures: map[modelapitest.Case]modelapitest.Capture{
			modelapitest.ToolCalls: fake("turn1.sse", modelapitest.Want{ToolCalls: []string{"list_directory"}, FinishReason: "tool_calls",
				InputTokens: 1200, CacheReadTokens: 600, OutputTokens: 12}),
			modelapitest.StreamedText: fake("turn2.sse", modelapitest.Want{Text: "The folder holds one file, a.txt.", FinishReason: "stop",
				InputTokens: 1300, CacheReadTokens: 650, OutputTokens: 11}),
		},
		Missing: map[modelapitest.Case]string{
			modelapitest.PlainAnswer:       noCapture,
			modelapitest.ParallelToolCalls: noCapture,
			modelapitest.Refusal:           noCapture + " (blocks are covered by internal/modelapi/gemini TestFinishAndBlocks)",
			modelapitest.LengthCut:         noCapture + " (MAX_TOKENS is covered by internal/modelapi/gemini TestFinishAndBlocks)",
			modelapitest.UsageWithCache:    noCapture + " (the fake's answers carry cachedContentTokenCount: see tool_calls)",
			modelapitest.ErrorMidStream:    noCapture + " (an error chunk is covered by internal/modelapi/gemini TestErrors)",
		},
	}
}
