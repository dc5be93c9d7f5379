//go:build unix

package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is a long-lived sandboxed process that talks over pipes: an MCP
// server on stdio. It is confined exactly as a tool call is (Prepare: the
// same namespaces, minimal root, hidden paths, network policy and
// allowlist, cgroup, rlimits, dropped capabilities, parent-death signal
// and lifeline, process record for Sweep); what differs is only that its
// stdin and stdout are pipes the harness keeps, and that it lives across
// calls until Kill. Its cgroup and RLIMIT_CPU therefore bound the whole
// life of the process, not one call.
//
// Kill may be called from any goroutine and more than once. Stdin and
// Stdout belong to one user (the MCP connection).
type Process struct {
	// Stdin writes to the process's standard input; Stdout reads its
	// standard output.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	cmd    *exec.Cmd
	launch *Launch
	done   chan struct{}
	once   sync.Once
	err    error // set before done is closed
}

// Start runs argv, in workspace (its working directory), confined by c,
// with env as its whole environment, its stderr copied to stderr (nil:
// discarded). The process leads its own session; with the sandbox, it is
// PID 1's only child in a PID namespace that dies with it. Start fails
// with the errors of Prepare (ErrUnavailable, ErrNoHost) and never runs a
// process unconfined unless c.Unconfined says so.
func (c Config) Start(workspace string, argv, env []string, stderr io.Writer) (*Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: empty command")
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("sandbox: start %s: %w", argv[0], err)
	}
	if !c.Unconfined {
		env = append(env[:len(env):len(env)], "TMPDIR=/tmp") // the sandbox's private /tmp
	}
	l, err := c.Prepare(workspace, workspace, argv, env)
	if err != nil {
		return nil, err
	}
	cmd := l.Command(context.Background())
	if stderr == nil {
		stderr = io.Discard
	}
	cmd.Stderr = stderr
	// exec's own pipes would make Wait wait for a grandchild holding them;
	// these are ours, and Kill closes them.
	inR, inW, err := os.Pipe()
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		l.Close()
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.WaitDelay = time.Second // bounds the stderr copy after the group died
	err = l.Start(cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		l.Close()
		if cmd.ProcessState != nil {
			return nil, err // started, but could not be recorded: killed
		}
		return nil, fmt.Errorf("sandbox: start %s: %w", argv[0], err)
	}
	p := &Process{Stdin: inW, Stdout: outR, cmd: cmd, launch: l, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		// The leader is gone: nothing of its group may stay (with the
		// sandbox the PID namespace is already dead; unconfined, a
		// grandchild of the group would be left).
		killGroup(cmd.Process)
		l.Close()
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id of the process as the harness sees it (the sandbox
// init, or the program itself when unconfined).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been waited for, and its
// cgroup and record are gone.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error once Done is closed (nil: exit 0).
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Kill ends the process and everything it started (SIGKILL to its process
// group; with the sandbox, PID 1's death kills its namespace), closes the
// pipes and waits until it has been reaped, at most a few seconds.
func (p *Process) Kill() {
	p.once.Do(func() {
		killGroup(p.cmd.Process)
		_ = p.Stdin.Close()
		_ = p.Stdout.Close()
	})
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// ownSession returns attr, or a new one, with Setsid set: a new session
// makes the child the leader of its own process group, which a kill of the
// group reaches as a whole, and leaves it without a controlling terminal
// (opening /dev/tty fails instead of prompting on the user's terminal, and
// the terminal's Ctrl-C goes to the harness). Namespace and other fields of
// attr are kept; Setpgid is dropped, since it would fail after setsid and
// could only join another group.
func ownSession(attr *syscall.SysProcAttr) *syscall.SysProcAttr {
	a := syscall.SysProcAttr{}
	if attr != nil {
		a = *attr
	}
	a.Setsid, a.Setpgid, a.Pgid = true, false, 0
	return &a
}

// killGroup sends SIGKILL to the process group p leads.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
