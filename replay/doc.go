// Package replay treats recorded sessions as test cases: it re-projects
// them with today's code, re-runs them offline, forks them against another
// model, compares them, and checks that compaction kept what it must.
//
// # Verify
//
// Verify folds a log once with a session.Projector and, before each
// model_call, hashes today's projection the way the runner did
// (session.Digest over the messages and the header's tool list) and
// compares it with the recorded request_digest. Messages are hashed once
// each (session.Digester), so verify is linear in the log. The first divergence is
// reported with a stable code and both sides; as the log keeps digests, not
// payloads, the log's side is rebuilt by trying the earlier projection
// rules in Rules, and when none reproduces the digest the messages new since
// the last agreeing call are listed as suspects. Compaction calls are
// recomputed with session.CompactionMessages over the originals (Anchors
// checks what they read). Sessions imported from other tools have no
// digests: their structure only is checked.
//
//	rep := replay.Verify(id, evs, replay.VerifyOptions{})
//	if rep.Divergence != nil {
//		fmt.Print(rep.Divergence.Text())
//	}
//
// A Verifier is the same fold fed one event at a time; VerifyLog drives it
// from recorder.ScanFile, so verifying from disk never holds the log's
// events (optionally decoding on one goroutine and folding on another),
// and VerifyLogs verifies many logs on all CPUs, as `agentctl replay
// verify` does. A test holds the Verifier to the batch fold on every
// fixture and damaged variants of them; the few logs it cannot fold in one
// pass (seqs out of order, a compaction through a seq before an earlier
// one's) are handed back and verified whole.
//
// # Run, Fork, Diff, Anchors
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
// live. Diff compares two sessions turn by turn. Anchors
// checks every compaction: the first user message verbatim and the needles
// in the projection after it, and source_seqs naming original events only.
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
// sessions may be verified in parallel.
package replay
