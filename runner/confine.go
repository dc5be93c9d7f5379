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
	"github.com/agentctl/agentctl/session"
)

// ArtifactsDir is the folder of the session folder that holds the whole
// output of tool calls whose recorded output was cut.
const ArtifactsDir = "artifacts"

// ProcsDir is the folder of the session folder where every started tool
// process (the sandbox init) is recorded until it has been waited for, so
// that resume can prove none of an earlier attempt still runs.
const ProcsDir = "procs"

// sandboxConfig is the confinement of the run's tool subprocesses: the
// spec's network policy and limits, with the agentctl home hidden next to
// the invoking user's credential folders.
func sandboxConfig(sp *spec.Spec, home string) (*sandbox.Config, error) {
	mem, err := sp.Sandbox.MemoryBytes()
	if err != nil {
		return nil, fmt.Errorf("sandbox.memory: %w", err)
	}
	pids, err := sp.Sandbox.PidsLimit()
	if err != nil {
		return nil, fmt.Errorf("sandbox.pids: %w", err)
	}
	userHome, _ := os.UserHomeDir()
	return &sandbox.Config{
		ReadOnly: sp.Sandbox.ReadOnlyFolders(userHome),
		Network:  sp.Sandbox.Network,
		Allow:    sp.Sandbox.Allow,
		Hide:     sandbox.DefaultHide(home),
		Memory:   mem,
		Pids:     pids,
		CPU:      time.Duration(sp.Sandbox.CPU),
	}, nil
}

// sweepEarlier kills every process an earlier invocation of the session
// started and never waited for (the harness was killed while a tool ran
// and the parent-death signal did not reach it), waits until they are
// gone and says so in the log, before anything reconciles or repeats
// their calls. An error stops the resume: something of the earlier
// attempt may still be running.
func (r *run) sweepEarlier() error {
	swept, err := sandbox.Sweep(filepath.Join(r.cfg.Store.SessionDir(r.id), ProcsDir))
	for _, s := range swept {
		if aerr := r.append(session.Event{Kind: session.KindError, Reason: ReasonEarlierAttemptKilled,
			Error: fmt.Sprintf("killed %s (%s, pid %d, started %s) and %d process(es) in all, left running by an earlier invocation that ended without waiting for it; its call is reconciled after this",
				s.Program, s.Kind, s.PID, s.Time.Format(time.RFC3339), s.Processes)}); aerr != nil {
			return aerr
		}
	}
	if err != nil {
		return fmt.Errorf("a process of an earlier attempt may still run: %w", err)
	}
	return nil
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
	// Every process a call starts is recorded in the session, for the
	// sweep of a later resume.
	cfg.Procs = filepath.Join(r.cfg.Store.SessionDir(r.id), ProcsDir)
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
