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
//
// # Where a session's events come from
//
// From its log when the home has it, read a record at a time. The server
// lives as long as the client's session and is asked page after page of
// the same logs, so it keeps a sparse index per log (logindex.go: the
// offset after every 1,024th event, learnt while reading, for 64 logs at
// most) and a later page resumes the recorder's Reader at the nearest
// point before it (recorder.ResumeReader) instead of reading from the
// start. An index holds while the file is the same and has not shrunk; a
// point that misleads anyway (the file cut and written again) fails on
// its first record and the log is read from the start.
//
// A session whose log folder is gone but the history sealed (the home's,
// or the remote's parts) is read from the events view, a range of seqs a
// query, each row made back into its event by history.Row.Event: found by
// id or prefix from the manifest and the parts' session lists (events.go).
//
// # Concurrency
//
// Tools may be called concurrently; the index is shared under a mutex,
// and at most two query databases are open at once.
package mcpserver
