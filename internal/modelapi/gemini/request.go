package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
)

// The methods of a model the API serves.
const (
	MethodGenerate = "generateContent"
	MethodStream   = "streamGenerateContent"
	MethodCount    = "countTokens"
)

// Route reads a request path of the API below the host:
// /<version>/models/<model>:<method>. ok is false for a path that is not
// one (the caller tries its other routes); err names what is wrong with
// one that is but cannot be served.
func Route(path string) (model, method string, ok bool, err error) {
	rest, found := "", false
	for _, v := range []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"} {
		if r, cut := strings.CutPrefix(path, v); cut {
			rest, found = r, true
			break
		}
	}
	if !found || !strings.Contains(rest, ":") {
		return "", "", false, nil
	}
	model, method, _ = strings.Cut(rest, ":")
	switch method {
	case MethodGenerate, MethodStream, MethodCount:
	default:
		return model, method, true, fmt.Errorf("method %q of %s: the proxy serves :%s, :%s and :%s", method, path, MethodGenerate, MethodStream, MethodCount)
	}
	if model == "" || len(model) > 256 || strings.ContainsAny(model, `/\`) || model == "." || model == ".." {
		return model, method, true, fmt.Errorf("model %q in %s: want one path segment", model, path)
	}
	for _, c := range model {
		if c < 0x20 || c == 0x7f {
			return model, method, true, fmt.Errorf("model %q in %s: control character", model, path)
		}
	}
	return model, method, true, nil
}

// Path is the route of model's method, as Route reads it.
func Path(model, method string) string {
	return "/" + APIVersion + "/models/" + model + ":" + method
}

// Call is a request of the API in the session's terms: what the proxy
// records and replays compare.
type Call struct {
	Model     string
	Stream    bool
	MaxTokens int64
	System    string
	Messages  []session.Message
	Tools     []string
	// Failed holds the ids of the function responses that carry an
	// error (a {"error": …} response).
	Failed map[string]bool
}

// request is the body of generateContent (and of streamGenerateContent
// and countTokens, which take the same one).
type request struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations,omitempty"`
}

type functionDeclaration struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// The JSON Schema of the arguments: parametersJsonSchema takes one as
	// is; parameters (the OpenAPI subset) is read from older clients.
	ParametersJSONSchema any `json:"parametersJsonSchema,omitempty"`
	Parameters           any `json:"parameters,omitempty"`
}

type generationConfig struct {
	MaxOutputTokens int64 `json:"maxOutputTokens,omitempty"`
}

// ParseRequest reads a request of method (MethodGenerate, MethodStream,
// MethodCount) for model. Function calls in the history get the ids the
// answers that made them got (CallID), whatever id the client gave them;
// each function response answers the call of the model's turn before it
// that has its client id, else the first one of its name that nothing
// answered yet.
func ParseRequest(model, method string, body []byte) (Call, error) {
	c := Call{Model: model, Stream: method == MethodStream}
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return c, errors.New("gemini request: body is not a JSON object")
	}
	var r request
	if err := json.Unmarshal(body, &r); err != nil {
		return c, fmt.Errorf("gemini request: %v", err)
	}
	if len(r.Contents) == 0 && method != MethodCount {
		return c, errors.New("gemini request: contents must not be empty")
	}
	if r.GenerationConfig != nil {
		c.MaxTokens = r.GenerationConfig.MaxOutputTokens
	}
	if r.SystemInstruction != nil {
		c.System = textOf(r.SystemInstruction.Parts)
	}
	for _, t := range r.Tools {
		for _, d := range t.FunctionDeclarations {
			c.Tools = append(c.Tools, d.Name)
		}
	}
	// The calls of the last model turn not answered yet, with the ids
	// the client gave them.
	type openCall struct{ id, clientID, name string }
	var open []openCall
	for i, ct := range r.Contents {
		switch ct.Role {
		case "model":
			m := session.Message{Role: session.RoleAssistant, Content: textOf(ct.Parts)}
			open = open[:0]
			for _, p := range ct.Parts {
				if fc := p.FunctionCall; fc != nil {
					id := CallID(len(c.Messages), len(m.ToolCalls))
					m.ToolCalls = append(m.ToolCalls, session.ToolCall{ID: id, Name: fc.Name, Args: compact(fc.Args)})
					open = append(open, openCall{id, fc.ID, fc.Name})
				}
			}
			c.Messages = append(c.Messages, m)
		case "user", "":
			for _, p := range ct.Parts {
				fr := p.FunctionResponse
				if fr == nil {
					continue
				}
				id := fr.ID
				k := slices.IndexFunc(open, func(o openCall) bool { return fr.ID != "" && o.clientID == fr.ID })
				if k < 0 {
					k = slices.IndexFunc(open, func(o openCall) bool { return o.name == fr.Name })
				}
				if k >= 0 {
					id = open[k].id
					open = slices.Delete(open, k, k+1)
				}
				out, failed := resultOf(fr.Response)
				if failed {
					if c.Failed == nil {
						c.Failed = map[string]bool{}
					}
					c.Failed[id] = true
				}
				c.Messages = append(c.Messages, session.Message{Role: session.RoleTool, Content: out, ToolCallID: id, Name: fr.Name})
			}
			if t := textOf(ct.Parts); t != "" {
				c.Messages = append(c.Messages, session.Message{Role: session.RoleUser, Content: t})
			}
		default:
			return c, fmt.Errorf("gemini request: contents[%d]: unknown role %q", i, ct.Role)
		}
	}
	return c, nil
}

