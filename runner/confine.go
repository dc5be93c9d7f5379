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

// needsSandbox reports whether the registry has tools that start
// subprocesses (bash, custom commands).
func needsSandbox(reg *tools.Registry, sp *spec.Spec) bool {
	if _, ok := reg.Get(tools.NameBash); ok || len(sp.CustomTools) > 0 || len(sp.Done) > 0 {
		return true
	}
	return false
}

// setupSandbox decides, before anything runs, how tools are confined. Where
// namespaces are unavailable, a run whose tools start subprocesses is
// refused unless the spec sets sandbox.unconfined; agentctl never falls
// back to running them unconfined on its own.
func (r *run) setupSandbox() error {
	cfg, err := sandboxConfig(r.cfg.Spec, r.cfg.Store.Root)
	if err != nil {
		return err
	}
	r.sandbox = cfg
	if !needsSandbox(r.cfg.Tools, r.cfg.Spec) {
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
