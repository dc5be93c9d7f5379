// Package remote keeps an agentctl home's history on S3-compatible object
// storage, so that runs on machines that share no filesystem (CI runners)
// answer SQL together. agentctl grows no server: the bucket is the shared
// layer, and what is in it is plain Hive-partitioned Parquet that DuckDB,
// ClickHouse, Trino or Spark read directly.
//
// # Layout
//
// Under the remote's prefix (s3://bucket/prefix):
//
//	history/date=YYYY-MM-DD/push-<sha256/16>.parquet   sessions one push sealed that day
//	history/date=YYYY-MM-DD/seg-<sha256/16>.parquet    a remote compaction's merge of pushes
//	history/evals/date=YYYY-MM-DD/eval-<digest/16>.parquet   one eval report, as the home sealed it
//	sessions/<id>/events.log                            a finished session's log, byte for byte
//	bundles/<id>.tar.zst                                a finished session's debug bundle (push --bundles)
//	locks/compact.lease                                 held while a remote compaction runs
//
// Parquet objects have the columns of the local history (history.Row) and
// are named after the SHA-256 of their bytes, so an object is never
// rewritten: the same name always holds the same bytes. An eval report
// object is the home's file byte for byte (history.EvalRow), named after
// the report's digest; it is pushed when the listing lacks it, checked on
// download against its name, never compacted, and read by the eval views.
//
// # Consistency with many writers
//
//  1. Every object is created with a conditional PUT (If-None-Match: *). A
//     PUT that finds its key taken is not an error for content-addressed
//     names (the bytes are the same) and for session logs whose remote copy
//     has the local size; it never overwrites.
//  2. The only object rewritten is the lease, and only with If-Match on the
//     ETag its writer read (taking over an expired lease, renewing one).
//  3. A session may be in several objects (pushed again after a resume, two
//     homes pushing the same import, a compaction killed after uploading its
//     segment). Readers keep, for each session, the rows of the object that
//     holds its highest last seq, ties going to the smallest key; the rows
//     are the same in every object of a tie, so nothing is lost or counted
//     twice. Local sessions (those under the home) win over remote ones.
//  4. Remote compaction takes the lease, merges each date's small objects
//     into one segment by rule 3, uploads it, checks that it still holds the
//     lease, and only then deletes the merged objects. Killed anywhere, it
//     leaves either the old objects, or the old objects and the segment
//     (rule 3 reads them as one), or fewer old objects; the rerun converges.
//  5. A home records what it pushed (<home>/remote/<hash>/PUSHED), so
//     pushing twice uploads nothing, even after a compaction has merged the
//     first push's objects away.
//
// # Cache
//
// Reading commands download objects into <home>/remote/<hash>/objects/,
// keyed by ETag: an object whose listed ETag is the one cached is not
// downloaded again, and a cached object no longer listed is removed. A
// downloaded Parquet object is read whole before it is used; a damaged one
// is named on the warning writer and skipped. A downloaded log is checked
// by the recorder's reader like any log handed over from elsewhere.
//
// # Trust
//
// A bucket is written by others. Only keys of the layout above are read
// (a key decides a path in the cache, so one like history/../x is
// ignored), no object over MaxObjectBytes is downloaded, no read goes
// past the size the listing gave (an object served larger is damaged and
// skipped, or for a session log an error), every Parquet
// object is read whole (malformed input is an error, never a crash)
// before it is used, and a fetched log goes through the recorder's
// checks. Nothing in an object decides which host paths are written.
//
// # Example
//
//	r, err := remote.Open(ctx, "s3://runs/agentctl", home)
//	res, err := r.Push(ctx, remote.PushOptions{})
//	files, err := r.Pull(ctx, os.Stderr)   // local Parquet copies for package query
//
// # Concurrency
//
// A Remote is for one goroutine at a time; any number of processes, on any
// number of machines, may push, pull and query one bucket at once.
// Compactions serialize on the lease.
package remote
