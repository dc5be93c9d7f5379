package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
)

func init() {
	modelapi.Register(modelapi.API{
		Name:     "responses",
		Provider: providerName,
		KeyEnv:   keyEnv,
		BaseURL:  baseURL,
		Wire:     responses{},
	})
}

// responses is the Responses API wire.
type responses struct{ envelope }

func (responses) Routes() []modelapi.Route {
	return []modelapi.Route{{Method: http.MethodPost, Path: "/v1/responses", Op: modelapi.OpGenerate, API: "responses"}}
}

func (responses) ParseRequest(c *modelapi.Call) error {
	var r struct {
		Model           string          `json:"model"`
		Stream          bool            `json:"stream"`
		MaxOutputTokens int64           `json:"max_output_tokens"`
		Instructions    json.RawMessage `json:"instructions"`
		Metadata        json.RawMessage `json:"metadata"`
		Input           json.RawMessage `json:"input"`
		Tools           []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.Body, &r); err != nil {
		return badf("responses request: %v", err)
	}
	if r.Model == "" {
		return badf("responses request: model is required")
	}
	c.Model, c.Stream, c.MaxTokens, c.Metadata = r.Model, r.Stream, r.MaxOutputTokens, r.Metadata
	system := []string{}
	if s := modelapi.Text(r.Instructions); s != "" {
		system = append(system, s)
	}
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		c.Messages = []session.Message{{Role: session.RoleUser, Content: s}}
	} else {
		var items []struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Input     string          `json:"input"`
			Output    json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(r.Input, &items); err != nil {
			return badf("responses request: input: want a string or an array of items: %v", err)
		}
		for i, it := range items {
			switch {
			case it.Type == "function_call" || it.Type == "custom_tool_call":
				args := modelapi.Args(it.Arguments)
				if it.Type == "custom_tool_call" {
					args, _ = json.Marshal(map[string]string{"input": it.Input})
				}
				tc := session.ToolCall{ID: it.CallID, Name: it.Name, Args: args}
				if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == session.RoleAssistant && c.Messages[n-1].Seq == -1 {
					c.Messages[n-1].ToolCalls = append(c.Messages[n-1].ToolCalls, tc)
				} else {
					c.Messages = append(c.Messages, session.Message{Role: session.RoleAssistant, ToolCalls: []session.ToolCall{tc}, Seq: -1})
				}
				continue
			case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
				c.Messages = append(c.Messages, session.Message{Role: session.RoleTool, Content: modelapi.Text(it.Output), ToolCallID: it.CallID})
			case it.Type == "reasoning" || it.Type == "item_reference":
				continue
			case it.Type == "message" || it.Type == "":
				switch it.Role {
				case "system", "developer":
					system = append(system, modelapi.Text(it.Content))
				case "user":
					c.Messages = append(c.Messages, session.Message{Role: session.RoleUser, Content: modelapi.Text(it.Content)})
				case "assistant":
					// One assistant turn may be a message item followed by
					// its function_call items: they join it.
					c.Messages = append(c.Messages, session.Message{Role: session.RoleAssistant, Content: modelapi.Text(it.Content), Seq: -1})
					continue
				default:
					return badf("responses request: input[%d]: unknown role %q", i, it.Role)
				}
			default:
				// Items this version does not model (web_search_call, …)
				// are not messages; they stay in the raw request artifact.
				continue
			}
		}
	}
	for i := range c.Messages {
		c.Messages[i].Seq = 0
	}
	if len(c.Messages) == 0 {
		return badf("responses request: input must not be empty")
	}
	c.System = strings.Join(system, "\n\n")
	for _, t := range r.Tools {
		if t.Name != "" {
			c.Tools = append(c.Tools, t.Name)
		}
	}
	return nil
}

func (responses) ParseResponse(body []byte, stream bool, reqModel string) (provider.Response, error) {
	return provider.ParseResponses(body, stream, reqModel)
}

func (responses) ResponseID(session string, turn int) string {
	return fmt.Sprintf("resp_%s_%d", session, turn)
}

func (responses) NewEncoder(w http.ResponseWriter, stream bool, id, model string) modelapi.Encoder {
	return &resEncoder{w: modelapi.Writer{W: w, Stream: stream}, id: id, model: model}
}

type resEncoder struct {
	w         modelapi.Writer
	id, model string
	seq       int  // sequence_number
	inText    bool // a text part is open
}

func (e *resEncoder) Began() bool { return e.w.Began() }

