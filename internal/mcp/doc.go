// Package mcp gives an agent the tools of Model Context Protocol servers
// (github.com/modelcontextprotocol/go-sdk) under exactly the rules of
// agentctl's own tools. Each server tool becomes a tools.Tool named
// <server>__<tool> that joins the run's tools.Registry, so the harness's
// one dispatch path applies to it unchanged: the server's JSON Schema
// checked by tools.Validate, the mode's tool set (read-only mode offers
// only tools without side effects), approval rules (globs such as
// github__*), budget reservation, tool_intent with the idempotency key
// (passed to the server in _meta as MetaIdempotencyKey), reconciliation on
// resume (Idempotent; there is no lookup), the output cap and artifact,
// redaction at the recorder, tool_timeout.
//
// # Servers
//
// A stdio server is a long-lived process started by sandbox.Config.Start:
// the same namespaces, minimal root, hidden paths, network policy, cgroup,
// rlimits and process record as a tool call, in the call's workspace, with
// a scrubbed environment (plus the spec's env). Its stderr is redacted and
// kept (capped) as an artifact. An HTTP server (streamable HTTP) is
// reached only where the sandbox's network rules let a tool reach: any
// host with network: allow, else only the host:port pairs of the
// allowlist, checked at every dial and redirect; no proxy.
//
// Discover starts each server once in a scratch workspace to list its
// tools (at most MaxTools; names a model can call; schemas the validator
// can check), then stops it; a run starts it again, lazily, in its own
// workspace and sandbox, and the runner stops it when the invocation ends.
// A server that exits mid-call, does not answer within the call's timeout
// or sends what is not MCP is killed, the call is a tool error saying so,
// and the next call starts it afresh (Client).
//
// # Recording and replay
//
// The session header records each server (session.MCPServer: name,
// transport, protocol version, tool list and its hash). Offline returns
// tools that answer from a recording with no server running; Changes
// compares recorded and live tool surfaces for replay and resume.
//
// # Example
//
//	set, err := mcp.Discover(ctx, mcp.Options{Servers: []mcp.Server{{Name: "notes", Command: []string{"notes-server"}}}})
//	if err != nil { ... }
//	defer set.Close()
//	reg, err := tools.NewRegistry(builtins...).With(set.Tools...)
//
// # Concurrency
//
// A Client serializes the calls to its server; Tools of different servers
// may run concurrently. Discover lists servers in parallel.
package mcp
