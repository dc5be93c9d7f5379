package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/agentctl/agentctl/internal/session"
)

const (
	oaDir = "sse/openai-chat-completions/openai__openai-python/"
	anDir = "sse/anthropic-messages/anthropics__anthropic-sdk-python/"
)

const sse = "text/event-stream; charset=utf-8"

func chatBody(stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o", "stream": stream, "messages": []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": "What's the weather in New York City?"}}})
	return string(b)
}

func messagesBody(stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-20250514", "max_tokens": 1024, "stream": stream,
		"messages": []any{map[string]any{"role": "user", "content": "What's the weather in SF?"}}})
	return string(b)
}

func responsesBody(stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": "gpt-5.5", "stream": stream, "instructions": "Briefly narrate.",
		"input": []any{map[string]any{"role": "user", "content": "What is the capital of PotatoLand?"}}})
	return string(b)
}

// post sends body to the proxy with credentials, and returns the status
// and the exact bytes that came back.
func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-client-secret-123456789")
	req.Header.Set("X-Api-Key", "sk-ant-client-secret-123456789")
	req.Header.Set("Cookie", "session=abc")
	req.Header.Set("anthropic-beta", "tools-2024-04-04")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func lastOf(evs []session.Event, k session.Kind) session.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == k {
			return evs[i]
		}
	}
	return session.Event{}
}

