// Package replaymatch decides whether a request a program sends during a
// replay is the one the recorded session holds at that turn. It is the one
// matcher every replay path uses (proxy --replay, eval replay scenarios,
// replay run and replay fork of an external agent: all through
// proxy.Replay), whatever the session's origin.
//
// # What a turn is compared with
//
// The session's events are the reference: Recording folds them with
// package session's Projector (no second fold) up to each turn's answer,
// so turn N expects the conversation the session held when model call N
// was made, with the header's system text and tool list and the turn's
// model. That works for every origin: the proxy, collect and import otlp,
// a transcript import, agentctl run. Where the proxy kept the request's
// bytes (request_artifact), that request is the turn's (Matcher.Recorded):
// the events were made from it, and it also holds what they keep once per
// session (that call's system text and tools) and a history the client
// rewrote, which the events hold as a compaction.
//
// Compare checks, in order, the model (a dated name the provider answered
// with matches the alias asked for), the tool names, the system text and
// each message: role, the call a result answers, text, tool calls (id,
// name, arguments as JSON values). The first difference is returned with
// the turn, the message, the field and an excerpt of both sides around
// the first differing character. A session collected with content capture
// off (header content_captured false) compares only the model and tools
// (the proxy checks the turn count); NewMatcher refuses it under Strict.
//
// # Normalisers
//
// Before two differing texts are compared they are normalised on both
// sides by the table (Register, Normalisers): each replaces the volatile
// spans of one kind by a placeholder naming it, so a replay from another
// folder, on another day, still matches while a real difference still
// fails. They run in Order: the user's (Ignore) first, the two runs'
// folders (OrderPath), then the clients' blocks (order 0, the default),
// then the generic spans (OrderGeneric: temp paths, UUIDs, dates and
// times, measured durations, hex ids). A client's normalisers live in a
// file of their own, normalise_<client>.go, registered from init:
//
//	func init() {
//		Register(Regexp("codex-environment-context", "Codex CLI",
//			"the cwd, date and shell Codex puts in its <environment_context> message",
//			regexp.MustCompile(`(?s)<environment_context>.*?</environment_context>`)))
//	}
//
// each tested on real requests of that client, with a case that must not
// be normalised. Strict runs no table normaliser (the user's still run).
// Every replacement that made a difference go away is counted, by name and
// turn (Matcher.Changes), for the replay report; a text equal as sent is
// never normalised, so the counts say what the normalisers were needed for.
//
// # Example
//
//	m, err := replaymatch.NewMatcher(replaymatch.NewRecording(events), replaymatch.Options{Ignore: ignores})
//	if err != nil { … }                      // ErrNoContent under Strict
//	if d := m.Check(turn, replaymatch.Request{Model: …, System: …, Messages: …, Tools: …}); d != nil {
//		fmt.Println(d)                         // turn 2, message 3 (tool content): log has "hello", request has "goodbye"
//	}
//	fmt.Println(replaymatch.Summary(m.Changes())) // date-time 3 (turns 1-2), duration 1 (turn 2)
//
// # Cost and concurrency
//
// A replay sends its whole history again at every call. Recording keeps
// a few fold cursors, so turns asked in order cost one fold; a Matcher
// redacts and normalises each distinct text once (a cache bounded to 64
// MiB), so a 1,000-call replay costs a fraction of a millisecond of CPU a
// call (BenchmarkMatch1000). Recording and Matcher are safe for concurrent
// use (Matcher.Recorded before the first Check); the normaliser table is
// written only from init.
package replaymatch
