package provider

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

const openAIDir = "sse/openai-chat-completions/openai__openai-python/"

func newTestOpenAI(t *testing.T, srv *fakeServer, retries int) Provider {
	t.Helper()
	p, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "test-key", MaxRetries: retries, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	p.(*openAIProvider).retryBase = time.Millisecond
	return p
}

func userReq(model string) Request {
	return Request{Model: model, Messages: []session.Message{{Role: session.RoleUser, Content: "What's the weather?"}}}
}

type wantResp struct {
	text         string
	calls        []session.ToolCall
	in, out      int64
	finish       string
	model        string
	costPositive bool
}

func checkResponse(t *testing.T, got Response, want wantResp) {
	t.Helper()
	if got.Text != want.text {
		t.Errorf("Text = %q, want %q", got.Text, want.text)
	}
	if len(got.ToolCalls) != len(want.calls) {
		t.Fatalf("ToolCalls = %+v, want %d calls", got.ToolCalls, len(want.calls))
	}
	for i, c := range want.calls {
		g := got.ToolCalls[i]
		if g.ID != c.ID || g.Name != c.Name || string(g.Args) != string(c.Args) {
			t.Errorf("ToolCalls[%d] = {%s %s %s}, want {%s %s %s}", i, g.ID, g.Name, g.Args, c.ID, c.Name, c.Args)
		}
	}
	if got.InputTokens != want.in || got.OutputTokens != want.out {
		t.Errorf("usage = %d/%d, want %d/%d", got.InputTokens, got.OutputTokens, want.in, want.out)
	}
	if got.FinishReason != want.finish {
		t.Errorf("FinishReason = %q, want %q", got.FinishReason, want.finish)
	}
	if got.Model != want.model {
		t.Errorf("Model = %q, want %q", got.Model, want.model)
	}
	if wantCost := pricing.Cost(want.model, want.in, want.out); math.Abs(got.CostUSD-wantCost) > 1e-12 || (want.costPositive && got.CostUSD <= 0) {
		t.Errorf("CostUSD = %v, want %v (positive: %v)", got.CostUSD, wantCost, want.costPositive)
	}
}

func call(id, name, args string) session.ToolCall {
	return session.ToolCall{ID: id, Name: name, Args: []byte(args)}
}

func TestOpenAICorpus(t *testing.T) {
	const pyd = "sse/openai-chat-completions/pydantic__pydantic-ai/test_run_stream_sync_streams_real_model.yaml"
	tests := []struct {
		name string
		body func(t *testing.T) []byte
		want wantResp
	}{
		{
			name: "one tool call",
			body: func(t *testing.T) []byte {
				return corpusFile(t, openAIDir+"2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin")
			},
			want: wantResp{
				calls: []session.ToolCall{call("call_4XzlGBLtUe9dy3GVNV4jhq7h", "get_weather", `{"city":"New York City"}`)},
				in:    44, out: 16, finish: "tool_calls", model: "gpt-4o-2024-08-06", costPositive: true,
			},
		},
		{
			name: "strict tool call",
			body: func(t *testing.T) []byte {
				return corpusFile(t, openAIDir+"a247c49c5fcd492bfb7a02a3306ad615ed8d8f649888ebfddfbc3ee151f44d46.bin")
			},
			want: wantResp{
				calls: []session.ToolCall{call("call_CTf1nWJLqSeRgDqaCG27xZ74", "get_weather", `{"city":"San Francisco","state":"CA"}`)},
				in:    48, out: 19, finish: "tool_calls", model: "gpt-4o-2024-08-06", costPositive: true,
			},
		},
		{
			name: "pydantic tool call",
			body: func(t *testing.T) []byte {
				return corpusFile(t, openAIDir+"c6aa7e397b7123c3501f25df3a05d4daf7e8ad6d61ffa406ab5361fe36a8d5b1.bin")
			},
			want: wantResp{
				calls: []session.ToolCall{call("call_c91SqDXlYFuETYv8mUHzz6pp", "GetWeatherArgs", `{"city":"Edinburgh","country":"UK","units":"c"}`)},
				in:    76, out: 24, finish: "tool_calls", model: "gpt-4o-2024-08-06", costPositive: true,
			},
		},
		{
			name: "two parallel tool calls",
			body: func(t *testing.T) []byte {
				return corpusFile(t, openAIDir+"f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin")
			},
			want: wantResp{
				calls: []session.ToolCall{
					call("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", `{"city": "Edinburgh", "country": "GB", "units": "c"}`),
					call("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", `{"ticker": "AAPL", "exchange": "NASDAQ"}`),
				},
				in: 149, out: 60, finish: "tool_calls", model: "gpt-4o-2024-08-06", costPositive: true,
			},
		},
		{
			name: "plain text with usage",
			body: func(t *testing.T) []byte {
				return corpusFile(t, openAIDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin")
			},
			want: wantResp{
				text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
				in:   14, out: 30, finish: "stop", model: "gpt-4o-2024-08-06", costPositive: true,
			},
		},
		{
			name: "pydantic-ai cassette turn 1",
			body: func(t *testing.T) []byte { b, _ := cassetteBody(t, pyd, 0); return b },
			want: wantResp{
				calls: []session.ToolCall{call("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", `{"country":"UK"}`)},
				in:    53, out: 15, finish: "tool_calls", model: "gpt-4o-mini-2024-07-18", costPositive: true,
			},
		},
		{
			name: "pydantic-ai cassette turn 2",
			body: func(t *testing.T) []byte { b, _ := cassetteBody(t, pyd, 1); return b },
			want: wantResp{
				text: "The capital of the UK is London.",
				in:   78, out: 9, finish: "stop", model: "gpt-4o-mini-2024-07-18", costPositive: true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, sseReply(tt.body(t)))
			p := newTestOpenAI(t, srv, 0)
			var streamed strings.Builder
			got, err := p.Complete(context.Background(), userReq("gpt-4o"), func(d string) { streamed.WriteString(d) })
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
			if srv.paths[0] != "/v1/chat/completions" {
				t.Errorf("path = %q, want /v1/chat/completions", srv.paths[0])
			}
		})
	}
}

