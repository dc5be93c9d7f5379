package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/redact"
	"github.com/agentctl/agentctl/runner/sandbox"
	"github.com/agentctl/agentctl/runner/spec"
	"github.com/agentctl/agentctl/runner/tools"
)

// ArtifactsDir is the folder of the session folder that holds the whole
// output of tool calls whose recorded output was cut.
const ArtifactsDir = "artifacts"

// sandboxConfig is the confinement of the run's tool subprocesses: the
// spec's network policy and limits, with the agentctl home hidden next to
// the invoking user's credential folders.
func sandboxConfig(sp *spec.Spec, home string) (*sandbox.Config, error) {
	mem, err := sp.Sandbox.MemoryBytes()
	if err != nil {
		return nil, fmt.Errorf("sandbox.memory: %w", err)
	}
	return &sandbox.Config{
		Network: sp.Sandbox.Network,
		Allow:   sp.Sandbox.Allow,
		Hide:    sandbox.DefaultHide(home),
		Memory:  mem,
		CPU:     time.Duration(sp.Sandbox.CPU),
	}, nil
}

// SandboxConfig is the confinement a run of sp with the agentctl home at
// home gives its tools, for callers that run tools outside a run (replay
// fork re-applying recorded calls): the same hide list, so the file tools
// and the sandbox hide the home there too.
func SandboxConfig(sp *spec.Spec, home string) (*sandbox.Config, error) {
	return sandboxConfig(sp, home)
}

// spawns reports whether a tool starts subprocesses (bash, custom
// commands), the tools the sandbox confines.
func spawns(t tools.Tool) bool {
	if t.Name() == tools.NameBash {
		return true
	}
	_, ok := t.(*tools.Command)
	return ok
}

// setupSandbox builds the confinement of the run's tools and starts probing
// the machine in the background, so the run does not wait for it.
func (r *run) setupSandbox() error {
	cfg, err := sandboxConfig(r.cfg.Spec, r.cfg.Store.Root)
	if err != nil {
		return err
	}
	r.sandbox = cfg
	go func() { _ = sandbox.Available() }()
	return nil
}

// sandboxReady is checked before a tool that starts subprocesses is
// dispatched. Where namespaces are unavailable the run is refused unless
// the spec sets sandbox.unconfined; agentctl never falls back to running
// tools unconfined on its own. (tools would refuse each call anyway; this
// stops the run with the reason and a hint instead.)
func (r *run) sandboxReady(t tools.Tool) error {
	if r.sandbox == nil {
		// A path into the loop that skipped setupSandbox: never leave the
		// tools on the default policy without the home hidden.
		if err := r.setupSandbox(); err != nil {
			return err
		}
	}
	if !spawns(t) || r.sandbox.Unconfined {
		return nil
	}
	if err := sandbox.Available(); err != nil {
		if r.cfg.Spec.Sandbox.Unconfined {
			r.sandbox.Unconfined = true
			return nil
		}
		return fmt.Errorf("%w\n  hint: 'agentctl sandbox check' shows what this machine supports; set sandbox.unconfined: true in the spec to run tools without namespaces", err)
	}
	return nil
}

// redactor knows the secrets of this moment: the workspace's .env* files
// and agentctl's own secret-looking environment variables.
func (r *run) redactor() *redact.Redactor {
	secrets := redact.FromEnv(os.Environ())
	if more, err := redact.FromDotEnv(r.ws); err == nil {
		secrets = append(secrets, more...)
	}
	return redact.New(secrets...)
}

// artifactPath is where the whole output of a call goes; call ids come
// from the model, so only safe characters of them are kept.
func (r *run) artifactPath(callID string) string {
	name := strings.Map(func(c rune) rune {
		if c == '-' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			return c
		}
		return '_'
	}, callID)
	if name == "" {
		name = "call"
	}
	return filepath.Join(r.cfg.Store.SessionDir(r.id), ArtifactsDir, name+".txt")
}