// TestRecordCorpus serves the corpus's recorded provider answers as the
// upstream: what comes out of the proxy must be the same bytes, and the
// session must hold the tokens, refusal, finish reason and errors the
// answers carry.
func TestRecordCorpus(t *testing.T) {
	errCase := corpusErrorBody(t)
	cases := []struct {
		name    string
		path    string
		body    string
		rep     reply
		status  int
		text    string
		refusal string
		tool    string
		finish  string
		in, out int64
		errType string
		think   string
	}{
		{name: "messages thinking", path: "/v1/messages", body: messagesBody(true), rep: reply{200, sse, cassetteBody(t, "sse/anthropic-messages/pydantic__pydantic-ai/test_anthropic_model_thinking_part_stream.yaml", 0), false},
			status: 200, finish: "stop", think: "This is a straightforward question about"},
		{name: "chat text", path: "/v1/chat/completions", body: chatBody(true), rep: reply{200, sse, corpusFile(t, oaDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin"), false},
			status: 200, finish: "stop", in: 14, out: 30},
		{name: "chat tool call", path: "/v1/chat/completions", body: chatBody(true), rep: reply{200, sse, corpusFile(t, oaDir+"2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin"), false},
			status: 200, tool: "get_weather", finish: "tool_calls", in: 44, out: 16},
		{name: "chat refusal", path: "/v1/chat/completions", body: chatBody(true), rep: reply{200, sse, corpusFile(t, oaDir+"ca015b8b1ebaac98be76f2f855f8694b77f608de5e2a3799276be06ce3fbb15b.bin"), false},
			status: 200, refusal: "I'm", finish: "stop", in: 17, out: 12},
		{name: "chat length", path: "/v1/chat/completions", body: chatBody(true), rep: reply{200, sse, corpusFile(t, oaDir+"69363a555f8ea9b6eee0bb022af0afcd22d4f0e85418ab38ee24d2a570a84ff0.bin"), false},
			status: 200, finish: "length", in: 17, out: 1},
		{name: "messages tool use", path: "/v1/messages?beta=true", body: messagesBody(true), rep: reply{200, sse, corpusFile(t, anDir+"tool_use_response.txt"), false},
			status: 200, tool: "get_weather", finish: "tool_calls", in: 377, out: 65},
		{name: "messages text", path: "/v1/messages", body: messagesBody(true), rep: reply{200, sse, corpusFile(t, anDir+"basic_response.txt"), false},
			status: 200, text: "Hello there!", finish: "stop", in: 11, out: 6},
		{name: "responses tool call", path: "/v1/responses", body: responsesBody(true), rep: reply{200, sse, cassetteBody(t, "sse/openai-responses/pydantic__pydantic-ai/test_openai_responses_phase_streamed_on_part_start.yaml", 0), false},
			status: 200, tool: "get_capital", finish: "tool_calls"},
		{name: "messages 400", path: "/v1/messages?beta=true", body: messagesBody(false), rep: reply{400, "application/json", errCase, false},
			status: 400, errType: "invalid_request_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, tc.rep)
			b, err := NewUpstream(up.URL+"/v1", nil)
			if err != nil {
				t.Fatal(err)
			}
			srv, mem, base := startProxy(t, Config{Backend: b})
			status, got := post(t, base+tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("status = %d, want %d", status, tc.status)
			}
			if !bytes.Equal(got, tc.rep.body) {
				t.Fatalf("bytes out differ from bytes in: %d bytes out, %d in", len(got), len(tc.rep.body))
			}
			h := up.headers[0]
			if h.Get("Authorization") != "Bearer sk-client-secret-123456789" || h.Get("anthropic-beta") != "tools-2024-04-04" {
				t.Errorf("upstream saw headers %v: want the client's own credentials and beta header", h)
			}
			if q := up.paths[0]; q != tc.path {
				t.Errorf("upstream path = %s, want %s", q, tc.path)
			}
			evs := only(t, srv, mem)
			mc := lastOf(evs, session.KindModelCall)
			if tc.errType != "" {
				if mc.ErrorType != tc.errType || !strings.Contains(mc.Error, "tool_use_id") {
					t.Fatalf("model_call error = %q (%s), want %s with the provider's message", mc.Error, mc.ErrorType, tc.errType)
				}
				if k := kinds(evs); strings.Contains(k, "assistant_message") {
					t.Errorf("kinds = %s: a failed call has no answer", k)
				}
				return
			}
			am := lastOf(evs, session.KindAssistantMessage)
			if mc.FinishReason != tc.finish {
				t.Errorf("finish_reason = %q, want %q", mc.FinishReason, tc.finish)
			}
			if tc.in != 0 && (mc.InputTokens != tc.in || mc.OutputTokens != tc.out) {
				t.Errorf("tokens = %d/%d, want %d/%d", mc.InputTokens, mc.OutputTokens, tc.in, tc.out)
			}
			if tc.in == 0 && (mc.InputTokens == 0 || mc.OutputTokens == 0) {
				t.Errorf("tokens = %d/%d, want the usage of response.completed", mc.InputTokens, mc.OutputTokens)
			}
			if tc.text != "" && am.Text != tc.text {
				t.Errorf("text = %q, want %q", am.Text, tc.text)
			}
			if tc.refusal != "" && !strings.HasPrefix(am.Refusal, tc.refusal) {
				t.Errorf("refusal = %q, want it to start %q", am.Refusal, tc.refusal)
			}
			if tc.think != "" {
				var at struct {
					Thinking string `json:"thinking"`
				}
				json.Unmarshal(am.Attrs, &at)
				if !strings.HasPrefix(at.Thinking, tc.think) || strings.Contains(am.Text, tc.think) {
					t.Errorf("thinking = %q, text = %q: want the thinking kept apart from the text", at.Thinking, am.Text)
				}
			}
			if tc.tool != "" && (len(am.ToolCalls) == 0 || am.ToolCalls[0].Name != tc.tool) {
				t.Errorf("tool calls = %+v, want %s", am.ToolCalls, tc.tool)
			}
			var a map[string]any
			json.Unmarshal(mc.Attrs, &a)
			if a["response_artifact"] == nil || a["request_artifact"] == nil {
				t.Errorf("model_call attrs = %v: want the raw bodies as artifacts", a)
			}
			for _, e := range evs {
				enc, _ := session.Encode(e)
				if bytes.Contains(enc, []byte("client-secret")) || bytes.Contains(enc, []byte("session=abc")) {
					t.Errorf("a credential was recorded: %s", enc)
				}
			}
		})
	}
}

func corpusErrorBody(t *testing.T) []byte {
	var ex []struct {
		Response struct {
			Status int             `json:"status_code"`
			Body   json.RawMessage `json:"body"`
		} `json:"response"`
	}
	if err := json.Unmarshal(corpusFile(t, "sse/errors/anthropics__anthropic-sdk-python/f59a9391-643b-422c-96dc-1f28bc7ea4d7.json"), &ex); err != nil {
		t.Fatal(err)
	}
	return ex[1].Response.Body
}

// TestRecordSDKs drives the record mode with the official SDKs, streaming,
// and checks they read the forwarded corpus answers.
func TestRecordSDKs(t *testing.T) {
	up := newUpstream(t, reply{200, sse, corpusFile(t, oaDir+"2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin"), false})
	b, _ := NewUpstream(up.URL+"/v1", nil)
	_, _, base := startProxy(t, Config{Backend: b})
	cl := openaiClient(base)
	st := cl.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")}})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil || len(acc.Choices) == 0 || acc.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("openai stream through the proxy: err %v, %+v", err, acc.Choices)
	}

	up2 := newUpstream(t, reply{200, sse, corpusFile(t, anDir+"tool_use_response.txt"), false})
	b2, _ := NewUpstream(up2.URL, nil)
	_, _, base2 := startProxy(t, Config{Backend: b2})
	acl := anthropicClient(base2)
	ast := acl.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-20250514", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather?"))}})
	var m anthropic.Message
	for ast.Next() {
		m.Accumulate(ast.Current())
	}
	if err := ast.Err(); err != nil || m.StopReason != "tool_use" {
		t.Fatalf("anthropic stream through the proxy: err %v, stop %q", err, m.StopReason)
	}
}