// textOf joins the text parts that are not thoughts.
func textOf(ps []part) string {
	var b strings.Builder
	for _, p := range ps {
		if !p.Thought && p.FunctionCall == nil && p.FunctionResponse == nil {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 || json.Compact(&b, raw) != nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(b.Bytes())
}

// resultOf reads a function response as the tool's output: the string of
// {"output": "…"} (how gemini-cli and agentctl send a result), else the
// object as compact JSON; failed when it is {"error": …}.
func resultOf(raw json.RawMessage) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 1 {
		for k, v := range m {
			var s string
			if (k == "output" || k == "error") && json.Unmarshal(v, &s) == nil {
				return s, k == "error"
			}
		}
	}
	_, failed := m["error"]
	return string(compact(raw)), failed && len(m) == 1
}

// responseOf is the function response that carries a tool's output: the
// inverse of resultOf.
func responseOf(out string) json.RawMessage {
	return marshal(map[string]string{"output": out})
}

// build makes the body of a request for req, the runner's projection:
// system messages become the systemInstruction, tool messages function
// responses (named after their call), and consecutive contents of one
// role are one content, as the API wants a turn's results. at is the
// index the answer will take in the conversation (CallID).
func build(req provider.Request) (request, int, error) {
	r := request{Contents: []content{}}
	if req.MaxTokens > 0 {
		r.GenerationConfig = &generationConfig{MaxOutputTokens: req.MaxTokens}
	}
	var decls []functionDeclaration
	for _, t := range req.Tools {
		schema, err := provider.SchemaOrEmpty(t.Parameters)
		if err != nil {
			return r, 0, fmt.Errorf("gemini: tool %s: parameters: %w", t.Name, err)
		}
		decls = append(decls, functionDeclaration{Name: t.Name, Description: t.Description, ParametersJSONSchema: schema})
	}
	if len(decls) > 0 {
		r.Tools = []tool{{FunctionDeclarations: decls}}
	}
	var system []string
	names := map[string]string{} // call id → tool name
	at := 0
	add := func(role string, p part) {
		if n := len(r.Contents); n > 0 && r.Contents[n-1].Role == role {
			r.Contents[n-1].Parts = append(r.Contents[n-1].Parts, p)
			return
		}
		r.Contents = append(r.Contents, content{Role: role, Parts: []part{p}})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case session.RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
			continue
		case session.RoleUser:
			add("user", part{Text: m.Content})
		case session.RoleTool:
			name := m.Name
			if name == "" {
				name = names[m.ToolCallID]
			}
			fr := &functionResponse{Name: name, Response: responseOf(m.Content)}
			if !synthesized(m.ToolCallID) {
				fr.ID = m.ToolCallID
			}
			add("user", part{FunctionResponse: fr})
		case session.RoleAssistant:
			if m.Content != "" {
				add("model", part{Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				fc := &functionCall{Name: tc.Name, Args: provider.NormaliseArgs(string(tc.Args))}
				if !synthesized(tc.ID) {
					fc.ID = tc.ID
				}
				add("model", part{FunctionCall: fc})
			}
			if m.Content == "" && len(m.ToolCalls) == 0 {
				// An interrupted turn with no text: the API rejects an
				// empty content, and it carries nothing.
				at++
				continue
			}
		default:
			return r, 0, fmt.Errorf("gemini: message %d: unknown role %q", i, m.Role)
		}
		at++
	}
	if len(system) > 0 {
		r.SystemInstruction = &content{Parts: []part{{Text: strings.Join(system, "\n\n")}}}
	}
	return r, at, nil
}
