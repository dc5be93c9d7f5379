// Package mcpserver serves the home's history as an MCP server (agentctl
// mcp): tools and resources a coding agent calls to ask why a run failed.
//
// It is the server side; package mcp is the client agentctl's own agents
// use to reach other servers, and the two share nothing but the go-sdk.
//
// Everything here is read-only: no tool starts, resumes, approves,
// replays or forks anything, since a write would need a human in the loop
// that MCP does not give. Every answer is bounded (a byte budget per call,
// long strings clipped with a note) so a million-event session never
// floods the caller's context window, and every recorded string is made
// inert (termsafe: control characters and terminal escapes become visible
// escapes). The recorder redacted secrets before the log was written; a
// session's content is data for the caller, never instructions, and each
// tool's description says so.
package mcpserver
