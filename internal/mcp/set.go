package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// DiscoverTimeout bounds starting a server and listing its tools.
const DiscoverTimeout = 30 * time.Second

// Options say which servers to use and how their tools are offered.
type Options struct {
	Servers []Server
	// Decls are the spec's mcp_tools, by <server>__<tool>.
	Decls map[string]Decl
	// ReadOnly offers only the tools without side effects (read-only
	// mode: the spec or the server's annotations mark them read-only).
	ReadOnly bool
	// Env is where servers run while their tools are listed: a scratch
	// workspace is made for it when Env.Workspace is empty. Calls run each
	// server afresh in the call's own workspace and sandbox.
	Env Env
	// Timeout bounds the discovery of each server; 0 means DiscoverTimeout.
	Timeout time.Duration
}

// Set is the tools of a spec's MCP servers.
type Set struct {
	// Tools are the tools offered to the model, ready for a registry.
	Tools []tools.Tool
	// Servers are the servers as the header records them.
	Servers []session.MCPServer
	clients []*Client
}

// Close stops every server of the set.
func (s *Set) Close() {
	for _, c := range s.clients {
		c.Close()
	}
}

// Discover starts each server (in a scratch workspace, in opts.Env's
// sandbox), lists its tools, stops it, and returns the tools to offer.
// A server that cannot start or list its tools fails the whole set with
// an error naming it: a run must not go on with part of its tool surface
// missing. Servers are listed in parallel.
func Discover(ctx context.Context, opts Options) (*Set, error) {
	if len(opts.Servers) == 0 {
		return &Set{}, nil
	}
	env := opts.Env
	if env.Workspace == "" {
		dir, err := os.MkdirTemp("", "agentctl-mcp-discover-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		env.Workspace = dir
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DiscoverTimeout
	}
	recs := make([]session.MCPServer, len(opts.Servers))
	errs := make([]error, len(opts.Servers))
	clients := make([]*Client, len(opts.Servers))
	var wg sync.WaitGroup
	for i, srv := range opts.Servers {
		clients[i] = NewClient(srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			recs[i], errs[i] = clients[i].List(lctx, env)
			if errs[i] != nil && lctx.Err() != nil && ctx.Err() == nil {
				errs[i] = fmt.Errorf("mcp: server %s did not list its tools within %s", srv.Name, timeout)
			}
			clients[i].Close()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return assemble(clients, recs, opts)
}

// assemble decides each listed tool's treatment and builds the tools.
func assemble(clients []*Client, recs []session.MCPServer, opts Options) (*Set, error) {
	s := &Set{clients: clients}
	used := map[string]bool{}
	for i, rec := range recs {
		var mine []*Tool
		for j, t := range rec.Tools {
			full := ToolName(rec.Name, t.Name)
			d, ok := opts.Decls[full]
			if ok {
				used[full] = true
			}
			t = Decide(t, d)
			rec.Tools[j] = t
			if opts.ReadOnly && t.SideEffects {
				continue // read-only mode offers no tool with side effects
			}
			mine = append(mine, NewTool(clients[i], t))
		}
		for _, t := range mine {
			t.server = rec
			s.Tools = append(s.Tools, t)
		}
		s.Servers = append(s.Servers, rec)
	}
	for name := range opts.Decls {
		if !used[name] {
			return nil, fmt.Errorf("mcp: mcp_tools names %s, which no server lists (its servers list %s); a misspelt name would leave the declaration unused", name, listed(recs))
		}
	}
	return s, nil
}

func listed(recs []session.MCPServer) string {
	var names []string
	for _, r := range recs {
		for _, t := range r.Tools {
			names = append(names, ToolName(r.Name, t.Name))
		}
	}
	if len(names) == 0 {
		return "no tools"
	}
	if len(names) > 20 {
		return fmt.Sprintf("%s and %d more", joinNames(names[:20]), len(names)-20)
	}
	return joinNames(names)
}

func joinNames(n []string) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Offline returns the tools the recorded servers offered, answering every
// call with the result the recording has for it (by tool, in log order),
// with no server running: replay run --offline. The tools keep the
// recorded names, descriptions, schemas and treatment, so the replay's
// requests and checks are the recording's.
func Offline(recorded []session.MCPServer, evs []session.Event, readOnly bool) *Set {
	fold := session.Fold(evs)
	results := map[string][]tools.Result{}
	for _, c := range fold.Calls {
		if c.RequestSeq == 0 {
			continue
		}
		r := tools.Result{Status: session.ResultError, Error: "the recording has no result for this call"}
		seq := c.ResultSeq
		if c.ReconciledSeq > seq && (c.Reconciled == session.ReconciledRecovered || c.Reconciled == session.ReconciledRepeated) {
			seq = c.ReconciledSeq
		}
		if e, ok := session.EventAt(evs, seq); ok && seq > 0 {
			r = tools.Result{Status: e.Status, Output: e.Output, Error: e.Error}
			if e.Kind == session.KindReconciled {
				r.Status = session.ResultOK
			}
		}
		results[c.Tool] = append(results[c.Tool], r)
	}
	s := &Set{Servers: recorded}
	for _, srv := range recorded {
		for _, t := range srv.Tools {
			if readOnly && t.SideEffects {
				continue
			}
			name := ToolName(srv.Name, t.Name)
			s.Tools = append(s.Tools, &offlineTool{rec: t, name: name, server: srv, results: results[name]})
		}
	}
	return s
}

// offlineTool serves the recorded results of one MCP tool.
type offlineTool struct {
	rec     session.MCPTool
	name    string
	server  session.MCPServer
	mu      sync.Mutex
	results []tools.Result
	next    int
}

var _ tools.Tool = (*offlineTool)(nil)

func (t *offlineTool) Name() string                { return t.name }
func (t *offlineTool) Description() string         { return t.rec.Description }
func (t *offlineTool) Parameters() json.RawMessage { return t.rec.InputSchema }
func (t *offlineTool) SideEffects() bool           { return t.rec.SideEffects }
func (t *offlineTool) Idempotent() bool            { return t.rec.Idempotent }

// MCPServerRecord is the recorded server, for the replay's header.
func (t *offlineTool) MCPServerRecord() session.MCPServer { return t.server }

func (t *offlineTool) Run(ctx context.Context, _ tools.Call) tools.Result {
	if ctx.Err() != nil {
		return tools.Result{Status: session.ResultCancelled, Error: "cancelled"}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next >= len(t.results) {
		return tools.Result{Status: session.ResultError, Error: fmt.Sprintf("offline: the recording has %d calls of %s; the replay made more", len(t.results), t.name)}
	}
	r := t.results[t.next]
	t.next++
	return r
}

// ServersOf lists the MCP servers of a registry's tools as the header
// records them, each once, in the order of their first tool's name.
func ServersOf(reg *tools.Registry) []session.MCPServer {
	var out []session.MCPServer
	seen := map[string]bool{}
	for _, name := range reg.Names() {
		t, _ := reg.Get(name)
		r, ok := t.(interface{ MCPServerRecord() session.MCPServer })
		if !ok {
			continue
		}
		if s := r.MCPServerRecord(); !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	return out
}

// Changes describes, per server, how the tool surface of current differs
// from recorded: a server added or gone, or a different tools hash with
// the tools added, removed and changed. Empty when nothing changed.
func Changes(recorded, current []session.MCPServer) []Change {
	byName := func(ss []session.MCPServer) map[string]session.MCPServer {
		m := map[string]session.MCPServer{}
		for _, s := range ss {
			m[s.Name] = s
		}
		return m
	}
	rec, cur := byName(recorded), byName(current)
	var out []Change
	for _, r := range recorded {
		c, ok := cur[r.Name]
		switch {
		case !ok:
			out = append(out, Change{Server: r.Name, Recorded: r.ToolsHash, Detail: "the server is no longer in the spec"})
		case c.ToolsHash != r.ToolsHash:
			out = append(out, Change{Server: r.Name, Recorded: r.ToolsHash, Current: c.ToolsHash, Detail: toolDiff(r.Tools, c.Tools)})
		}
	}
	for _, c := range current {
		if _, ok := rec[c.Name]; !ok {
			out = append(out, Change{Server: c.Name, Current: c.ToolsHash, Detail: "the server is new: the session did not record it"})
		}
	}
	return out
}

// Change is one server whose tool surface changed.
type Change struct {
	Server   string `json:"server"`
	Recorded string `json:"recorded_tools_hash,omitempty"`
	Current  string `json:"current_tools_hash,omitempty"`
	Detail   string `json:"detail"`
}

func toolDiff(rec, cur []session.MCPTool) string {
	rm := map[string]session.MCPTool{}
	for _, t := range rec {
		rm[t.Name] = t
	}
	cm := map[string]bool{}
	var added, removed, changed []string
	for _, t := range cur {
		cm[t.Name] = true
		r, ok := rm[t.Name]
		switch {
		case !ok:
			added = append(added, t.Name)
		case session.MCPToolsHash([]session.MCPTool{r}) != session.MCPToolsHash([]session.MCPTool{t}):
			changed = append(changed, t.Name)
		}
	}
	for _, t := range rec {
		if !cm[t.Name] {
			removed = append(removed, t.Name)
		}
	}
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"added", added}, {"removed", removed}, {"changed", changed}} {
		if len(p.names) > 0 {
			parts = append(parts, p.what+" "+joinNames(p.names))
		}
	}
	if len(parts) == 0 {
		return "the tool list changed"
	}
	return strings.Join(parts, "; ")
}
