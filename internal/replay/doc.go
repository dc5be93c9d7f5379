// Package replay treats recorded sessions as test cases by re-executing
// them: it re-runs them offline with today's tools and forks them against
// another model.
//
// The pure checks on a recorded log (Verify, Anchors, Diff and their
// reports) are in package internal/replay/check, which links none of the runner:
// view, diagnose and `agentctl replay verify` use them without linking the
// machinery this package re-executes sessions with. Run's and Fork's tests
// verify the logs they write with it.
//
// # Run, Fork
//
// Run re-executes a session with provider.Recorded standing in for the
// model (no network, no key) and the tools re-run in a fresh copy of the
// spec's workspace.from, comparing each tool result with the recording.
// Side-effecting calls re-run too, under the idempotency keys the
// recording's calls ran under (runner.Config.Keys), never keys derived
// from the replay's session: a key names the operation (DESIGN.md: derived
// from the requesting event, never from the attempt), and a replay is an
// attempt. A tool that deduplicates by key answers with the effect it
// already had, as it would on a resume. Serving the recorded results
// instead, as Temporal does for activities, was not chosen: Run exists to
// check today's tools against the recording, and a served result checks
// nothing and leaves the fresh workspace without the effect that later
// calls and the done checks read (charge-order's ledger). A task call keeps
// the replay's own key, which names the replay's subagent session.
// Fork copies a log up to a seq into a new session (parent_session_id,
// forked_from), records a model change as model_changed, and continues it
// with runner.Resume. ForkExternal forks an external agent's session,
// whose state is the program's: the agent runs again, the proxy replaying
// its calls up to the seq (proxy.Replay with Until) and serving the rest
// live.
//
// Session and ForkSession are the entries the CLI and evals share: each
// chooses how from the session (agentctl's loop, an external agent, an
// import), with the spec ContinueSpec chooses by one rule (SpecFile: the
// file the session ran from, never the log's copy; none inside the home
// it was recorded in, save the embedded default agent, extracted again).
//
// Subagents replay from their own recordings (children.go): Run serves
// each task call's child with the recorded child's turns and compares its
// results (RunConfig.Recordings); Fork rebuilds a workspace past a task
// call from the child's recorded calls.
//
// # Imported sessions
//
// Package transcript imports other tools' transcripts. An imported session
// has no spec and its tools are not agentctl's: ImportedSpec is the spec
// it replays and forks with, RecordedTools the tools whose results a
// replay gives back, and UnavailableTools those a fork offers (they say
// they cannot run here).
//
// Nothing here is safe for concurrent use on the same value; distinct
// sessions may be replayed in parallel.
package replay
