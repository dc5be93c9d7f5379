// Package otelimport reads OpenTelemetry exports at rest into sessions,
// through the one mapping (package otelsession): `agentctl import otlp
// PATH|s3://bucket/prefix`.
//
// # What it reads
//
//   - The Collector's file exporter: OTLP/JSON lines (format: json, one
//     TracesData or LogsData a line) and OTLP protobuf (format: proto,
//     each message after its length as 4 bytes big-endian), either of
//     them zstd- or gzip-compressed;
//   - a single OTLP protobuf message per file, as the Collector's S3
//     exporter writes with marshaler otlp_proto (.binpb) and as receivers
//     capture export bodies;
//   - the S3 exporter's time-partitioned layout:
//     <prefix>/year=YYYY/month=MM/day=DD/hour=HH/minute=mm/<file_prefix>{traces|logs|metrics}_<id>.{json|binpb}[.gz].
//
// A folder (or a bucket prefix) is read whole, its files in name order,
// which is time order in the S3 layout. Whether a file holds traces or
// logs is told by its name (traces, spans, logs) and else by its
// content; metrics files are skipped and said so.
//
// # Incremental
//
// What was imported is recorded in <home>/otlp-imports.json: for each
// file its path (or s3:// URL) and content hash (for an object, its ETag
// and size). An import skips what that record names unchanged, so
// importing the same prefix every minute reads only the new objects. A
// file that changed (a file exporter still appending) is read again, and
// the mapping's own dedup (span ids) keeps what it had: nothing is added
// twice either way. The record is written (atomically) only after the
// sessions are durable, so a killed import is redone, not lost.
//
// # Bounds
//
// A file or object over MaxFileBytes is not read (named in the report),
// a decompressed stream stops at MaxFileBytes too, and a JSON line or
// protobuf frame over MaxMessageBytes is refused; the mapping's own
// limits (otelsession.Options) bound what a span may hold.
package otelimport
