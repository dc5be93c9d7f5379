package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

const (
	anthPyDir  = "sse/anthropic-messages/anthropics__anthropic-sdk-python/"
	anthGoDir  = "sse/anthropic-messages/anthropics__anthropic-sdk-go/cassettes/"
	anthVerDir = "sse/anthropic-messages/vercel__ai/"
	errorsFile = "sse/errors/anthropics__anthropic-sdk-python/f59a9391-643b-422c-96dc-1f28bc7ea4d7.json"
)

func newTestAnthropic(t *testing.T, srv *fakeServer, retries int) Provider {
	t.Helper()
	p, err := NewAnthropic(AnthropicConfig{BaseURL: srv.URL, APIKey: "test-key", MaxRetries: retries, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	p.(*anthropicProvider).retryBase = time.Millisecond
	return p
}

func TestAnthropicCorpus(t *testing.T) {
	goCassette := func(name string, i int) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			b, code := cassetteBody(t, anthGoDir+name, i)
			if code != 200 {
				t.Fatalf("%s interaction %d: code %d, want 200", name, i, code)
			}
			return b
		}
	}
	raw := func(rel string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return corpusFile(t, rel) }
	}
	chunks := func(rel string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return chunksToSSE(t, corpusFile(t, rel)) }
	}
	tests := []struct {
		name string
		body func(t *testing.T) []byte
		want wantResp
	}{
		{
			name: "basic text",
			body: raw(anthPyDir + "basic_response.txt"),
			want: wantResp{text: "Hello there!", in: 11, out: 6, finish: "stop", model: "claude-3-opus-latest", costPositive: true},
		},
		{
			name: "text then tool_use",
			body: raw(anthPyDir + "tool_use_response.txt"),
			want: wantResp{
				text:  "I'll check the current weather in Paris for you.",
				calls: []session.ToolCall{call("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", `{"location": "Paris"}`)},
				in:    377, out: 65, finish: "tool_calls", model: "claude-sonnet-4-20250514", costPositive: true,
			},
		},
		{
			// The stream stops inside the tool's JSON (max_tokens): the
			// cut-off args become {} and the reason is length.
			name: "incomplete partial json",
			body: raw(anthPyDir + "incomplete_partial_json_response.txt"),
			want: wantResp{
				text:  "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now.",
				calls: []session.ToolCall{call("toolu_01EKqbqmZrGRXy18eN7m9kvY", "make_file", `{}`)},
				in:    450, out: 124, finish: "length", model: "claude-3-7-sonnet-20250219", costPositive: true,
			},
		},
		{
			name: "go cassette streaming turn 1",
			body: goCassette("tool_runner_streaming_all.yaml", 0),
			want: wantResp{
				text:  "I'll get the current weather in San Francisco for you in Fahrenheit.",
				calls: []session.ToolCall{call("toolu_01RaX2WYWRWCbaeFHssmGJXG", "get_weather", `{"city": "San Francisco", "units": "fahrenheit"}`)},
				in:    397, out: 89, finish: "tool_calls", model: "claude-3-7-sonnet-20250219", costPositive: true,
			},
		},
		{
			name: "go cassette streaming turn 2",
			body: goCassette("tool_runner_streaming_all.yaml", 1),
			want: wantResp{
				text: "The current weather in San Francisco is 68 degrees Fahrenheit.",
				in:   509, out: 19, finish: "stop", model: "claude-3-7-sonnet-20250219", costPositive: true,
			},
		},
		{
			name: "go cassette next streaming",
			body: goCassette("tool_runner_next_streaming.yaml", 0),
			want: wantResp{
				text:  "I'd be happy to check the weather in San Francisco for you. Let me get that information for you right away.",
				calls: []session.ToolCall{call("toolu_017QoD96fYwGzCWvLfaPADWg", "get_weather", `{"city": "San Francisco"}`)},
				in:    394, out: 79, finish: "tool_calls", model: "claude-3-7-sonnet-20250219", costPositive: true,
			},
		},
		{
			name: "vercel json tool",
			body: chunks(anthVerDir + "anthropic-json-tool.1.chunks.txt"),
			want: wantResp{
				calls: []session.ToolCall{call("toolu_01KFbKqPYSuAKujiL6mTfzYA", "json", `{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}`)},
				in:    849, out: 47, finish: "tool_calls", model: "claude-haiku-4-5-20251001", costPositive: true,
			},
		},
		{
			name: "vercel tool with no args",
			body: chunks(anthVerDir + "anthropic-tool-no-args.chunks.txt"),
			want: wantResp{
				text:  "I'll update the issue list for you.",
				calls: []session.ToolCall{call("toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", `{}`)},
				in:    565, out: 48, finish: "tool_calls", model: "claude-sonnet-4-5-20250929", costPositive: true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, sseReply(tt.body(t)))
			p := newTestAnthropic(t, srv, 0)
			var streamed strings.Builder
			got, err := p.Complete(context.Background(), userReq("claude-3-7-sonnet-latest"), func(d string) { streamed.WriteString(d) })
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			checkResponse(t, got, tt.want)
			if streamed.String() != tt.want.text {
				t.Errorf("onText saw %q, want %q", streamed.String(), tt.want.text)
			}
			if n := srv.count(); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
			if srv.paths[0] != "/v1/messages" {
				t.Errorf("path = %q, want /v1/messages", srv.paths[0])
			}
		})
	}
}

