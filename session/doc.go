// Package session holds agentctl's event model and the projection that turns
// a session log into the messages a model provider receives.
//
// The log is the state: every fact about a run is an Event, appended once
// and never edited. Everything else (provider payloads, checkpoints, Parquet
// rows, spans) is derived from the events, so it can be rebuilt and checked.
// FORMAT.md, beside this file, lists the fields of every kind; with
// recorder's package documentation (the framing) it is enough to write an
// independent reader.
//
// # Projection
//
// Project and its incremental form Projector apply the rules of DESIGN.md:
//
//  1. The system prompt comes first; nothing volatile precedes the log.
//  2. If a compaction exists, the latest one stands for every event up to
//     its Through seq, as a system message "Session so far: <summary>",
//     followed by the first user message, pinned verbatim.
//  3. Every conversational event after Through follows in log order.
//  4. A tool call with no result is closed with {"error":"cancelled_by_user"}
//     (or {"error":"denied"} for a denied approval), so the next request is
//     well formed; a result whose call was compacted away is dropped.
//
// Example:
//
//	p := session.NewProjector(spec.System)
//	for _, e := range events {
//		p.Add(e)
//	}
//	msgs := p.Messages()
//
// # Decoding
//
// Decode parses one record with encoding/json. Decoder gives the same
// results several times faster with a hand-written parser for the records
// the log holds, and hands anything else to Decode; with Shared set, its
// strings share the record's bytes (the recorder reads a log into one
// buffer for that). Tests compare the two on every fixture record, on
// random events and under fuzzing.
//
// Neither Projector nor Event is safe for concurrent mutation.
package session
