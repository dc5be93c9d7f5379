// Package recorder keeps the durable, append-only event log of a session:
// the source of truth that Parquet, OTLP and replay are projections of.
//
// A session lives in a directory of the agentctl home (see [Store]):
//
//	<root>/sessions/<id>/events.log   the log described below
//	<root>/sessions/<id>/lease        who is writing it (see [AcquireLease])
//
// # Example
//
//	st := recorder.Store{Root: ".agentctl"}
//	s, err := st.Create(session.Event{Kind: session.KindSessionStarted, Model: "m"}, recorder.Options{})
//	if err != nil { ... }
//	defer s.Close()
//	evs, err := s.Append(session.Event{Kind: session.KindUserMessage, Text: "hi"})
//	// evs[0].Seq == 2, and the event is on disk.
//
//	evs, tail, err := st.Load(s.ID) // read-only; tail.Torn reports a torn tail
//
// # Concurrency
//
// A [Writer] is safe for concurrent use. Append returns only after the
// records are fsync'd; concurrent callers share one write and one fsync
// (group commit): the first caller to find no flush in progress becomes the
// leader and writes everything queued so far, the others wait for it. After
// a failed write or sync the Writer is failed for good and every later
// Append returns that error, because the file's tail is then unknown. It
// first cuts the file back to the end of the last acknowledged batch, so
// that the log reopens to exactly the events whose Append returned nil.
// Every write goes through Options.FS (package vfs), where the fault tests
// fail, shorten or crash at each operation in turn (fault_test.go).
//
// Only one process may write a session: [Store.Create] and [Store.Open] take
// the session's [Lease] (an exclusive flock) first. Readers ([ReadFile],
// [ScanFile], [Reader]) take no lock and never modify the file; reading a
// log that is being written may report a torn tail, which is the record in
// flight.
//
// [ReadFile] and [ScanFile] read the file whole into one buffer and decode
// each record in place with a session.Decoder. [ScanFile] hands events to a
// callback instead of collecting them, for callers that fold a log (replay
// verify), and its events' strings share the buffer (it is never written
// again); ReadFile's are copies.
// Both make the same checks, in the same order, with the same errors as
// [Reader], which streams from any io.Reader; a test and the fuzz target
// hold them to that.
//
// # Lineage
//
// Sessions form trees: a subagent hangs off the session whose task call
// started it, a fork off the session it copied, a replay off the session
// it replayed. [Store.Lineage] indexes them from the headers alone (the
// first record of each log, [Store.Header]), and every walk of the tree
// (the seal after a run, show --tree, bundle --with-children, replay fork,
// a subagent's depth) uses it or [Store.Ancestors]. The rule of what is a
// child of whom, decided by the child's header (parent_session_id) and
// checked, for a subagent, against the parent's log:
//
//   - a header whose attrs name it side thread n of its parent
//     (side_thread_of, side_thread), in a session whose id is
//     session.SideThreadID(parent, n), is a side thread of the parent: a
//     call of the parent's client that shared nothing with its
//     conversation (session.Route);
//   - else a header with forked_from > 0 is a fork of its parent, whatever else
//     it says (a fork copies its parent's header, so a fork of a subagent
//     still carries the subagent's parent_seq);
//   - else a header whose attrs name replay_of is a replay of its parent;
//   - else it is a subagent of its parent (parent_seq, the seq of the
//     parent's task intent; 0 for an imported sub-agent, whose source names
//     no call). A subagent counts only if the parent's log confirms it: a
//     subagent_started naming the child and, when parent_seq > 0, a
//     tool_intent at that seq of the same call. A header that claims a
//     parent the parent does not confirm is left out with a [Skip] saying
//     why, so a session cannot pull itself into another's bundle.
//   - A header naming itself names no parent. A subagent_started naming a
//     session with no log is reported as a Skip of its parent (outside the
//     part a fork copied). Walks stop at [MaxLineageDepth] generations and
//     at a session met twice (headers that loop).
//
// Side threads, forks and replays are believed from their headers: nothing in the
// parent's log records them.
//
// # Format
//
// All integers are little-endian. A log starts with a 12-byte file header:
//
//	+---------------------------+-------------------+
//	| magic "AGCTLOG\x00" (8 B) | version uint32 (1)|
//	+---------------------------+-------------------+
//
// followed by zero or more frames, back to back, with no padding:
//
//	+----------------+---------------+-----------+--------------------+
//	| length uint32  | crc uint32    | type uint8| payload (length B) |
//	+----------------+---------------+-----------+--------------------+
//	|<------------- frame header: 9 bytes ------>|
//
// where:
//
//   - length is the payload length in bytes, at most [MaxRecordSize] (16 MiB).
//   - crc is CRC-32C (Castagnoli) over the type byte followed by the payload.
//     The length is not covered directly; a damaged length shows up as a
//     checksum mismatch or a frame that runs past the end of the file.
//   - type 0 is reserved as invalid, so that zeroed (preallocated or never
//     written) space never reads as a record. Type 1 ([RecordEvent]) is an
//     event; the payload is its JSON from session.Encode. Other types are
//     unknown to version 1 and are corruption.
//   - Events carry dense sequence numbers: the first record has seq 1 and
//     each next one the previous plus one. The first record of a log made by
//     [Create] is the session_started header.
//   - The payload is one event as UTF-8 JSON (session.Encode: the fields of
//     session.Event with their snake_case names, empty ones left out; the
//     fields each kind uses are listed in package session's FORMAT.md).
//     ts is RFC 3339 with up to nine fraction digits, trailing zeros
//     dropped, as Go's time.Time marshals it: "2026-01-02T03:04:06.5Z".
//     Readers must keep keys they do not know (a newer agentctl wrote them).
//
// # Appends
//
// One Append writes its events' frames back to back with one write and one
// fsync, but it is not atomic: a crash during it can leave any prefix of
// its frames (the torn-tail rules below then keep the whole frames of that
// prefix). Nothing reads two events as a unit: a caller that appends an
// assistant_message and its model_call together may find only the first
// after a crash, and resume folds whatever prefix survived.
//
// # Test vector
//
// A log of two events, the header and a user message, as
// TestFormatVector decodes it from this comment:
//
//	00000000: 4147 4354 4c4f 4700 0100 0000 5e00 0000  AGCTLOG.....^...
//	00000010: 8b65 c3cf 017b 2273 6571 223a 312c 2274  .e...{"seq":1,"t
//	00000020: 7322 3a22 3230 3236 2d30 312d 3032 5430  s":"2026-01-02T0
//	00000030: 333a 3034 3a30 355a 222c 226b 696e 6422  3:04:05Z","kind"
//	00000040: 3a22 7365 7373 696f 6e5f 7374 6172 7465  :"session_starte
//	00000050: 6422 2c22 7365 7373 696f 6e5f 6964 223a  d","session_id":
//	00000060: 2230 3132 3334 3536 3738 3961 6263 6465  "0123456789abcde
//	00000070: 6622 7d49 0000 00f0 a11c 6001 7b22 7365  f"}I......`.{"se
//	00000080: 7122 3a32 2c22 7473 223a 2232 3032 362d  q":2,"ts":"2026-
//	00000090: 3031 2d30 3254 3033 3a30 343a 3036 2e35  01-02T03:04:06.5
//	000000a0: 5a22 2c22 6b69 6e64 223a 2275 7365 725f  Z","kind":"user_
//	000000b0: 6d65 7373 6167 6522 2c22 7465 7874 223a  message","text":
//	000000c0: 2268 6922 7d                             "hi"}
//
// Bytes 0-11 are the file header (magic, version 1). The first frame
// header is 5e000000 (length 94), 8b65c3cf (CRC-32C 0xcfc3658b of the
// type byte 01 and the 94 payload bytes), 01 (an event). The second starts
// at offset 0x73: 49000000 (73 bytes), f0a11c60, 01.
//
// # Reading
//
// Reading ends in exactly one of three ways:
//
//  1. Clean end ([io.EOF]): the last frame ends exactly at the end of the
//     file.
//  2. Torn tail ([ErrTornTail]; [ReadFile] reports it as Tail.Torn with a nil
//     error): the file is shorter than the file header and its bytes are a
//     prefix of a good file header (an empty file included), or the file
//     ends inside a frame header, or
//     a frame is bad (payload past the end of the file, length over the
//     maximum, type 0, a zero frame (nine zero bytes: length 0, crc 0,
//     type 0, the shape of preallocated space), checksum mismatch) and no valid frame
//     starts anywhere in the bytes after the bad frame's first byte. That is
//     what a crash during an append leaves: a partial write, or zeros and
//     garbage after the last good record. The good end is the end of the
//     last valid frame.
//  3. Corruption (an error matching [ErrCorrupt], a [*CorruptError] with the
//     path, offset and reason): a bad frame with a valid frame somewhere
//     after it; a checksum-valid frame whose type is unknown or whose JSON
//     does not decode; a sequence number that is not the previous plus one;
//     or a file header with the wrong magic (also a file shorter than the
//     header whose bytes are not a prefix of it). A crash cannot produce these,
//     so they are never repaired automatically and records are never
//     skipped. (A header with another version fails with
//     [ErrUnsupportedVersion] instead.)
//
// "Valid frame" in rule 2 means: type 1, length within the maximum, the
// whole payload present and the checksum matching. Searching for one is
// what tells damage at the end (a torn write) from damage in the middle (the
// idea of etcd's isTornEntry): whatever a crash destroys, it can only be
// the last write, so nothing intact can follow it. To search, the reader
// holds the rest of the file from the bad frame on in memory.
//
// # Recovery
//
// [OpenWriter] (used to resume a session) recovers a log as follows:
//
//  1. Read the whole file as in "Reading". On corruption return the
//     [*CorruptError] and leave the file untouched.
//  2. On a clean end, append after the last record.
//  3. On a torn tail, first copy the whole original file to path+".broken"
//     (or ".broken.2", ".broken.3", ... if that exists) through a temp
//     file, fsync and rename, and fsync the directory.
//  4. Truncate the log to the end of the last good record and fsync it. If
//     even the file header was torn, rewrite the file header.
//  5. Report what was done in [Recovery]; the next Append continues at the
//     last good seq plus one.
//
// # Disk assumptions
//
//  1. fsync on the file makes its written bytes and size durable; fsync on a
//     directory makes a created or renamed entry durable.
//  2. After a crash, the file holds every byte written before the last
//     successful fsync, possibly followed by part of later writes, zeros or
//     garbage. Bytes before the last fsync are never changed by a crash.
//  3. A crash that persists a later page of an unsynced write but not an
//     earlier one can leave a valid frame after a bad one; that is reported
//     as corruption (a false alarm that needs a person), never as a silent
//     truncation of records.
//  4. Create writes the file header and the first record to a temp file,
//     fsyncs it, links it to the final name (which fails if a log exists),
//     and fsyncs the directory, so a log never exists without its header
//     record.
package recorder
