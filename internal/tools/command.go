package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/internal/sandbox"
)

// LookupNotFound is the exit status a lookup command uses to say it has no
// record of the key.
const LookupNotFound = 3

// IdempotencyKeyEnv is the environment variable that carries the idempotency
// key to custom tools and their lookup commands.
const IdempotencyKeyEnv = "AGENTCTL_IDEMPOTENCY_KEY"

// CommandDef describes a custom tool backed by an external command.
type CommandDef struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the args object; empty means any
	// object.
	Parameters json.RawMessage
	// Command is the program and its arguments. A relative program path
	// with a slash in it ("./deploy.sh", "bin/deploy") is taken relative to
	// Dir; a bare name ("python3") is looked up in PATH; the arguments are
	// passed as they are.
	Command []string
	// SideEffects marks a tool whose calls change the world.
	SideEffects bool
	// Idempotent promises that repeating a call with the same idempotency
	// key is safe.
	Idempotent bool
	// Lookup, if set, is a command that reports the outcome of an earlier
	// call by its key: exit 0 with the result on stdout, exit 3 when the key
	// is unknown. Its program is resolved as Command's is.
	Lookup []string
	// Dir is the directory relative program paths are taken from, usually
	// the directory of the agent spec.
	Dir string
}

// Command is a custom tool that runs an external command. The args object
// is its stdin, the idempotency key is in AGENTCTL_IDEMPOTENCY_KEY, its
// working directory is the workspace, and it runs under the same rules as
// bash: own process group, no TTY, scrubbed environment, timeout.
type Command struct {
	def CommandDef
}

var (
	_ Tool       = (*Command)(nil)
	_ Reconciler = (*Command)(nil)
)

// NewCommand returns the custom tool def describes.
func NewCommand(def CommandDef) *Command {
	def.Command = resolveProgram(def.Command, def.Dir)
	def.Lookup = resolveProgram(def.Lookup, def.Dir)
	return &Command{def: def}
}

func resolveProgram(argv []string, dir string) []string {
	if len(argv) == 0 {
		return nil
	}
	argv = append([]string(nil), argv...)
	if prog := argv[0]; !filepath.IsAbs(prog) && strings.ContainsRune(prog, filepath.Separator) && dir != "" {
		argv[0] = filepath.Join(dir, prog)
	}
	return argv
}

func (c *Command) Name() string        { return c.def.Name }
func (c *Command) Description() string { return c.def.Description }
func (c *Command) SideEffects() bool   { return c.def.SideEffects }

// Parameters returns the schema of the definition, or an open object schema
// if it had none.
func (c *Command) Parameters() json.RawMessage {
	if len(c.def.Parameters) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return c.def.Parameters
}

// Idempotent reports whether the definition promises idempotency by key.
func (c *Command) Idempotent() bool { return c.def.Idempotent }

// HasLookup reports whether the definition has a lookup command.
func (c *Command) HasLookup() bool { return len(c.def.Lookup) > 0 }

// Run runs the command with call.Args on stdin. Exit 0 is ok with stdout,
// followed by stderr if there was any; another exit status is an error
// "exit status N" with the same output. The args are not validated here;
// the harness calls Validate first.
func (c *Command) Run(ctx context.Context, call Call) Result {
	if err := ctx.Err(); err != nil {
		return Result{Status: statusCancelled, Error: "cancelled"}
	}
	if len(c.def.Command) == 0 {
		return failed(fmt.Errorf("tool %s has no command", c.def.Name))
	}
	if err := checkWorkspace(call.Workspace); err != nil {
		return failed(err)
	}
	args := call.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	call.Sandbox = withProgram(call.Sandbox, c.def.Command[0])
	p := newProc(call, c.def.Command, call.Workspace,
		scrubbedEnv(call.Workspace, append(call.Env, IdempotencyKeyEnv+"="+call.IdempotencyKey)...))
	p.stdin, p.split = args, true
	r := p.run(ctx)
	out, truncated := joinOutput(r)
	return r.result(out, truncated, p.timeout)
}

