package tools

import (
	"encoding/json"
	"os"
	"time"

	"github.com/agentctl/agentctl/runner/sandbox"
)

// This file exports, for tools defined in other packages (runner/mcp),
// the rules the tools here follow, so that a tool from elsewhere obeys
// the same caps, timeouts and schema checks instead of copies of them.

// CheckSchema reports whether params is a JSON Schema this package's
// validator (Validate) can check arguments against.
func CheckSchema(params json.RawMessage) error {
	_, err := compiled(params)
	return err
}

// CapOutput keeps at most max bytes of out (0: DefaultMaxOutput), its head
// and tail around a "[... N bytes elided ...]" note, as the built-ins cut
// their output, and reports whether it cut.
func CapOutput(out string, max int) (string, bool) {
	b := newCapBuffer(Call{MaxOutput: max}.maxOutput())
	_, _ = b.Write([]byte(out))
	return b.Result()
}

// TimeoutOf is the bound of call: Call.Timeout, or DefaultTimeout.
func TimeoutOf(call Call) time.Duration { return call.timeout() }

// CheckWorkspace refuses a workspace that is not an absolute directory.
func CheckWorkspace(ws string) error { return checkWorkspace(ws) }

// ScrubbedEnv is the environment of every tool subprocess: PATH, HOME set
// to the workspace, LANG, TMPDIR, then extra (later entries win).
func ScrubbedEnv(workspace string, extra ...string) []string {
	return scrubbedEnv(workspace, extra...)
}

// WithProgram returns cfg (nil: the default policy) with the folder of an
// absolute program path visible read-only in the sandbox, as custom tools
// get theirs.
func WithProgram(cfg *sandbox.Config, program string) *sandbox.Config {
	return withProgram(cfg, program)
}

// CreateArtifact creates an artifact file, readable by its owner only.
func CreateArtifact(path string) (*os.File, error) { return createArtifact(path) }
