package provider

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/pricing"
)

var update = flag.Bool("update", false, "rewrite the derived streams in testdata/derived from their recipes")

const (
	refusalFile    = openAIDir + "ca015b8b1ebaac98be76f2f855f8694b77f608de5e2a3799276be06ce3fbb15b.bin"
	lengthFile     = openAIDir + "69363a555f8ea9b6eee0bb022af0afcd22d4f0e85418ab38ee24d2a570a84ff0.bin"
	cacheCassette  = "sse/anthropic-messages/pydantic__pydantic-ai/test_anthropic_compaction_usage_with_cache_streaming.yaml"
	overloadedJSON = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
)

// derived is a stream built from a real one, for a case no capture shows:
// the recipe cuts the recorded events and appends an error event in the
// shape Anthropic documents for a mid-stream failure after a 200
// (FORMATS.md §1.3). Each file's name says what was done to which capture.
type derived struct {
	name   string
	source func(t *testing.T) []byte
	// keep reports whether the stream is cut after this event.
	cutAfter func(event string) bool
}

var derivedStreams = []derived{
	{
		name:     "anthropic-compaction-cache.derived-cut-after-first-text-then-overloaded_error.sse",
		source:   func(t *testing.T) []byte { b, _ := cassetteBody(t, cacheCassette, 0); return b },
		cutAfter: func(ev string) bool { return strings.Contains(ev, `"type":"text_delta"`) },
	},
	{
		name:     "anthropic-compaction-cache.derived-cut-after-message_start-then-overloaded_error.sse",
		source:   func(t *testing.T) []byte { b, _ := cassetteBody(t, cacheCassette, 0); return b },
		cutAfter: func(ev string) bool { return strings.HasPrefix(ev, "event: message_start") },
	},
}

// build applies the recipe: the capture's events up to and including the
// first one cutAfter matches, then `event: error` with overloaded_error.
func (d derived) build(t *testing.T) []byte {
	t.Helper()
	var out bytes.Buffer
	for ev := range strings.SplitSeq(string(d.source(t)), "\n\n") {
		if strings.TrimSpace(ev) == "" {
			continue
		}
		out.WriteString(ev + "\n\n")
		if d.cutAfter(ev) {
			out.WriteString("event: error\ndata: " + overloadedJSON + "\n\n")
			return out.Bytes()
		}
	}
	t.Fatalf("%s: the recipe's cut point is not in the capture", d.name)
	return nil
}

func derivedPath(name string) string { return filepath.Join("..", "..", "testdata", "derived", name) }

func derivedFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(derivedPath(name))
	if err != nil {
		t.Fatalf("read derived stream (go test ./internal/provider -run TestDerivedStreams -update writes it): %v", err)
	}
	return b
}

