// Package bundle packs one recorded session into a debug bundle, a
// zstd-compressed tar file that a human, a reviewer model or `agentctl
// query --bundle` reads long after the worker that ran the session is gone,
// and unpacks such bundles safely.
//
// # Example
//
//	// A whole bundle at the path, or what was there before, even after a
//	// power cut:
//	m, size, err := bundle.WriteFile(ctx, id+".tar.zst", recorder.Store{Root: home}, id, bundle.Options{})
//	// Or into any writer:
//	m, err = bundle.Write(ctx, w, recorder.Store{Root: home}, id, bundle.Options{})
//	...
//	m, err = bundle.Extract(ctx, r, "out", bundle.ExtractOptions{})
//
// # Format
//
// A bundle is a POSIX (PAX) tar stream compressed as a sequence of zstd
// frames (any zstd decoder reads it; `tar --zstd -xf` works). Members, all
// regular files, in this order:
//
//	events.parquet       the events, with the history's schema (package history)
//	events.jsonl         the events as `agentctl show --json` prints them
//	checkpoints.jsonl    the runner's checkpoints, when the session has any
//	last_state.json      the state folded from the whole log (see State)
//	trace.json           OTLP/JSON of the session's spans (when a tracer is given)
//	tool_calls.csv       ts,tool,input_hash,latency_ms,status,error,call_id,intent_seq,result_seq
//	env.txt              who bundled what: agentctl version and commit, the
//	                     recorded version, harness commit, pinned model, spec hash, OS
//	workspace.diff       git diff of the workspace against the run's initializer
//	                     commit, untracked files included (git workspaces only),
//	                     made through package gitsafe; a repository it refuses
//	                     gets a one-line note saying why instead
//	workspace.tar.zst    the session's workspace as a tar.zst of its own
//	progress/<name>      the agent's progress files (PROGRESS.md, feature lists, ...)
//	artifacts/<path>     large tool outputs kept whole
//	children/<id>/...    with WithChildren: the same members for each child session
//	MANIFEST             JSON: format, version, session id and, for every member
//	                     above, its name, size and sha256; always the last member
//
// workspace.tar.zst is stored in raw (uncompressed) zstd blocks of the
// outer stream, so its bytes are compressed once. Its tar has plain USTAR
// headers, as `tar -c` writes them (PAX only for names USTAR cannot hold):
// no owners, no access or change times, modification times in whole
// seconds, entries in sorted order. It is a sequence of independent zstd
// frames of about 4 MiB of tar each (1 MiB window), compressed on
// Options.Concurrency goroutines that each read the files of their frame
// (one frame when Concurrency is 1). When the output is a file, it is
// written straight into the bundle: its tar header goes out with size 0 and
// is rewritten in place at the end; other outputs get it through a
// temporary file.
//
// Memory: about 5 MiB per compressing goroutine (the encoder's history of
// twice the window and its match tables, a read buffer, and up to 1 MiB of
// compressed frames held until the frames before them are written),
// whatever the workspace's size; the outer stream's encoder is one of them.
// A session's log is read a record at a time for each member made of its
// events, never held: what stays is its fold (its calls and the
// projection that last_state.json holds) and a batch of Parquet rows.
//
// # Secrets
//
// Logs, artifacts and traces are redacted when they are recorded. The
// bundle also redacts what it copies from the workspace that was never
// recorded: the values of .env* files (in the diff, in progress files and in
// the .env* files themselves inside workspace.tar.zst) and token formats
// (see package redact) in the diff and progress files. Other workspace files
// are copied as they are.
//
// # Reading hostile bundles
//
// Extract treats its input as hostile and reads it twice. The first pass
// writes nothing: the zstd decoder's memory is capped, the bytes inflated
// past the first RatioSlack may be at most MaxRatio times the compressed
// bytes read so far (so a zstd bomb costs a fraction of a second, and any
// bundle at most MaxRatio times its size in work), member names must be
// local paths (no "..", no absolute path), only regular files and folders
// are accepted (links, devices and fifos are refused), members larger than
// MaxMember or a total beyond MaxTotal are refused from their headers,
// duplicates are refused, and every member is checked against the MANIFEST
// (its last member). Only a bundle that passed is unpacked, by the second
// pass, under an os.Root in a fresh folder beside the target, each member
// checked at its header against what the first pass verified; the folder is
// renamed into place when everything checked out. So a bundle whose members
// are not the ones its MANIFEST declares costs a read, never disk space.
//
// # Concurrency
//
// Write reads a session that may still be running; it bundles the events
// that were on disk when it read the log. Functions are safe for concurrent
// use on different outputs.
package bundle