// TestRecordUnreachable: an upstream that is not there is a 502 in the
// provider's shape, seen by the SDK, and a recorded connection_error.
func TestRecordUnreachable(t *testing.T) {
	b, _ := NewUpstream("http://127.0.0.1:1/v1", nil)
	srv, mem, base := startProxy(t, Config{Backend: b})
	cl := openaiClient(base)
	_, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || !strings.Contains(apiErr.Message, "unreachable") {
		t.Fatalf("err = %v, want a 502 saying the upstream is unreachable", err)
	}
	mc := lastOf(only(t, srv, mem), session.KindModelCall)
	if mc.ErrorType != "connection_error" || mc.Error == "" {
		t.Fatalf("model_call = %+v, want a connection_error", mc)
	}
	// The SDK's retry of the same request records no second user_message.
	cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if got := kinds(only(t, srv, mem)); got != "session_started user_message model_call model_call" {
		t.Errorf("after a retry: kinds = %s", got)
	}
}

// TestRecordMalformed: a body that is not a request is a 400 in the
// provider's shape, and recorded.
func TestRecordMalformed(t *testing.T) {
	up := newUpstream(t, reply{200, sse, nil, false})
	b, _ := NewUpstream(up.URL, nil)
	for _, tc := range []struct{ path, body, shape string }{
		{"/s/bad1/v1/messages", `{"model": "claude", "messages": []}`, `"type":"error"`},
		{"/s/bad2/v1/chat/completions", `{not json`, `{"error":{"code"`},
	} {
		srv, mem, base := startProxy(t, Config{Backend: b})
		status, body := post(t, base+tc.path, tc.body)
		if status != 400 || !strings.Contains(string(body), tc.shape) {
			t.Errorf("%s: %d %s, want 400 in the provider's shape %s", tc.path, status, body, tc.shape)
		}
		mc := lastOf(only(t, srv, mem), session.KindModelCall)
		if mc.ErrorType != "invalid_request_error" {
			t.Errorf("%s: model_call = %+v, want invalid_request_error recorded", tc.path, mc)
		}
	}
	if up.seen() != 0 {
		t.Errorf("the upstream saw %d malformed requests, want 0", up.seen())
	}
}

// TestRecordClientGone: a client that goes away mid-stream leaves an
// interrupted event with the partial text.
func TestRecordClientGone(t *testing.T) {
	up := newUpstream(t, reply{200, sse, corpusFile(t, oaDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin"), true})
	b, _ := NewUpstream(up.URL, nil)
	_, mem, base := startProxy(t, Config{Backend: b})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(chatBody(true)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	io.ReadAtLeast(resp.Body, buf, 100)
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ids := mem.IDs()
		if len(ids) == 1 {
			evs := mem.Get(ids[0]).Events()
			if in := lastOf(evs, session.KindInterrupted); in.Kind != "" {
				if in.Text == "" || in.Reason != "client_disconnected" {
					t.Fatalf("interrupted = %+v, want the partial text", in)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no interrupted event 5s after the client went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFinishByCalls: how a session the proxy opened ends, with the
// Anthropic SDK against an upstream answering the corpus's real 400: the
// agent's outcome, unless every model call failed (failed, the last error;
// an interruption stays one); some failed calls decide nothing.
func TestFinishByCalls(t *testing.T) {
	bad := reply{400, "application/json", corpusErrorBody(t), false}
	good := reply{200, sse, corpusFile(t, anDir+"tool_use_response.txt"), false}
	const lastErr = "invalid_request_error: messages.0.content.1: unexpected `tool_use_id`"
	for _, tc := range []struct {
		name           string
		replies        []reply
		status         session.Status
		reason         string
		want           session.Status
		wantReason     string
		wantReasonTail string
	}{
		{"all failed", []reply{bad}, session.StatusDone, "proxy stopped", session.StatusFailed, "provider_error: all 2 model calls failed; the last: " + lastErr, ""},
		{"all failed, agent failed", []reply{bad}, session.StatusFailed, "agent_failed: exit 1", session.StatusFailed, "provider_error: all 2 model calls failed", "; agent_failed: exit 1"},
		{"all failed, interrupted", []reply{bad}, session.StatusInterrupted, "signal", session.StatusInterrupted, "signal", ""},
		{"some failed", []reply{bad, good}, session.StatusDone, "proxy stopped", session.StatusDone, "proxy stopped", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, tc.replies...)
			b, _ := NewUpstream(up.URL, nil)
			srv, mem, base := startProxy(t, Config{Backend: b})
			cl := anthropicClient(base + "/s/a1")
			for range 2 {
				cl.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-20250514", MaxTokens: 100,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather?"))}})
			}
			waitIdle(t, srv)
			if err := srv.Finish(tc.status, tc.reason); err != nil {
				t.Fatal(err)
			}
			fin := lastOf(mem.Get("a1").Events(), session.KindSessionFinished)
			if session.Status(fin.Status) != tc.want || !strings.HasPrefix(fin.Reason, tc.wantReason) || !strings.HasSuffix(fin.Reason, tc.wantReasonTail) {
				t.Errorf("session_finished %s %q, want %s %q…%q", fin.Status, fin.Reason, tc.want, tc.wantReason, tc.wantReasonTail)
			}
			if e := srv.Ended(); len(e) != 1 || e[0].SessionID != "a1" || e[0].Status != tc.want || e[0].Reason != fin.Reason {
				t.Errorf("Ended() = %+v, want a1 %s %q", e, tc.want, fin.Reason)
			}
		})
	}
}
