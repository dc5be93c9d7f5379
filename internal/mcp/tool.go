package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// Decl is the spec's declaration about one MCP tool (mcp_tools), which
// overrides what the server's annotations say.
type Decl struct {
	SideEffects *bool
	Idempotent  *bool
}

// Tool is one tool of an MCP server, offered to the model as
// <server>__<tool> and dispatched by the harness like every other tool:
// schema check, mode, approvals, budget, intent, sandbox, output cap,
// timeout, result.
type Tool struct {
	client *Client
	rec    session.MCPTool
	server session.MCPServer // the whole server as the header records it
}

var (
	_ tools.Tool       = (*Tool)(nil)
	_ tools.Reconciler = (*Tool)(nil)
)

// NewTool returns the tool rec of the server c talks to; rec's SideEffects
// and Idempotent say how the harness treats it (see Decide).
func NewTool(c *Client, rec session.MCPTool) *Tool { return &Tool{client: c, rec: rec} }

func (t *Tool) Name() string { return ToolName(t.client.Name(), t.rec.Name) }

func (t *Tool) Description() string { return t.rec.Description }

func (t *Tool) Parameters() json.RawMessage { return t.rec.InputSchema }

func (t *Tool) SideEffects() bool { return t.rec.SideEffects }

// Idempotent reports whether repeating a call with the same key is safe
// (the spec's idempotent, else the server's idempotentHint).
func (t *Tool) Idempotent() bool { return t.rec.Idempotent }

// HasLookup is false: MCP has no way to ask a server for the outcome of a
// call by its key.
func (t *Tool) HasLookup() bool { return false }

// LookupResult always fails; see HasLookup.
func (t *Tool) LookupResult(context.Context, tools.Call) (string, bool, error) {
	return "", false, fmt.Errorf("lookup %s: MCP servers have no lookup by idempotency key", t.Name())
}

// Spawns reports whether the tool's server is a process the sandbox must
// be able to confine (stdio), for the harness's check before dispatch.
func (t *Tool) Spawns() bool { return t.client.Server().Transport() == TransportStdio }

// StopServer stops the tool's server (a stdio server's sandbox is killed);
// the next call starts it again. The runner calls it when an invocation
// ends.
func (t *Tool) StopServer() { t.client.Close() }

// Server is the client of the tool's server.
func (t *Tool) Server() *Client { return t.client }

// MCPServerRecord is the tool's server as the session header records it
// (the runner collects these from the registry).
func (t *Tool) MCPServerRecord() session.MCPServer { return t.server }

// Record is the tool as the header records it.
func (t *Tool) Record() session.MCPTool { return t.rec }

// Run calls the tool on its server. The server runs in call.Sandbox with
// call.Workspace as its working directory (started, or restarted after a
// failure, here); call.Args are passed as they are (the harness validated
// them against the server's schema), call.IdempotencyKey in _meta. The
// call is bounded by call.Timeout: a server that does not answer in time
// is killed and the call is an error saying so. The output is cut to
// call.MaxOutput like a built-in's, and stored whole (it was redacted at
// capture) in call.ArtifactPath when cut.
func (t *Tool) Run(ctx context.Context, call tools.Call) tools.Result {
	if ctx.Err() != nil {
		return tools.Result{Status: session.ResultCancelled, Error: "cancelled"}
	}
	timeout := tools.TimeoutOf(call)
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env := Env{Workspace: call.Workspace, Sandbox: call.Sandbox, Redactor: call.Redactor, Extra: call.Env}
	if call.ArtifactPath != "" {
		env.StderrPath = filepath.Join(filepath.Dir(call.ArtifactPath), "mcp-"+t.client.Name()+".stderr.txt")
	}
	began := time.Now()
	res, err := t.client.Call(callCtx, env, t.rec.Name, call.Args, call.IdempotencyKey)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return tools.Result{Status: session.ResultCancelled, Error: "cancelled; the server was stopped"}
		case callCtx.Err() != nil:
			return tools.Result{Status: session.ResultError, Error: fmt.Sprintf(
				"timed out after %s: MCP server %s did not answer; it was stopped and starts again for the next call", timeout, t.client.Name())}
		case errors.Is(err, ErrServer):
			return tools.Result{Status: session.ResultError, Error: fmt.Sprintf(
				"MCP server %s failed after %s: %s; it starts again for the next call", t.client.Name(),
				time.Since(began).Round(time.Millisecond), strings.TrimPrefix(strings.TrimPrefix(err.Error(), ErrServer.Error()+": "), "mcp: "))}
		}
		return tools.Result{Status: session.ResultError, Error: err.Error()}
	}
	text := call.Redactor.String(res.text)
	out, cut := tools.CapOutput(text, call.MaxOutput)
	r := tools.Result{Status: session.ResultOK, Output: out, Truncated: cut}
	if cut && call.ArtifactPath != "" {
		if f, err := tools.CreateArtifact(call.ArtifactPath); err == nil {
			if _, err := f.WriteString(text); err == nil {
				r.Artifact = call.ArtifactPath
			}
			f.Close()
			if r.Artifact == "" {
				os.Remove(call.ArtifactPath)
			}
		}
	}
	if res.isError {
		r.Status = session.ResultError
		r.Error = "the tool reported an error: " + clip.Bytes(firstLine(text), 300)
	}
	return r
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Decide fills in how the harness treats a listed tool: the spec's
// declaration where it has one, else the server's annotations: side
// effects unless readOnlyHint is true (a tool without annotations is
// assumed to change things), idempotent when idempotentHint is true.
// destructiveHint changes neither (an additive tool is still a side
// effect); it is kept in the record for approval rules and readers.
func Decide(rec session.MCPTool, d Decl) session.MCPTool {
	var ann struct {
		ReadOnly   bool `json:"readOnlyHint"`
		Idempotent bool `json:"idempotentHint"`
	}
	_ = json.Unmarshal(rec.Annotations, &ann)
	rec.SideEffects = !ann.ReadOnly
	rec.Idempotent = ann.Idempotent && rec.SideEffects
	if d.SideEffects != nil {
		rec.SideEffects = *d.SideEffects
	}
	if d.Idempotent != nil {
		rec.Idempotent = *d.Idempotent
	}
	if !rec.SideEffects {
		rec.Idempotent = false
	}
	return rec
}