// LookupResult runs the lookup command with key in AGENTCTL_IDEMPOTENCY_KEY,
// in the workspace, under DefaultTimeout. Exit 0 means found, with stdout as
// the output; exit 3 means not found; anything else is an error carrying
// the command's output.
func (c *Command) LookupResult(ctx context.Context, call Call) (output string, found bool, err error) {
	workspace, key := call.Workspace, call.IdempotencyKey
	if len(c.def.Lookup) == 0 {
		return "", false, fmt.Errorf("lookup %s: tool has no lookup command", c.def.Name)
	}
	if err := checkWorkspace(workspace); err != nil {
		return "", false, fmt.Errorf("lookup %s: %w", c.def.Name, err)
	}
	p := newProc(Call{Workspace: workspace, Sandbox: withProgram(call.Sandbox, c.def.Lookup[0]), Timeout: call.Timeout, Env: call.Env},
		c.def.Lookup, workspace, scrubbedEnv(workspace, append(call.Env, IdempotencyKeyEnv+"="+key)...))
	p.split = true
	r := p.run(ctx)
	stdout, _ := r.stdout.Result()
	var exitErr *exec.ExitError
	switch {
	case r.cancelled:
		return "", false, fmt.Errorf("lookup %s: %w", c.def.Name, context.Cause(ctx))
	case r.timedOut:
		return "", false, fmt.Errorf("lookup %s: timed out after %s", c.def.Name, p.timeout)
	case r.err == nil:
		return stdout, true, nil
	case errors.As(r.err, &exitErr) && exitErr.ExitCode() == LookupNotFound:
		return "", false, nil
	}
	out, _ := joinOutput(r)
	out = strings.TrimSpace(out)
	if out != "" {
		return "", false, fmt.Errorf("lookup %s: %w: %s", c.def.Name, r.err, out)
	}
	return "", false, fmt.Errorf("lookup %s: %w", c.def.Name, r.err)
}

// joinOutput is stdout followed by stderr, on a line of its own, if any.
func joinOutput(r procResult) (string, bool) {
	out, t1 := r.stdout.Result()
	errOut, t2 := r.stderr.Result()
	if errOut != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += errOut
	}
	return out, t1 || t2
}

// withProgram returns cfg (nil: the default policy) with the folder of an
// absolute program path made visible read-only in the sandbox, so a tool
// defined next to its spec still runs when that folder is under /tmp or
// another covered path.
func withProgram(cfg *sandbox.Config, program string) *sandbox.Config {
	c := sandbox.Config{}
	if cfg != nil {
		c = *cfg
	}
	if filepath.IsAbs(program) {
		c.ReadOnly = append(c.ReadOnly[:len(c.ReadOnly):len(c.ReadOnly)], filepath.Dir(program))
	}
	return &c
}

// HiddenProgram reports a program of the tool (its command's or its
// lookup's) that the sandbox would hide: one that lies in the agentctl
// home or a credential folder (~/.config/agentctl/tools/deploy.sh, say).
// Such a tool fails at every call with "not found", which the model reads
// as one more tool error, and the run goes on without it; the harness
// refuses the run at its start instead, naming the program. workspace is
// the run's workspace, which stays visible even inside a hidden folder.
func (c *Command) HiddenProgram(cfg *sandbox.Config, workspace string) error {
	rroot := workspace
	if r, err := filepath.EvalSymlinks(workspace); err == nil {
		rroot = r
	}
	h := resolveHidden(hideList(Call{Sandbox: cfg}), rroot)
	for _, argv := range [][]string{c.def.Command, c.def.Lookup} {
		if len(argv) == 0 {
			continue
		}
		prog := argv[0]
		if !filepath.IsAbs(prog) {
			p, err := exec.LookPath(prog)
			if err != nil || !filepath.IsAbs(p) {
				continue // the call reports a missing program itself
			}
			prog = p
		}
		for _, p := range []string{filepath.Clean(prog), evalOr(prog)} {
			if q, ok := h.covering(p); ok {
				return fmt.Errorf("tool %s: its program %s is in %s, which the sandbox hides from every tool (the agentctl home and the credential folders); move the program out of it, e.g. next to the spec", c.def.Name, prog, q)
			}
		}
	}
	return nil
}

// evalOr is p with its symlinks resolved, or p when that fails.
func evalOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