func TestOpenAIRetry(t *testing.T) {
	capture := corpusFile(t, openAIDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin")
	serverError := jsonReply(500, []byte(`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`), "Retry-After-Ms", "1")
	rateLimited := jsonReply(429, []byte(`{"error":{"message":"Rate limit reached for gpt-4o.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`), "Retry-After-Ms", "1")
	badRequest := jsonReply(400, []byte(`{"error":{"message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_RTlWVuE5MqEb3WZJgTIl7Rsb","type":"invalid_request_error","param":"messages.[6].role","code":null}}`))
	unauthorized := jsonReply(401, []byte(`{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))

	tests := []struct {
		name       string
		replies    []reply
		retries    int
		wantReqs   int
		wantErr    *Error
		wantInText string
	}{
		{name: "500 twice then success", replies: []reply{serverError, serverError, sseReply(capture)}, retries: 2, wantReqs: 3},
		{name: "429 until retries run out", replies: []reply{rateLimited}, retries: 2, wantReqs: 3,
			wantErr: &Error{Provider: "openai", Status: 429, Type: "requests", Message: "Rate limit reached for gpt-4o.", Retryable: true}},
		{name: "400 is not retried", replies: []reply{badRequest}, retries: 2, wantReqs: 1,
			wantErr: &Error{Provider: "openai", Status: 400, Type: "invalid_request_error", Message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_RTlWVuE5MqEb3WZJgTIl7Rsb"}},
		{name: "401 has a hint", replies: []reply{unauthorized}, retries: 2, wantReqs: 1,
			wantErr:    &Error{Provider: "openai", Status: 401, Type: "invalid_request_error", Message: "Incorrect API key provided: sk-test."},
			wantInText: "OPENAI_API_KEY"},
		{name: "negative MaxRetries never retries", replies: []reply{serverError, sseReply(capture)}, retries: -1, wantReqs: 1,
			wantErr: &Error{Provider: "openai", Status: 500, Type: "server_error", Message: "The server had an error while processing your request.", Retryable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.replies...)
			p := newTestOpenAI(t, srv, tt.retries)
			got, err := p.Complete(context.Background(), userReq("gpt-4o"), nil)
			if n := srv.count(); n != tt.wantReqs {
				t.Errorf("server saw %d requests, want %d", n, tt.wantReqs)
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if got.FinishReason != "stop" || got.OutputTokens != 30 {
					t.Errorf("Complete = %+v, want the capture's answer", got)
				}
				return
			}
			checkError(t, err, tt.wantErr)
			if !strings.Contains(err.Error(), tt.wantInText) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), tt.wantInText)
			}
		})
	}
}

func checkError(t *testing.T, err error, want *Error) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if pe.Provider != want.Provider || pe.Status != want.Status || pe.Type != want.Type || pe.Message != want.Message ||
		pe.Retryable != want.Retryable || pe.InStream != want.InStream {
		t.Errorf("err = %#v,\nwant %#v", *pe, *want)
	}
	prefix := want.Provider + ": "
	if want.Status != 0 {
		prefix += itoa(want.Status) + " "
	}
	prefix += want.Type + ": " + want.Message
	if !strings.HasPrefix(pe.Error(), prefix) {
		t.Errorf("Error() = %q, want prefix %q", pe.Error(), prefix)
	}
}

func itoa(n int) string {
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func TestOpenAIMidStreamError(t *testing.T) {
	// An error object inside a 200 stream, before any text: retried.
	body := []byte("data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"code\":null}}\n\n")
	srv := newFakeServer(t, sseReply(body))
	p := newTestOpenAI(t, srv, 2)
	_, err := p.Complete(context.Background(), userReq("gpt-4o"), nil)
	checkError(t, err, &Error{Provider: "openai", Type: "server_error", Message: "The server had an error", Retryable: true, InStream: true})
	if n := srv.count(); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
}

func TestOpenAICancelMidStream(t *testing.T) {
	full := corpusFile(t, openAIDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin")
	// The first half of the events (cut on an event boundary), then the
	// server stalls as a slow model would.
	events := strings.SplitAfter(string(full), "\n\n")
	half := strings.Join(events[:len(events)/2], "")
	srv := newFakeServer(t, reply{status: 200, header: map[string]string{"Content-Type": "text/event-stream"}, body: []byte(half), hang: true})
	p := newTestOpenAI(t, srv, 2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen strings.Builder
	done := make(chan struct{})
	var got Response
	var err error
	go func() {
		defer close(done)
		got, err = p.Complete(ctx, userReq("gpt-4o"), func(d string) { seen.WriteString(d) })
	}()
	// Wait until the stall, then interrupt.
	deadline := time.Now().Add(5 * time.Second)
	for srv.count() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Complete did not return after cancel")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	const wantPrefix = "I'm unable to provide real-time weather updates."
	if !strings.HasPrefix(got.Text, wantPrefix) || len(got.Text) >= 157 {
		t.Errorf("partial Text = %q, want a strict prefix of the answer starting %q", got.Text, wantPrefix)
	}
	if got.Text != seen.String() {
		t.Errorf("partial Text = %q, but onText saw %q", got.Text, seen.String())
	}
	if n := srv.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1 (a cancel is not retried)", n)
	}
}

func TestOpenAIRequestShape(t *testing.T) {
	const pyd = "sse/openai-chat-completions/pydantic__pydantic-ai/test_run_stream_sync_streams_real_model.yaml"
	body, _ := cassetteBody(t, pyd, 1)
	srv := newFakeServer(t, sseReply(body))
	p := newTestOpenAI(t, srv, 0)
	req := Request{
		Model:     "gpt-4o-mini",
		MaxTokens: 256,
		Messages: []session.Message{
			{Role: session.RoleSystem, Content: "Be brief."},
			{Role: session.RoleUser, Content: "What is the capital of the UK? Use the tool, then answer."},
			{Role: session.RoleAssistant, ToolCalls: []session.ToolCall{call("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", `{"country":"UK"}`)}},
			{Role: session.RoleTool, Content: "London", ToolCallID: "call_ZR5UUuTt3pf61kjwAJIYdVMj", Name: "get_capital"},
		},
		Tools: []ToolDef{{Name: "get_capital", Parameters: []byte(`{"additionalProperties":false,"properties":{"country":{"type":"string"}},"required":["country"],"type":"object"}`)}},
	}
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.request(t, 0)
	// The messages pydantic-ai sent in the recorded turn 2, after our
	// leading system message; content:null there is an absent content here.
	want := `[{"role":"system","content":"Be brief."},
	 {"role":"user","content":"What is the capital of the UK? Use the tool, then answer."},
	 {"role":"assistant","tool_calls":[{"id":"call_ZR5UUuTt3pf61kjwAJIYdVMj","type":"function","function":{"name":"get_capital","arguments":"{\"country\":\"UK\"}"}}]},
	 {"role":"tool","content":"London","tool_call_id":"call_ZR5UUuTt3pf61kjwAJIYdVMj"}]`
	if g, w := canon(t, got["messages"]), canonText(t, want); g != w {
		t.Errorf("messages =\n%s\nwant\n%s", g, w)
	}
	if g, w := canon(t, got["tools"]), canonText(t, `[{"type":"function","function":{"name":"get_capital","parameters":{"additionalProperties":false,"properties":{"country":{"type":"string"}},"required":["country"],"type":"object"}}}]`); g != w {
		t.Errorf("tools =\n%s\nwant\n%s", g, w)
	}
	if got["stream"] != true || canon(t, got["stream_options"]) != `{"include_usage":true}` {
		t.Errorf("stream = %v, stream_options = %v; want true and include_usage", got["stream"], got["stream_options"])
	}
	// A compatible server (not api.openai.com) gets max_tokens.
	if got["max_tokens"] != float64(256) || got["max_completion_tokens"] != nil {
		t.Errorf("max_tokens = %v, max_completion_tokens = %v; want 256 and absent", got["max_tokens"], got["max_completion_tokens"])
	}
	if got["model"] != "gpt-4o-mini" {
		t.Errorf("model = %v", got["model"])
	}
}

func TestOpenAIEmptyKeySendsPlaceholder(t *testing.T) {
	var auth string
	srv := newFakeServer(t, sseReply(corpusFile(t, openAIDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin")))
	inner := srv.Config.Handler
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		inner.ServeHTTP(w, r)
	})
	p, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), userReq("llama3"), nil); err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer "+placeholderAPIKey {
		t.Errorf("Authorization = %q, want the placeholder", auth)
	}
}
