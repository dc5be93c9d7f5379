// Package check holds the pure checks on a recorded log: verify (does
// today's projection reproduce every recorded request digest), anchors
// (did each compaction keep what it must), diff (two sessions turn by
// turn) and the reports they return. They read events and nothing else:
// the package imports session and recorder, never the runner, its tools,
// sandbox, MCP, the proxy or a vendor SDK.
//
// It is apart from package replay, which re-executes sessions (Run, Fork,
// ForkExternal) and so links all of those, because the commands that only
// look at a log must not: view, diagnose and `agentctl replay verify`
// stay small and start fast, and a change to the runner cannot change what
// they report. view's TestNoRunnerDeps holds the line.
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
//	rep := replaycheck.Verify(id, evs, replaycheck.VerifyOptions{})
//	if rep.Divergence != nil {
//		fmt.Print(rep.Divergence.Text())
//	}
//
// Importers name the package replaycheck, as a file using it often uses
// package replay too.
//
// A Verifier is the same fold fed one event at a time; VerifyLog drives it
// from recorder.ScanFile, so verifying from disk never holds the log's
// events (optionally decoding on one goroutine and folding on another),
// and VerifyLogs verifies many logs on all CPUs, as `agentctl replay
// verify` does (VerifyStore also checks each log's end against its store).
// A test holds the Verifier to the batch fold on every fixture and damaged
// variants of them; the few logs it cannot fold in one pass (seqs out of
// order, a compaction through a seq before an earlier one's) are handed
// back and verified whole.
//
// # Anchors, Diff
//
// Anchors checks every compaction: the first user message verbatim and
// the needles in the projection after it, and source_seqs naming original
// events only. Diff compares two sessions turn by turn (Turns aligns them).
//
// The tests record fixture agents with today's runner
// (replay/internal/replaytest): the checks do not link it, their tests do,
// because the log that matters most is one today's runner just wrote.
//
// Nothing here is safe for concurrent use on the same value; distinct
// sessions may be verified in parallel.
package check
