package agent

import (
	"context"
	"fmt"
	"os"

	"github.com/agentctl/agentctl/internal/mcp"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// Tools is the spec's registry (runner.SpecTools) with the tools of its
// MCP servers: listed live, in the sandbox (home, the agentctl home, is
// hidden from them), or with offline set the MCP tools the session of
// those events recorded, answering from the recording. Read-only mode
// refuses the lot if any has side effects, whatever the spec came from (a
// file, a session header on resume or fork).
func Tools(sp *spec.Spec, home string, offline ...session.Event) (*tools.Registry, error) {
	var set *mcp.Set
	var err error
	if len(offline) > 0 {
		set, err = offlineMCPTools(sp, offline)
	} else {
		set, err = mcpTools(sp, home)
	}
	if err != nil {
		return nil, err
	}
	return runner.SpecTools(sp, set.Tools...)
}

// mcpOptions maps the spec's mcp_servers and mcp_tools to the mcp
// package's options: HTTP headers read from the variables headers_env
// names, servers listed in the sandbox a run of the spec gives its tools
// (home: the agentctl home, hidden from them).
func mcpOptions(sp *spec.Spec, home string) (mcp.Options, error) {
	opts := mcp.Options{ReadOnly: sp.Mode == "read-only", Decls: map[string]mcp.Decl{}}
	for _, s := range sp.MCPServers {
		srv := mcp.Server{Name: s.Name, Command: s.Command, Env: s.Env, URL: s.URL, Dir: sp.Dir}
		if len(s.HeadersEnv) > 0 {
			srv.Headers = map[string]string{}
			for h, name := range s.HeadersEnv {
				v, ok := os.LookupEnv(name)
				if !ok {
					return opts, fmt.Errorf("mcp server %s: headers_env %s names %s, which is not set; export it (its value is sent as the %s header and never recorded)", s.Name, h, name, h)
				}
				srv.Headers[h] = v
			}
		}
		opts.Servers = append(opts.Servers, srv)
	}
	for name, d := range sp.MCPTools {
		opts.Decls[name] = mcp.Decl{SideEffects: d.SideEffects, Idempotent: d.Idempotent}
	}
	cfg, err := runner.SandboxConfig(sp, home)
	if err != nil {
		return opts, err
	}
	if sp.Sandbox.Unconfined && sandbox.Available() != nil {
		cfg.Unconfined = true
	}
	opts.Env = mcp.Env{Sandbox: cfg, Extra: runner.PassEnv(sp.Sandbox.Env)}
	return opts, nil
}

// mcpTools starts the spec's MCP servers, lists their tools and stops
// them again; a run starts each afresh in its own workspace at its first
// call.
func mcpTools(sp *spec.Spec, home string) (*mcp.Set, error) {
	if len(sp.MCPServers) == 0 {
		return &mcp.Set{}, nil
	}
	opts, err := mcpOptions(sp, home)
	if err != nil {
		return nil, err
	}
	if len(opts.Servers) > 0 && opts.Env.Sandbox != nil && !opts.Env.Sandbox.Unconfined {
		for _, s := range opts.Servers {
			if s.Transport() == mcp.TransportStdio {
				if err := sandbox.Available(); err != nil {
					return nil, fmt.Errorf("mcp server %s runs in the sandbox: %w\n  hint: 'agentctl sandbox check' shows what this machine supports; set sandbox.unconfined: true in the spec to run it without namespaces", s.Name, err)
				}
				break
			}
		}
	}
	return mcp.Discover(context.Background(), opts)
}

// offlineMCPTools are the MCP tools a session recorded, answering with the
// recorded results (replay run --offline): no server runs.
func offlineMCPTools(sp *spec.Spec, evs []session.Event) (*mcp.Set, error) {
	recorded, err := session.HeaderMCPServers(evs[0])
	if err != nil {
		return nil, err
	}
	return mcp.Offline(recorded, evs, sp.Mode == "read-only"), nil
}
