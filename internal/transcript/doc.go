// Package transcript imports other tools' transcripts as agentctl
// sessions, and exports sessions as ATIF trajectories.
//
// Many production agent sessions already exist on disk as another tool's
// transcript. Imported, they replay, fork, query and bundle like sessions
// agentctl ran itself. Each format maps its records to event kinds:
//
//	claude-code  Claude Code session JSONL (~/.claude/projects/…/<id>.jsonl)
//	             and its sub-agent files (agent-<id>.jsonl, subagents/)
//	             (2.1.3xx: api-request-shape gives the header its system
//	             prompt and attrs tool_definitions, cost-state the source's
//	             cost, source_cost_usd; api-request, api-request-blob,
//	             tools-used and atis-latch are skipped by name)
//	codex        Codex CLI rollout JSONL (~/.codex/sessions/…/rollout-*.jsonl;
//	             0.17x's token_usage_record is skipped by name: the
//	             token_count event carries the same usage)
//	gemini-cli   Gemini CLI session JSONL (~/.gemini/tmp/<project>/chats/
//	             session-*.jsonl), folded as Gemini CLI's loader folds it
//	             (the last copy of a message, $set checkpoints, $rewindTo;
//	             a compression checkpoint is a compaction),
//	             its sub-agents (chats/<session id>/*.jsonl), and the single
//	             .json of versions before 0.39
//	copilot      GitHub Copilot CLI session log
//	             (~/.copilot/session-state/<id>/events.jsonl)
//	amp          Amp threads ($XDG_DATA_HOME/amp/threads/T-<id>.json, one
//	             JSON object the Amp CLI rewrites whole; versions after
//	             0.0.1774569934 keep threads on the server only): each
//	             assistant message one response, a result's time the end
//	             of the tools span that ran it, a Task call's sub-agent
//	             (its steps, in the call's result) a child session
//	cursor       Cursor agent transcripts (~/.cursor/projects/<project>/
//	             agent-transcripts/<id>/<id>.jsonl, and the older <id>.txt):
//	             the conversation only, no times, tokens, model, tool call
//	             ids or tool results (not_recorded; calls are intents)
//	swe-agent    SWE-agent trajectories (*.traj)
//	openhands    OpenHands (V0) event streams / trajectories (a JSON array)
//	inspect      Inspect AI eval logs (.eval zip, .json): one session per
//	             sample and epoch
//	opencode     opencode's SQLite database (opencode.db): one session
//	             per opencode session, in either schema: the
//	             session/message/part tables, each step (step-start …
//	             step-finish) one model call, or the session_message table
//	             of its v2 session runner, each assistant row one model
//	             call (opencodev2.go); the
//	             content hash is of the session's rows, not the file's,
//	             so a session unchanged keeps its id as the database grows
//	atif         Harbor ATIF trajectories (trajectory.json), with their
//	             sub-agent trajectories; a result without source_call_id
//	             is paired with its step's unanswered call by position when
//	             the counts match (attrs paired_by), else kept as a
//	             user_message with attrs atif_observation, which the export
//	             writes back as an unpaired result
//
// Each format is one registered value (Format: its name, doc line, the
// extensions a folder is read for, a Detect signature over the file's
// head, and for a SQLite file its tables, and its import function),
// registered from its own file's init; Formats, Import, Detect and the
// command's help iterate the registry. `import auto` takes a file only
// when exactly one signature claims it: each format's signature is
// checked against every format's real files (TestSignaturesClaimOnlyTheirOwn),
// and a file none claims, or two do, is refused with every format named.
// otlp is registered by package otelimport, which imports its files.
//
// # What an import holds
//
// One API response of the source becomes one assistant_message and one
// model_call (usage counted once; input_tokens holds every input token
// billed, cache reads and writes included, with the two cache fields as
// the breakdown, and cost_usd priced by pricing.CostOf as a live run
// would be, or, for a model the price table does not know, the cost the
// source recorded; the source's own cost, when it records one, is kept
// beside it in the model_call's attrs as source_cost_usd). A model call the conversation shows no answer of (an
// Inspect scorer's) is a model_call on its own. Each tool call becomes a tool_intent at the time the model
// asked for it and a tool_result at the time it answered, so the
// tool_calls view has args, times and latency. The header (session_started)
// names the source in its attrs:
//
//	imported_from      the format
//	source_file        the file, as given
//	source_sha256      the file's content hash
//	source_session_id  the source's own id, when it has one
//	source_cwd         the folder the source ran in (never the session's
//	                   workspace: a transcript from elsewhere does not
//	                   choose host folders)
//	source_status      the source's end state (an exit status, a stop
//	                   reason, an agent state), when it records one
//	not_recorded       what the format does not carry (usage, timestamps,
//	                   a system prompt, tool error flags…): left empty,
//	                   never invented
//
// What does not map to a field is kept verbatim in the event's attrs
// (thinking blocks, images, reasoning items, scores), and what is neither
// mapped nor kept is listed by line in the Report, with a code:
//
//	torn_line        the last record is cut short: the sound prefix is
//	                 imported, the rest reported
//	bad_line         a record that is not JSON (not at the end)
//	unknown_record   a record type this importer does not know
//	skipped          a known record that is not part of the conversation
//	                 (file snapshots, titles, hook summaries, duplicates)
//	kept_in_attrs    a record kept verbatim in an event's attrs
//	orphan_result    a tool result whose call the transcript lacks
//	no_result        a tool call the transcript has no result for
//	fork             lines on a branch the conversation left (Claude Code
//	                 rewinds: parentUuid chains that are not the one
//	                 leading to the last message; a result that hangs off
//	                 its own parallel call's line, as 2.1.x writes them, is
//	                 the conversation's, not a branch, and so is a call's
//	                 line whose message.id is on the chain though it hangs
//	                 off a progress line)
//	subagent         a sub-agent imported as a child session
//	not_imported     a record, or a file it refers to (an ATIF sub-agent
//	                 trajectory), that could not be read or was refused
//
// The session id is derived from the format, the part of the file (an
// Inspect sample) and the content hash, so the same file imported twice
// yields the same id.
//
// Imported sessions have no spec and no request digests: their status is
// "imported" (session.StatusImported) with source_status beside it;
// `replay verify` checks their structure only, and `replay run` and
// `replay fork` work from a minimal spec (see package replay and the CLI).
//
// # Inside
//
// Each importer is a value with a method per phase: decode the records,
// find the conversation (Claude Code's parentUuid chain), map each record
// by kind, pair calls with results, finish the header. What the formats
// share is written once: the builder (seqs, notes, the header, the
// report), the open response with the intents and results queued behind
// it, and the latency of a result from its intent (response.go).
//
// # Export
//
// ExportATIF writes any session as an ATIF-v1.7 trajectory. Fields ATIF has
// no place for (seqs, digests, approvals, evaluations, finishes) go into its
// extra objects under "agentctl", so importing the export gives back the
// same events.
package transcript
