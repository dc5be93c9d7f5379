// Package tools is what the agent can do to its workspace: the built-in
// tools (read_file, write_file, edit_file, list_files, grep, bash), custom
// tools backed by external commands, the registries that make up a mode's
// tool set, and argument validation against each tool's JSON Schema.
//
// # Why it looks like this
//
// The model's arguments are hostile input. A path argument is the easiest
// way out of the workspace, so every path of every built-in goes through
// Confine: it is cleaned, joined under the workspace root and resolved with
// its symlinks (for a path that does not exist yet, the nearest existing
// parent is resolved and a dangling symlink is followed to its target), and
// anything that lands outside the root is refused with ErrEscape. Confine is
// a check at one moment, so the I/O itself goes through an os.Root opened at
// the resolved root: if a directory is swapped for a symlink between the
// check and the write, the Root refuses to follow it out. Refused calls are
// tool errors the model reads; they never run.
//
// The file tools run in the harness process, not in the sandbox, so they
// hide what the sandbox hides by themselves: a path that resolves into an
// entry of the call's Sandbox.Hide list (the agentctl home, the credential
// folders; the same []string the sandbox gets) or into the target of such
// an entry that is a symlink is refused with ErrHidden, and list_files and
// grep leave such folders out with a note. A hidden path that holds the
// workspace (the home holds sessions/<id>/workspace) hides nothing of it.
//
// Only regular files are read or written: a named pipe, a device or a
// socket is refused with ErrNotRegular before it is opened (and the open
// uses O_NONBLOCK, so one swapped in cannot block), and a file over
// MaxFileSize (16 MiB) with ErrTooBig; reads are capped as well, for a file
// that grows. After the open, the path /proc reports for the descriptor
// must be the resolved path, or the call is refused with ErrChanged: the
// hide list and Call.Gate (the harness's approval rules) are judged on the
// very file the tool acts on. Every file tool runs under Call.Timeout and
// stops on cancellation like bash does.
//
// A mode is a tool set, not a sterner prompt: Builtins("read-only", nil)
// returns a Registry that simply has no write_file, edit_file or bash, and
// CheckMode refuses a read-only registry that holds any tool with side
// effects (a custom tool added to it), whoever built it.
//
// Subprocesses (bash and custom tools) lead their own session and process
// group, so they have no controlling terminal and no TTY on any stream; stdin
// is /dev/null (custom tools get the args object instead), and an
// environment scrubbed to PATH, HOME=<workspace>, LANG=C.UTF-8 and TMPDIR
// plus Call.Env, so the harness's secrets are not inherited. On timeout or
// cancellation the whole group gets SIGTERM and, 200ms later, SIGKILL; when
// the leader exits for any reason the rest of its group is killed, so no
// background grandchild outlives the call. A process that leaves the group
// (setsid) is out of reach of this package; the sandbox's namespaces are
// the place to catch it. Output is kept in memory up to Call.MaxOutput
// (256 KiB by default): the head and the tail, with a "[... N bytes elided
// ...]" note between, and Result.Truncated set.
//
// Side effects are declared, not guessed: write_file, edit_file and bash
// report SideEffects true, so the harness serializes them and records a
// tool_intent with an idempotency key before running them. A custom tool
// can promise idempotency by key or offer a lookup command; both are the
// optional Reconciler interface, used to settle a pending intent after a
// crash.
//
// # Example
//
//	reg, err := tools.Builtins(tools.ModeWrite, nil)
//	if err != nil { ... }
//	t, _ := reg.Get("edit_file")
//	args := json.RawMessage(`{"path":"main.go","old":"foo","new":"bar"}`)
//	if err := tools.Validate(t, args); err != nil {
//		// show err to the model
//	}
//	res := t.Run(ctx, tools.Call{Args: args, Workspace: ws})
//	// res.Status is "ok", "error" or "cancelled".
//
// # Concurrency
//
// Tools, registries and Validate are safe for concurrent use. The harness
// may run tools without side effects concurrently and serializes the rest.
// Cancelling the context of Run kills the call's process group and yields
// Status "cancelled"; Run never retries. A file tool without side effects
// that is stuck in a system call past its timeout is abandoned: Run returns
// "timed out" and the goroutine ends when the kernel lets it.
//
// # Output formats
//
// list_files prints one workspace-relative path per line, sorted, with a
// trailing / on directories, skipping .git, at most 2000 entries. grep prints
// "file:line: text" per matching line, sorted by file then line, skipping
// .git, symlinks, binary files (a NUL in the first 8000 bytes), at most 500
// lines. Neither follows symlinks. Both end with notes in brackets, one a
// line and sorted, for what they left out: "[hidden from the tools, left
// out: .agentctl/]", and for grep "[skipped big: the file is 20.0 GiB, over
// the read limit of 16.0 MiB]" or "[skipped fifo: not a regular file
// (named pipe)]"; at most 20, then a count.
//
// Only Linux is supported: process groups and signals are POSIX, and the
// tests read /proc.
package tools
