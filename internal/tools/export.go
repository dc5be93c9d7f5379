package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/internal/sandbox"
)

// This file exports, for tools defined in other packages (internal/mcp),
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

// ReadFileIn reads the file at p, relative to the folder dir (or absolute
// inside it), under the rules read_file follows, for a path that someone
// else's file names (an imported transcript's reference to another file):
// confined to dir with symlinks resolved (ErrEscape for one that leads
// out, an absolute path elsewhere, or ../), a regular file only, checked
// before it is opened and opened non-blocking, so a named pipe or a device
// is refused rather than read (ErrNotRegular), and at most MaxFileSize
// bytes (ErrTooBig), even for a file that grows while read.
func ReadFileIn(dir, p string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rroot, resolved, err := confine(abs, p)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(rroot)
	if err != nil {
		return nil, err
	}
	t := &target{arg: p, root: root, rroot: rroot, rel: relTo(rroot, resolved)}
	defer t.Close()
	f, _, err := t.open("read", t.rel, os.O_RDONLY, MaxFileSize)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(context.Background(), f, "read", p)
}
