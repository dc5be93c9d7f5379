package proxy

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"gopkg.in/yaml.v3"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
)

const testScript = `
turns:
  - text: "Let me look."
    tool_calls:
      - {name: read_file, args: {path: README.md}}
    usage: {input_tokens: 120, output_tokens: 20}
  - text: "Done: the readme says hello."
    usage: {input_tokens: 150, output_tokens: 9}
`

func loadScript(t testing.TB, src string) provider.Script {
	t.Helper()
	var s provider.Script
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// startProxy serves a Server on loopback with in-memory sessions.
func startProxy(t testing.TB, cfg Config) (*Server, *MemSessions, string) {
	t.Helper()
	mem := &MemSessions{}
	if cfg.Sink == nil {
		cfg.Open = mem.Open
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, mem, hs.URL
}

func openaiClient(base string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

func anthropicClient(base string) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
}

// kinds lists the kinds of evs.
func kinds(evs []session.Event) string {
	var k []string
	for _, e := range evs {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, " ")
}

func only(t *testing.T, srv *Server, mem *MemSessions) []session.Event {
	t.Helper()
	waitIdle(t, srv)
	ids := mem.IDs()
	if len(ids) != 1 {
		t.Fatalf("sessions = %v, want exactly one", ids)
	}
	return mem.Get(ids[0]).Events()
}

func TestScriptedChatCompletions(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
			cl := openaiClient(base)
			ctx := context.Background()
			params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("You are terse."), openai.UserMessage("Read the readme."),
			}, Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "read_file"})}}
			var msg openai.ChatCompletionMessage
			if stream {
				st := cl.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				msg = acc.Choices[0].Message
			} else {
				r, err := cl.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				msg = r.Choices[0].Message
			}
			if msg.Content != "Let me look." || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "read_file" || msg.ToolCalls[0].ID != "call_1_0" {
				t.Fatalf("turn 1 = %+v", msg)
			}
			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("hello", msg.ToolCalls[0].ID))
			var text string
			if stream {
				st := cl.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				text = acc.Choices[0].Message.Content
			} else {
				r, err := cl.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				text = r.Choices[0].Message.Content
			}
			if text != "Done: the readme says hello." {
				t.Fatalf("turn 2 text = %q", text)
			}
			evs := only(t, srv, mem)
			want := "session_started user_message assistant_message model_call tool_result assistant_message model_call"
			if got := kinds(evs); got != want {
				t.Fatalf("kinds = %s, want %s", got, want)
			}
			if tr := evs[4]; tr.CallID != "call_1_0" || tr.Tool != "read_file" || tr.Output != "hello" || tr.Status != "ok" {
				t.Errorf("tool_result = %+v", tr)
			}
			if mc := evs[3]; mc.InputTokens != 120 || mc.OutputTokens != 20 || mc.FinishReason != "tool_calls" || mc.RequestDigest == "" {
				t.Errorf("model_call 1 = %+v", mc)
			}
			if evs[0].System != "You are terse." || evs[0].Provider != "openai" || evs[0].Model != "gpt-4o-mini" {
				t.Errorf("header = %+v", evs[0])
			}
		})
	}
}

func TestScriptedMessages(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
			cl := anthropicClient(base)
			ctx := context.Background()
			params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024,
				System:   []anthropic.TextBlockParam{{Text: "You are terse."}},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Read the readme."))},
				Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "read_file", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}}}
			call := func() anthropic.Message {
				t.Helper()
				if !stream {
					m, err := cl.Messages.New(ctx, params, aoption.WithQuery("beta", "true"), aoption.WithHeader("anthropic-beta", "tools-2024-04-04"))
					if err != nil {
						t.Fatal(err)
					}
					return *m
				}
				st := cl.Messages.NewStreaming(ctx, params)
				var m anthropic.Message
				for st.Next() {
					if err := m.Accumulate(st.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				return m
			}
			m := call()
			if len(m.Content) != 2 || m.Content[0].Text != "Let me look." || m.Content[1].Name != "read_file" || m.StopReason != "tool_use" {
				t.Fatalf("turn 1 = %+v", m)
			}
			if m.Usage.InputTokens != 120 || m.Usage.OutputTokens != 20 {
				t.Errorf("usage = %+v", m.Usage)
			}
			params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[1].ID, "hello", false)))
			m2 := call()
			if m2.Content[0].Text != "Done: the readme says hello." || m2.StopReason != "end_turn" {
				t.Fatalf("turn 2 = %+v", m2)
			}
			evs := only(t, srv, mem)
			want := "session_started user_message assistant_message model_call tool_result assistant_message model_call"
			if got := kinds(evs); got != want {
				t.Fatalf("kinds = %s, want %s", got, want)
			}
			var a map[string]any
			json.Unmarshal(evs[3].Attrs, &a)
			if !stream && a["query"] != "beta=true" {
				t.Errorf("model_call attrs = %v, want the query kept", a)
			}
		})
	}
}

func TestScriptedResponses(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
			cl := openaiClient(base)
			ctx := context.Background()
			input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Read the readme.", responses.EasyInputMessageRoleUser)}
			params := responses.ResponseNewParams{Model: "gpt-5", Instructions: openai.String("You are terse."),
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
				Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "read_file", Parameters: map[string]any{"type": "object"}}}}}
			call := func() *responses.Response {
				t.Helper()
				if !stream {
					r, err := cl.Responses.New(ctx, params)
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				st := cl.Responses.NewStreaming(ctx, params)
				var done *responses.Response
				for st.Next() {
					ev := st.Current()
					if ev.Type == "response.completed" {
						r := ev.Response
						done = &r
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				if done == nil {
					t.Fatal("no response.completed")
				}
				return done
			}
			r := call()
			if r.OutputText() != "Let me look." || len(r.Output) != 2 || r.Output[1].Name != "read_file" {
				t.Fatalf("turn 1 = %s", r.RawJSON())
			}
			fc := r.Output[1]
			input = append(input, responses.ResponseInputItemParamOfOutputMessage([]responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{Text: "Let me look."}}}, r.Output[0].ID, responses.ResponseOutputMessageStatusCompleted),
				responses.ResponseInputItemParamOfFunctionCall(fc.Arguments.OfString, fc.CallID, fc.Name),
				fcOutput(fc.CallID, "hello"))
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
			r2 := call()
			if r2.OutputText() != "Done: the readme says hello." {
				t.Fatalf("turn 2 = %s", r2.RawJSON())
			}
			evs := only(t, srv, mem)
			want := "session_started user_message assistant_message model_call tool_result assistant_message model_call"
			if got := kinds(evs); got != want {
				t.Fatalf("kinds = %s, want %s", got, want)
			}
		})
	}
}

func fcOutput(callID, out string) responses.ResponseInputItemUnionParam {
	p := responses.ResponseInputItemParamOfFunctionCallOutput(out)
	p.OfFunctionCallOutput.CallID = openai.String(callID)
	return p
}

// waitIdle waits until no call is being served: the proxy records a call
// after the client has its last byte.
func waitIdle(t testing.TB, srv *Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for srv.inflight.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("calls still in flight after 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