// TestDerivedStreams proves each committed derived stream is its recipe
// applied to the recorded capture, byte for byte.
func TestDerivedStreams(t *testing.T) {
	for _, d := range derivedStreams {
		want := d.build(t)
		if *update {
			if err := os.WriteFile(derivedPath(d.name), want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := derivedFile(t, d.name); !bytes.Equal(got, want) {
			t.Errorf("%s differs from its recipe applied to the capture (rerun with -update)", d.name)
		}
	}
}

// TestOpenAIRefusal: the recorded refusal stream (delta.refusal chunks,
// content null) is a refusal with its text, not an empty answer.
func TestOpenAIRefusal(t *testing.T) {
	srv := newFakeServer(t, sseReply(corpusFile(t, refusalFile)))
	p := newTestOpenAI(t, srv, 0)
	var streamed strings.Builder
	got, err := p.Complete(context.Background(), userReq("gpt-4o"), func(d string) { streamed.WriteString(d) })
	if err != nil {
		t.Fatal(err)
	}
	if want := "I'm sorry, but I can't assist with that request."; got.Refusal != want || got.Text != "" {
		t.Errorf("Refusal, Text = %q, %q; want %q, empty", got.Refusal, got.Text, want)
	}
	if got.ResponseID != "chatcmpl-9tXmMGFPkLS0t0u0895fzYOblnfYa" || got.InputTokens != 17 || got.OutputTokens != 12 || got.FinishReason != FinishStop {
		t.Errorf("Response = %+v, want id chatcmpl-9tXmMGFPkLS0t0u0895fzYOblnfYa, usage 17/12, finish stop", got)
	}
	if streamed.Len() != 0 {
		t.Errorf("onText saw %q: a refusal is not answer text", streamed.String())
	}
}

// TestOpenAILength: the recorded stream cut by max_tokens=1 says length.
func TestOpenAILength(t *testing.T) {
	srv := newFakeServer(t, sseReply(corpusFile(t, lengthFile)))
	got, err := newTestOpenAI(t, srv, 0).Complete(context.Background(), userReq("gpt-4o"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.FinishReason != FinishLength || got.Text != `{"` || got.OutputTokens != 1 || got.Refusal != "" {
		t.Errorf("Response = %+v, want finish length, text {\", 1 output token", got)
	}
}

// TestAnthropicCacheUsage: the recorded claude-sonnet-4-6 turn read 55,096
// prompt tokens from the cache (message_start) and compacted server-side
// (usage.iterations in message_delta). The billed input counts the cache
// reads and every iteration; each part is priced at its own rate.
func TestAnthropicCacheUsage(t *testing.T) {
	body, code := cassetteBody(t, cacheCassette, 0)
	if code != 200 {
		t.Fatalf("code %d", code)
	}
	srv := newFakeServer(t, sseReply(body))
	got, err := newTestAnthropic(t, srv, 0).Complete(context.Background(), userReq("claude-sonnet-4-6"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// iterations: compaction {in 100, cache_read 55096, out 83}, message {in 181, out 8}.
	const in, read, out = 100 + 55096 + 181, 55096, 83 + 8
	if got.InputTokens != in || got.CacheReadTokens != read || got.CacheCreationTokens != 0 || got.OutputTokens != out {
		t.Errorf("usage = in %d (cache read %d, write %d) out %d; want in %d (read %d, write 0) out %d",
			got.InputTokens, got.CacheReadTokens, got.CacheCreationTokens, got.OutputTokens, in, read, out)
	}
	// $3/M uncached input, $0.30/M cache reads, $15/M output.
	wantCost := (281*3.0 + 55096*0.30 + 91*15.0) / 1e6
	if math.Abs(got.CostUSD-wantCost) > 1e-12 {
		t.Errorf("CostUSD = %v, want %v", got.CostUSD, wantCost)
	}
	if naive := pricing.Cost("claude-sonnet-4-6", 181, 8); got.CostUSD < 10*naive {
		t.Errorf("CostUSD = %v is not far above the top-level-only %v", got.CostUSD, naive)
	}
	if got.Text != "Hello! 👋" || got.ResponseID != "msg_011CduoCRono7pFKoTWpPAia" {
		t.Errorf("Text, ResponseID = %q, %q", got.Text, got.ResponseID)
	}
}

// TestAnthropicErrorAfterText: a stream that dies with overloaded_error
// after text streamed keeps the text and the usage so far, reports the
// provider's own error type with no HTTP status made up, and is not
// retried (the caller saw the text).
func TestAnthropicErrorAfterText(t *testing.T) {
	srv := newFakeServer(t, sseReply(derivedFile(t, derivedStreams[0].name)))
	got, err := newTestAnthropic(t, srv, 2).Complete(context.Background(), userReq("claude-sonnet-4-6"), nil)
	checkError(t, err, &Error{Provider: "anthropic", Type: "overloaded_error", Message: "Overloaded", Retryable: true, InStream: true})
	if got.Text != "Hello!" || got.InputTokens != 100+55096 || got.CacheReadTokens != 55096 || len(got.Attempts) != 0 {
		t.Errorf("partial = text %q, in %d, read %d, %d attempts; want %q, %d, 55096, 0", got.Text, got.InputTokens, got.CacheReadTokens, len(got.Attempts), "Hello!", 100+55096)
	}
	if n := srv.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// TestRetriesAreReported: every failed try is in Response.Attempts, with
// its error, whether the call then succeeds or not.
func TestRetriesAreReported(t *testing.T) {
	overloaded := jsonReply(529, []byte(overloadedJSON), "Retry-After-Ms", "1")
	before := func(t *testing.T) reply { return sseReply(derivedFile(t, derivedStreams[1].name)) }
	basic := func(t *testing.T) reply { return sseReply(corpusFile(t, anthPyDir+"basic_response.txt")) }
	tests := []struct {
		name     string
		replies  func(t *testing.T) []reply
		wantErr  bool
		attempts []Error
	}{
		{name: "529 then success", replies: func(t *testing.T) []reply { return []reply{overloaded, basic(t)} },
			attempts: []Error{{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true}}},
		{name: "in-stream overloaded before text twice, then success", replies: func(t *testing.T) []reply { return []reply{before(t), before(t), basic(t)} },
			attempts: []Error{
				{Provider: "anthropic", Type: "overloaded_error", Message: "Overloaded", Retryable: true, InStream: true},
				{Provider: "anthropic", Type: "overloaded_error", Message: "Overloaded", Retryable: true, InStream: true}}},
		{name: "529 until the retries run out", replies: func(t *testing.T) []reply { return []reply{overloaded} }, wantErr: true,
			attempts: []Error{
				{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true},
				{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.replies(t)...)
			got, err := newTestAnthropic(t, srv, 2).Complete(context.Background(), userReq("claude-sonnet-4-6"), nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(got.Attempts) != len(tt.attempts) {
				t.Fatalf("%d attempts reported, want %d: %+v", len(got.Attempts), len(tt.attempts), got.Attempts)
			}
			for i, a := range got.Attempts {
				w := tt.attempts[i]
				if e := a.Err; e.Status != w.Status || e.Type != w.Type || e.Message != w.Message || e.InStream != w.InStream || a.Latency <= 0 {
					t.Errorf("attempt %d = %+v (latency %v), want %+v", i+1, *e, a.Latency, w)
				}
			}
			if !tt.wantErr && got.Text != "Hello there!" {
				t.Errorf("Text = %q", got.Text)
			}
		})
	}
}

// TestEmptyStreamIsAnError: a 200 whose body holds no stream event (here
// a recorded cassette served whole instead of its SSE body) is not an
// empty answer.
func TestEmptyStreamIsAnError(t *testing.T) {
	for _, prov := range []string{"openai", "anthropic"} {
		srv := newFakeServer(t, sseReply(corpusFile(t, cacheCassette)))
		var p Provider
		if prov == "openai" {
			p = newTestOpenAI(t, srv, 0)
		} else {
			p = newTestAnthropic(t, srv, 0)
		}
		_, err := p.Complete(context.Background(), userReq("m"), nil)
		var pe *Error
		if !errors.As(err, &pe) || pe.Type != ErrEmptyStream {
			t.Errorf("%s: err = %v, want an %s error", prov, err, ErrEmptyStream)
		}
	}
}