func (e *resEncoder) event(typ string, fields modelapi.Obj) {
	fields["type"] = typ
	fields["sequence_number"] = e.seq
	e.seq++
	e.w.Event(typ, fields)
}

func (e *resEncoder) begin() {
	if e.w.Begin() && e.w.Stream {
		e.event("response.created", modelapi.Obj{"response": e.object(nil, "in_progress")})
	}
}

func (e *resEncoder) Text(delta string) {
	e.begin()
	if !e.w.Stream || delta == "" {
		return
	}
	if !e.inText {
		e.inText = true
		e.event("response.output_item.added", modelapi.Obj{"output_index": 0, "item": modelapi.Obj{"id": e.id + "_msg", "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
		e.event("response.content_part.added", modelapi.Obj{"item_id": e.id + "_msg", "output_index": 0, "content_index": 0, "part": modelapi.Obj{"type": "output_text", "text": "", "annotations": []any{}}})
	}
	e.event("response.output_text.delta", modelapi.Obj{"item_id": e.id + "_msg", "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []any{}})
}

func (e *resEncoder) output(r provider.Response) []any {
	out := []any{}
	if r.Text != "" || r.Refusal != "" {
		part := modelapi.Obj{"type": "output_text", "text": r.Text, "annotations": []any{}}
		if r.Refusal != "" {
			part = modelapi.Obj{"type": "refusal", "refusal": r.Refusal}
		}
		out = append(out, modelapi.Obj{"id": e.id + "_msg", "type": "message", "role": "assistant", "status": "completed", "content": []any{part}})
	}
	for i, tc := range r.ToolCalls {
		out = append(out, modelapi.Obj{"id": fmt.Sprintf("%s_fc%d", e.id, i), "type": "function_call", "status": "completed",
			"call_id": tc.ID, "name": tc.Name, "arguments": string(tc.Args)})
	}
	return out
}

func (e *resEncoder) object(r *provider.Response, status string) modelapi.Obj {
	o := modelapi.Obj{"id": e.id, "object": "response", "created_at": 0, "status": status, "model": e.model,
		"output": []any{}, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "error": nil, "incomplete_details": nil}
	if r != nil {
		o["output"] = e.output(*r)
		o["usage"] = modelapi.Obj{"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens, "total_tokens": r.InputTokens + r.OutputTokens,
			"input_tokens_details": modelapi.Obj{"cached_tokens": r.CacheReadTokens}, "output_tokens_details": modelapi.Obj{"reasoning_tokens": 0}}
		if r.FinishReason == provider.FinishLength {
			o["status"] = "incomplete"
			o["incomplete_details"] = modelapi.Obj{"reason": "max_output_tokens"}
		}
	}
	return o
}

func (e *resEncoder) Finish(r provider.Response) {
	e.begin()
	if !e.w.Stream {
		e.w.JSON(e.object(&r, "completed"))
		return
	}
	if e.inText {
		e.event("response.output_text.done", modelapi.Obj{"item_id": e.id + "_msg", "output_index": 0, "content_index": 0, "text": r.Text, "logprobs": []any{}})
		e.event("response.content_part.done", modelapi.Obj{"item_id": e.id + "_msg", "output_index": 0, "content_index": 0, "part": modelapi.Obj{"type": "output_text", "text": r.Text, "annotations": []any{}}})
	}
	for i, it := range e.output(r) {
		item := it.(modelapi.Obj)
		if item["type"] == "function_call" {
			added := modelapi.Obj{}
			for k, v := range item {
				added[k] = v
			}
			added["arguments"], added["status"] = "", "in_progress"
			e.event("response.output_item.added", modelapi.Obj{"output_index": i, "item": added})
			e.event("response.function_call_arguments.delta", modelapi.Obj{"item_id": item["id"], "output_index": i, "delta": item["arguments"]})
			e.event("response.function_call_arguments.done", modelapi.Obj{"item_id": item["id"], "output_index": i, "arguments": item["arguments"]})
		} else if !e.inText {
			e.event("response.output_item.added", modelapi.Obj{"output_index": i, "item": modelapi.Obj{"id": item["id"], "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
		}
		e.event("response.output_item.done", modelapi.Obj{"output_index": i, "item": item})
	}
	final := e.object(&r, "completed")
	typ := "response.completed"
	if final["status"] == "incomplete" {
		typ = "response.incomplete"
	}
	e.event(typ, modelapi.Obj{"response": final})
}
