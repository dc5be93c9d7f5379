package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The names of the built-in tools.
const (
	NameReadFile  = "read_file"
	NameWriteFile = "write_file"
	NameEditFile  = "edit_file"
	NameListFiles = "list_files"
	NameGrep      = "grep"
	NameBash      = "bash"
)

// builtin is a tool implemented in this package.
type builtin struct {
	name        string
	description string
	parameters  json.RawMessage
	sideEffects bool
	run         func(ctx context.Context, t *builtin, call Call) Result
}

var _ Tool = (*builtin)(nil)

func (t *builtin) Name() string                { return t.name }
func (t *builtin) Description() string         { return t.description }
func (t *builtin) Parameters() json.RawMessage { return t.parameters }
func (t *builtin) SideEffects() bool           { return t.sideEffects }

func (t *builtin) Run(ctx context.Context, call Call) Result {
	if err := ctx.Err(); err != nil {
		return Result{Status: statusCancelled, Error: "cancelled"}
	}
	if err := checkWorkspace(call.Workspace); err != nil {
		return failed(err)
	}
	if t.name == NameBash {
		return t.run(ctx, t, call) // the subprocess keeps its own deadline
	}
	return t.runFileTool(ctx, call)
}

// runFileTool runs a file tool under the call's timeout. Reads and walks
// check the deadline between chunks and entries. A tool without side
// effects is also abandoned at the deadline should one system call hang
// (a stuck network file system): the harness gets its result on time and
// the goroutine ends whenever the kernel lets it. A writing tool is never
// abandoned, so that its result always says what it did to the workspace;
// its I/O is bounded by MaxFileSize and the size of its arguments.
func (t *builtin) runFileTool(parent context.Context, call Call) Result {
	timeout := call.timeout()
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	var res Result
	if t.sideEffects {
		res = t.run(ctx, t, call)
	} else {
		done := make(chan Result, 1)
		go func() { done <- t.run(ctx, t, call) }()
		select {
		case res = <-done:
		case <-ctx.Done():
			res = Result{Status: statusError, Error: "stopped"}
		}
	}
	if res.Status == statusOK || ctx.Err() == nil {
		return res
	}
	if parent.Err() != nil {
		return Result{Status: statusCancelled, Error: "cancelled"}
	}
	return Result{Status: statusError, Error: fmt.Sprintf("timed out after %s", timeout)}
}

// checkWorkspace refuses a workspace that is not an absolute directory, so
// that nothing runs in the harness's own working directory by mistake.
func checkWorkspace(ws string) error {
	if !filepath.IsAbs(ws) {
		return fmt.Errorf("workspace %q is not an absolute path", ws)
	}
	fi, err := os.Stat(ws)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("workspace %s is not a directory", ws)
	}
	return nil
}

// decode validates args against the tool's schema and decodes them into v.
func (t *builtin) decode(args json.RawMessage, v any) error {
	if err := Validate(t, args); err != nil {
		return err
	}
	if len(args) == 0 {
		return nil
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("%w for %s: %v", ErrInvalidArgs, t.name, err)
	}
	return nil
}

// newBuiltin returns a fresh instance of the built-in tool name.
func newBuiltin(name string) *builtin {
	switch name {
	case NameReadFile:
		return &builtin{
			name:        NameReadFile,
			description: "Read a text file in the workspace and return its contents. The path is relative to the workspace root.",
			parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
			run: runReadFile,
		}
	case NameWriteFile:
		return &builtin{
			name:        NameWriteFile,
			description: "Create or overwrite a file in the workspace with the given content. Missing parent directories are created.",
			parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
			sideEffects: true,
			run:         runWriteFile,
		}
	case NameEditFile:
		return &builtin{
			name:        NameEditFile,
			description: "Replace text in a file in the workspace. The old text must occur exactly once in the file; include enough surrounding lines to make it unique.",
			parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root."},
    "old": {"type": "string", "minLength": 1, "description": "The exact text to replace; it must occur exactly once."},
    "new": {"type": "string", "description": "The replacement text."}
  },
  "required": ["path", "old", "new"],
  "additionalProperties": false
}`),
			sideEffects: true,
			run:         runEditFile,
		}
	case NameListFiles:
		return &builtin{
			name:        NameListFiles,
			description: "List the files under a directory of the workspace, recursively and sorted. Directories end with /. The .git directory is skipped.",
			parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory, relative to the workspace root. Defaults to the root."}
  },
  "additionalProperties": false
}`),
			run: runListFiles,
		}
	case NameGrep:
		return &builtin{
			name:        NameGrep,
			description: "Search the text files under a path of the workspace for a Go regular expression (RE2 syntax). Prints file:line: text for each matching line, sorted.",
			parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "Go regular expression (RE2 syntax)."},
    "path": {"type": "string", "description": "File or directory to search, relative to the workspace root. Defaults to the root."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`),
			run: runGrep,
		}
	case NameBash:
		return &builtin{
			name:        NameBash,
			description: "Run a command with bash -c in the workspace (or a directory of it) and return its combined stdout and stderr. There is no terminal, no stdin and no network unless the spec allows it; the environment is minimal; only the workspace and /tmp are writable.",
			parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The bash command line to run."},
    "dir": {"type": "string", "description": "Working directory, relative to the workspace root. Defaults to the root."}
  },
  "required": ["command"],
  "additionalProperties": false
}`),
			sideEffects: true,
			run:         runBash,
		}
	}
	return nil
}

func runBash(ctx context.Context, t *builtin, call Call) Result {
	var a struct {
		Command string `json:"command"`
		Dir     string `json:"dir"`
	}
	if err := t.decode(call.Args, &a); err != nil {
		return failed(err)
	}
	dir := call.Workspace
	if a.Dir != "" {
		resolved, err := Confine(call.Workspace, a.Dir)
		if err != nil {
			return failed(err)
		}
		fi, err := os.Stat(resolved)
		if err != nil {
			return failed(fmt.Errorf("dir %s: %w", a.Dir, err))
		}
		if !fi.IsDir() {
			return failed(fmt.Errorf("dir %s is not a directory", a.Dir))
		}
		dir = resolved
	}
	p := newProc(call, []string{"bash", "-c", a.Command}, dir, scrubbedEnv(call.Workspace, call.Env...))
	r := p.run(ctx)
	out, truncated := r.stdout.Result()
	return r.result(out, truncated, p.timeout)
}
