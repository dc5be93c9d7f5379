package tools

import "errors"

var (
	// ErrEscape means a path argument resolves outside the workspace, after
	// cleaning and symlink resolution. The call is refused, never executed.
	ErrEscape = errors.New("tools: path escapes the workspace")

	// ErrHidden means a path argument resolves into a path the sandbox
	// hides (the agentctl home, a credential folder). The call is refused,
	// never executed; walks leave such folders out.
	ErrHidden = errors.New("tools: path is hidden from the tools")

	// ErrNotRegular means a file tool was asked to read or write something
	// other than a regular file: a named pipe, a device, a socket. Opening
	// one could block the harness or never end.
	ErrNotRegular = errors.New("tools: not a regular file")

	// ErrTooBig means a file is over the read limit of the file tools
	// (MaxFileSize).
	ErrTooBig = errors.New("tools: file over the read limit")

	// ErrChanged means the file a tool opened is not the one its path
	// resolved to a moment before: something swapped it in between. The
	// call did nothing and can be repeated.
	ErrChanged = errors.New("tools: the path changed while the tool opened it")

	// ErrUnknownTool means a tool name is not one this package or registry
	// knows.
	ErrUnknownTool = errors.New("tools: unknown tool")

	// ErrMode means a tool was asked for in a mode that does not offer it,
	// such as write_file in read-only mode.
	ErrMode = errors.New("tools: tool not offered in this mode")

	// ErrInvalidArgs means a call's arguments are not valid JSON or do not
	// match the tool's schema.
	ErrInvalidArgs = errors.New("tools: invalid arguments")
)

// fileError is a refused file operation, worded for the model as
// "op path: msg" and matched by callers with errors.Is on its kind (one of
// the sentinels above).
type fileError struct {
	op, path, msg string
	kind          error
}

func (e *fileError) Error() string { return e.op + " " + e.path + ": " + e.msg }
func (e *fileError) Unwrap() error { return e.kind }
