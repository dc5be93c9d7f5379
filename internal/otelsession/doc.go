// Package otelsession turns OpenTelemetry traces and logs that production
// agents already emit (GenAI semantic conventions current and earlier,
// OpenInference, OpenLLMetry, Vercel's AI SDK) into ordinary agentctl
// sessions, so a production conversation can be shown, queried, bundled,
// replayed behind the proxy and forked like one agentctl recorded itself.
//
// It is the one place the mapping lives: `agentctl collect` (a live OTLP
// receiver) and `agentctl import otlp` (files and buckets, package
// otelimport) both hand it OTLP export requests and get back what was
// accepted and what was not. The rules are the format doc's (package
// session's FORMAT.md, "Sessions from OpenTelemetry"); each is tested on
// real captures of real emitters (testdata/otel, oteltest).
//
// # Example
//
//	in, err := otelsession.NewIngester(recorder.Store{Root: home}, otelsession.Options{Source: "collect"})
//	if err != nil { … }
//	defer in.Close()                          // writes what is pending, closes the sessions
//	res, err := in.Traces(ctx, req)           // *coltracepb.ExportTraceServiceRequest
//	// err == nil: every span counted in res.Accepted is durable;
//	// res.Rejected names each span refused and why (partial_success).
//	// errors.Is(err, otelsession.ErrBusy): nothing taken, retry later (429).
//	res, err = in.Logs(ctx, logsReq)          // content log records, any order
//
// # Arrival and durability
//
// Spans and log records arrive in any order and in different requests:
// children before parents, a model call's content (earlier GenAI log
// records) before or after its span, a retried batch after later ones. A
// session's events must still be in conversation order (the proxy's
// replay serves call N to the app's N-th request). So an accepted record
// goes through two steps:
//
//  1. Spool. Traces and Logs check each record (ids, limits, seen
//     before), then append the new ones, as one OTLP protobuf request
//     with every string redacted as a log's are, to the spool: a file of
//     CRC-32C frames under <home>/otlp-spool/<id>/ (spool.go has the
//     format), group-committed (concurrent requests share one write and
//     one fsync). They return only after that append is durable, so an
//     acknowledged span survives kill -9. TracesWire, the receiver's path
//     for protobuf, does this without decoding the request: it reads
//     what the checks need from the bytes (wire.go) and spools the bytes
//     as they came when all of them are taken and none needs redacting.
//     A pending span keeps only its ids, times and session keys in
//     memory, and where its export's frame is in the spool.
//  2. Write. A trace whose last record arrived Options.Settle ago (2s)
//     (Options.SpanWait, 1m, when it holds content log records but no
//     span yet: SDKs export log records sooner than spans, and a model
//     call's span only once the call ended), the oldest pending traces
//     when a request would pass the pending caps, or every pending trace
//     on Flush and Close, is written into its
//     session: its spans sorted by start time, each content log record
//     joined to its span by trace and span id (the spans decoded from
//     their spool frame first), mapped to events appended
//     in one group-committed Append per trace. The session is visible to
//     `sessions`, `show` and `query` from then on, while collecting. A
//     spool file is removed once every record in it is in a session (a
//     new one starts past 64 MiB, so a collector that never idles does
//     not grow one without end).
//
// A trace that cannot be written (its session held by another process,
// its log damaged, the disk full) is set aside, said through
// Options.Logf, and tried again after a delay that doubles up to 30s,
// while the other traces are written; its records stay pending and in
// the spool. Its session is dropped from memory and read again from its
// log, with a new writer, when it is tried again. When a pass wrote
// nothing for a reason that is not one session's (a full disk, an I/O
// error), Traces and Logs refuse new requests with ErrWritesFailing
// (collect answers 503 with Retry-After) until a write succeeds, so the
// spool does not grow past what the disk takes back. A trace too large
// for one log record is written whole: what maps to no event is kept in
// several unmapped_spans events, and an event still over the record
// limit (an attribute larger than a record under a raised MaxAttrBytes)
// has its longest strings cut, with attrs cut_to_fit saying how much.
//
// NewIngester recovers: it makes live the sessions earlier runs wrote
// (header attrs imported_from "otlp") most recently, up to
// Options.MaxLiveSessions (one whose log is damaged is skipped, and
// said), with their conversations and the span ids in
// them (each event of a span carries attrs trace_id and span_id; kept
// spans, in otel_spans, too), and then reads the spool files a killed run
// left (ones no live Ingester holds the lease of), writing what they hold
// that the sessions do not. A spool file cut short by the crash is read
// to its last whole frame (that frame was never acknowledged); one
// damaged in the middle does not stop NewIngester: what comes before the
// damage is written, and the file, said through Options.Logf, is kept
// as <dir>.damaged for a human (later starts skip it).
// A span seen before, pending or written, in this run or an earlier one,
// is answered as accepted and adds nothing; so is a content log record of
// a span an earlier run wrote (log records carry no id of their own;
// within a run they are told apart by their bytes). The content records
// of a model call that arrive after its span was written join the
// conversation then (what the call's input adds, its answer; attrs
// late_content), unless the conversation went on past that call: then
// they are kept in the attrs of the session's next events (otel_spans,
// late_log_record), not dropped.
//
// Memory stays bounded however long collect runs: after each write pass
// the sessions written longest ago beyond Options.MaxLiveSessions, and
// unwritten for Options.EvictIdle (any beyond 4x MaxLiveSessions), are
// closed and forgotten (conversation, span ids seen); a trace that comes
// back for one reads it again from its log (its id derives from the
// session key or the trace id), and the spans it already holds are
// dropped there. A trace with no session key that continues the
// conversation of an evicted session in a new trace starts a session of
// its own.
//
// # Limits
//
// Options bound what one session takes (MaxSpansPerSession, counted per
// session key, else per trace), one attribute (MaxAttrBytes, a span or
// record with a larger one is refused whole) and what waits in memory to
// be written (MaxPending records, MaxPendingBytes of the exports they came
// in, counting requests being spooled: at either the oldest pending
// traces are written at once; a request that still finds no room within
// 5 s, held by requests in flight, is refused whole with ErrBusy, which
// says how long the backlog takes to write, so the receiver answers 429
// / RESOURCE_EXHAUSTED with that Retry-After). A refusal
// names its reason ("attribute gen_ai.input.messages is 3 MiB, over the 1
// MiB limit"). What decoding an export will allocate is bounded before
// it is decoded: DecodeCost (protobuf) and JSONDecodeCost count it on
// the bytes (messages by type, repeated elements, strings), and refuse
// nesting past MaxDepth; a receiver reserves that, or refuses the export
// (package collect, `import otlp`). The seen-set keeps a key per span of the live sessions and
// the pending traces.
//
// # Concurrency
//
// Traces, Logs, Flush, Sessions and Close are safe for concurrent use.
// Concurrent requests share the spool's group commit; writing sessions is
// one pass at a time (a background goroutine every Settle/2, unless
// Options.NoBackground). Only one process may collect into a home's
// sessions at a time: a session being written is leased.
package otelsession