// recordedError returns the HTTP 400 of the Python SDK's tool-runner
// capture: status, body and the x-should-retry header as recorded.
func recordedError(t *testing.T) reply {
	t.Helper()
	var ex []struct {
		Response struct {
			StatusCode int               `json:"status_code"`
			Headers    map[string]string `json:"headers"`
			Body       json.RawMessage   `json:"body"`
		} `json:"response"`
	}
	if err := json.Unmarshal(corpusFile(t, errorsFile), &ex); err != nil {
		t.Fatal(err)
	}
	r := ex[1].Response
	if r.StatusCode != 400 {
		t.Fatalf("recorded status = %d, want 400", r.StatusCode)
	}
	// The capture stores the body as parsed JSON; compacted it is the
	// wire body again, as its recorded content-length (316) confirms.
	var body bytes.Buffer
	if err := json.Compact(&body, r.Body); err != nil {
		t.Fatal(err)
	}
	if got := itoa(body.Len()); got != r.Headers["content-length"] {
		t.Fatalf("compacted body is %s bytes, recorded content-length %s", got, r.Headers["content-length"])
	}
	return reply{status: r.StatusCode, header: r.Headers, body: body.Bytes()}
}

func TestAnthropicErrors(t *testing.T) {
	const orphanMsg = "messages.0.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01GHndag5wQmbzNihYmV2UBj. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
	overloaded := jsonReply(529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), "Retry-After-Ms", "1")
	serverError := jsonReply(500, []byte(`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`), "Retry-After-Ms", "1")
	rateLimited := jsonReply(429, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`), "Retry-After-Ms", "1")
	unauthorized := jsonReply(401, []byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	midStream := sseReply([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))
	basic := func(t *testing.T) reply { return sseReply(corpusFile(t, anthPyDir+"basic_response.txt")) }

	tests := []struct {
		name     string
		replies  func(t *testing.T) []reply
		wantReqs int
		wantErr  *Error
		wantHint bool
	}{
		{name: "recorded 400 invalid_request_error", replies: func(t *testing.T) []reply { return []reply{recordedError(t)} }, wantReqs: 1,
			wantErr: &Error{Provider: "anthropic", Status: 400, Type: "invalid_request_error", Message: orphanMsg}},
		{name: "recorded 400 without x-should-retry", replies: func(t *testing.T) []reply {
			r := recordedError(t)
			delete(r.header, "x-should-retry")
			return []reply{r}
		}, wantReqs: 1, wantErr: &Error{Provider: "anthropic", Status: 400, Type: "invalid_request_error", Message: orphanMsg}},
		{name: "529 overloaded retried then fails", replies: func(*testing.T) []reply { return []reply{overloaded} }, wantReqs: 3,
			wantErr: &Error{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true}},
		{name: "429 retried then fails", replies: func(*testing.T) []reply { return []reply{rateLimited} }, wantReqs: 3,
			wantErr: &Error{Provider: "anthropic", Status: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit", Retryable: true}},
		{name: "500 twice then success", replies: func(t *testing.T) []reply { return []reply{serverError, serverError, basic(t)} }, wantReqs: 3},
		{name: "mid-stream overloaded retried then fails", replies: func(*testing.T) []reply { return []reply{midStream} }, wantReqs: 3,
			wantErr: &Error{Provider: "anthropic", Type: "overloaded_error", Message: "Overloaded", Retryable: true, InStream: true}},
		{name: "mid-stream overloaded then success", replies: func(t *testing.T) []reply { return []reply{midStream, basic(t)} }, wantReqs: 2},
		{name: "401 has a hint", replies: func(*testing.T) []reply { return []reply{unauthorized} }, wantReqs: 1,
			wantErr: &Error{Provider: "anthropic", Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}, wantHint: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.replies(t)...)
			p := newTestAnthropic(t, srv, 2)
			got, err := p.Complete(context.Background(), userReq("claude-3-opus-latest"), nil)
			if n := srv.count(); n != tt.wantReqs {
				t.Errorf("server saw %d requests, want %d", n, tt.wantReqs)
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if got.Text != "Hello there!" {
					t.Errorf("Text = %q, want the capture's answer", got.Text)
				}
				return
			}
			checkError(t, err, tt.wantErr)
			if hint := strings.Contains(err.Error(), "ANTHROPIC_API_KEY"); hint != tt.wantHint {
				t.Errorf("Error() = %q; hint present %v, want %v", err.Error(), hint, tt.wantHint)
			}
		})
	}
}

func TestAnthropicMidStreamErrorAfterText(t *testing.T) {
	// Text already reached the caller: no retry, partial text kept.
	body := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half an \"}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	srv := newFakeServer(t, sseReply([]byte(body)))
	p := newTestAnthropic(t, srv, 2)
	got, err := p.Complete(context.Background(), userReq("claude-sonnet-4-5"), nil)
	checkError(t, err, &Error{Provider: "anthropic", Type: "overloaded_error", Message: "Overloaded", Retryable: true, InStream: true})
	if got.Text != "Half an " || got.InputTokens != 12 {
		t.Errorf("partial = %+v, want text %q and input 12", got, "Half an ")
	}
	if n := srv.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestAnthropicRequestShape(t *testing.T) {
	srv := newFakeServer(t, sseReply(corpusFile(t, anthPyDir+"basic_response.txt")))
	p := newTestAnthropic(t, srv, 0)
	req := Request{
		Model:     "claude-3-7-sonnet-latest",
		MaxTokens: 512,
		Messages: []session.Message{
			{Role: session.RoleSystem, Content: "You are terse."},
			{Role: session.RoleSystem, Content: session.SummaryPrefix + "earlier work"},
			{Role: session.RoleUser, Content: "Weather in SF and NYC?"},
			{Role: session.RoleAssistant, Content: "Checking both.", ToolCalls: []session.ToolCall{
				call("toolu_A", "get_weather", `{"city":"San Francisco"}`),
				call("toolu_B", "get_weather", ``),
			}},
			{Role: session.RoleTool, Content: "68F", ToolCallID: "toolu_A", Name: "get_weather"},
			{Role: session.RoleTool, Content: session.CancelledContent, ToolCallID: "toolu_B", Name: "get_weather"},
			{Role: session.RoleUser, Content: "Thanks"},
		},
		Tools: []ToolDef{{Name: "get_weather", Description: "Get weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}},
	}
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.request(t, 0)
	if g, w := canon(t, got["system"]), canonText(t, `[{"type":"text","text":"You are terse."},{"type":"text","text":"Session so far: earlier work"}]`); g != w {
		t.Errorf("system =\n%s\nwant\n%s", g, w)
	}
	// Both tool results (and the user's next words) go in ONE user message
	// right after the assistant's tool_use blocks.
	want := `[
	 {"role":"user","content":[{"type":"text","text":"Weather in SF and NYC?"}]},
	 {"role":"assistant","content":[{"type":"text","text":"Checking both."},
	   {"type":"tool_use","id":"toolu_A","name":"get_weather","input":{"city":"San Francisco"}},
	   {"type":"tool_use","id":"toolu_B","name":"get_weather","input":{}}]},
	 {"role":"user","content":[
	   {"type":"tool_result","tool_use_id":"toolu_A","content":[{"type":"text","text":"68F"}],"is_error":false},
	   {"type":"tool_result","tool_use_id":"toolu_B","content":[{"type":"text","text":"{\"error\":\"cancelled_by_user\"}"}],"is_error":false},
	   {"type":"text","text":"Thanks"}]}]`
	if g, w := canon(t, got["messages"]), canonText(t, want); g != w {
		t.Errorf("messages =\n%s\nwant\n%s", g, w)
	}
	if g, w := canon(t, got["tools"]), canonText(t, `[{"name":"get_weather","description":"Get weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]`); g != w {
		t.Errorf("tools =\n%s\nwant\n%s", g, w)
	}
	if got["max_tokens"] != float64(512) || got["stream"] != true || got["model"] != "claude-3-7-sonnet-latest" {
		t.Errorf("max_tokens, stream, model = %v, %v, %v", got["max_tokens"], got["stream"], got["model"])
	}
}

// TestAnthropicRequestMatchesRecording rebuilds turn 2 of the Go SDK's
// recorded tool loop from session messages and checks that the messages
// we send are the ones the SDK's own tool runner sent.
func TestAnthropicRequestMatchesRecording(t *testing.T) {
	const cassette = anthGoDir + "tool_runner_streaming_all.yaml"
	body, _ := cassetteBody(t, cassette, 1)
	srv := newFakeServer(t, sseReply(body))
	p := newTestAnthropic(t, srv, 0)
	req := Request{
		Model:     "claude-3-7-sonnet-latest",
		MaxTokens: 512,
		Messages: []session.Message{
			{Role: session.RoleUser, Content: "Weather in SF in fahrenheit?"},
			{Role: session.RoleAssistant, Content: "I'll get the current weather in San Francisco for you in Fahrenheit.",
				ToolCalls: []session.ToolCall{call("toolu_01RaX2WYWRWCbaeFHssmGJXG", "get_weather", `{"city": "San Francisco", "units": "fahrenheit"}`)}},
			{Role: session.RoleTool, Content: "The weather in San Francisco is 68 degrees fahrenheit.", ToolCallID: "toolu_01RaX2WYWRWCbaeFHssmGJXG"},
		},
		Tools: []ToolDef{{Name: "get_weather", Description: "Get weather",
			Parameters: []byte(`{"properties":{"city":{"type":"string"},"units":{"enum":["celsius","fahrenheit"],"type":"string"}},"required":["city"],"type":"object"}`)}},
	}
	got, err := p.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "The current weather in San Francisco is 68 degrees Fahrenheit." {
		t.Errorf("Text = %q", got.Text)
	}
	var recorded map[string]any
	if err := json.Unmarshal(cassetteRequest(t, cassette, 1), &recorded); err != nil {
		t.Fatal(err)
	}
	// We state is_error:false explicitly; the recording leaves it out.
	sent := srv.request(t, 0)
	for _, m := range sent["messages"].([]any) {
		for _, b := range m.(map[string]any)["content"].([]any) {
			delete(b.(map[string]any), "is_error")
		}
	}
	for _, key := range []string{"messages", "tools", "max_tokens", "model", "stream"} {
		if g, w := canon(t, sent[key]), canon(t, recorded[key]); g != w {
			t.Errorf("%s =\n%s\nrecorded\n%s", key, g, w)
		}
	}
}

func TestAnthropicCancelMidStream(t *testing.T) {
	full := string(corpusFile(t, anthPyDir+"incomplete_partial_json_response.txt"))
	cut := strings.Index(full, "event: content_block_stop")
	srv := newFakeServer(t, reply{status: 200, header: map[string]string{"Content-Type": "text/event-stream"}, body: []byte(full[:cut]), hang: true})
	p := newTestAnthropic(t, srv, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got, err := p.Complete(ctx, userReq("claude-3-7-sonnet-latest"), func(d string) {
		if strings.HasSuffix(d, "now.") {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	const want = "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."
	if got.Text != want || got.InputTokens != 450 {
		t.Errorf("partial = %q (in %d), want %q (in 450)", got.Text, got.InputTokens, want)
	}
}
