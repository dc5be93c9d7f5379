package tools

import "errors"

var (
	// ErrEscape means a path argument resolves outside the workspace, after
	// cleaning and symlink resolution. The call is refused, never executed.
	ErrEscape = errors.New("tools: path escapes the workspace")

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
