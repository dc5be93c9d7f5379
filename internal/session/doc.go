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
//     followed by the first user message, pinned verbatim. A chunked
//     summary is the parts in force (FORMAT.md: summary_from, kept_from).
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
// # Compaction requests
//
// The requests a compaction sends are pure functions of the log:
// CompactionChunks cuts the new originals (IsOriginal) into chunks at turn
// starts, and CompactionMessages builds each chunk's summary request,
// fitted to a token estimate (EstimateTokens) by cutting its longest
// messages. The runner sends them; replay recomputes them from what the
// compaction event records (CompactionInput) to check the request digests
// of compaction calls, so both use this one copy.
//
// # State
//
// State is the fold of a log into every figure agentctl shows or acts on:
// calls (intent, result, reconciliation, approval), approvals in force and
// pending, tokens, cost, turns, compactions, the model in force, children,
// forks, and the status (running, crashed, corrupt and imported included,
// from two inputs the caller probes: Live and Corrupt). Its doc defines
// each figure once; the runner keeps one incrementally (Add per event) and
// checkpoints it, every reader folds with it, and the SQL views of package
// query compute the same definitions (a test holds them together).
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
// Neither Projector, State nor Event is safe for concurrent mutation.
package session
