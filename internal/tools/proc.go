package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/sandbox"
)

// termGrace is how long a process group has between SIGTERM and SIGKILL.
const termGrace = 200 * time.Millisecond

// pipeGrace is how long output is still read after the process group was
// killed, for a process that left the group but holds the output pipe.
const pipeGrace = time.Second

// errTimedOut is the cancel cause of a call that ran past its timeout.
var errTimedOut = errors.New("timed out")

// proc is one subprocess run.
type proc struct {
	argv      []string
	dir       string
	env       []string
	stdin     []byte // nil: /dev/null
	timeout   time.Duration
	maxOutput int
	split     bool // keep stderr apart from stdout

	workspace string           // the root dir must stay under
	sandbox   *sandbox.Config  // nil: the default policy
	redactor  *redact.Redactor // applied to output as it is captured
	artifact  string           // if set, the whole redacted output goes here
}

// newProc is a subprocess of call: argv in dir, confined and redacted as
// the call says.
func newProc(call Call, argv []string, dir string, env []string) proc {
	return proc{
		argv:      argv,
		dir:       dir,
		env:       env,
		timeout:   call.timeout(),
		maxOutput: call.maxOutput(),
		workspace: call.Workspace,
		sandbox:   call.Sandbox,
		redactor:  call.Redactor,
		artifact:  call.ArtifactPath,
	}
}

// procResult is what a subprocess run produced.
type procResult struct {
	stdout, stderr *capBuffer // stderr is nil unless split
	state          *os.ProcessState
	err            error // start or wait failure, nil on a clean exit 0
	harness        error // the harness's own bookkeeping failed (Result.Harness)
	cancelled      bool  // the caller's ctx ended the run
	timedOut       bool  // the timeout ended the run
	artifact       string
}

// scrubbedEnv is the environment of every subprocess: PATH, HOME set to the
// workspace, LANG and TMPDIR, then extra (later entries win).
func scrubbedEnv(workspace string, extra ...string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + workspace,
		"LANG=C.UTF-8",
		"TMPDIR=" + os.TempDir(),
	}
	return append(env, extra...)
}

// run starts p in its own process group with no TTY and waits for it. When
// the timeout passes or ctx is cancelled, the whole group gets SIGTERM and,
// termGrace later, SIGKILL. When the leader has exited, for whatever reason,
// the rest of the group is killed too, so no grandchild outlives the call.
func (p proc) run(ctx context.Context) procResult {
	res := procResult{stdout: newCapBuffer(p.maxOutput)}
	if p.split {
		res.stderr = newCapBuffer(p.maxOutput)
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, p.timeout, errTimedOut)
	defer cancel()

	cfg := sandbox.Config{}
	if p.sandbox != nil {
		cfg = *p.sandbox
	}
	env := p.env
	if !cfg.Unconfined {
		env = append(env[:len(env):len(env)], "TMPDIR=/tmp") // the sandbox's private /tmp
	}
	ws := p.workspace
	if ws == "" {
		ws = p.dir
	}
	// Find the program here, so a missing one fails as a start error
	// rather than as an exit status from inside the sandbox.
	if _, err := exec.LookPath(p.argv[0]); err != nil {
		res.err = fmt.Errorf("start %s: %w", p.argv[0], err)
		return res
	}
	launch, err := cfg.Prepare(ws, p.dir, p.argv, env)
	if err != nil {
		res.err = err
		return res
	}
	defer launch.Close()
	cmd := launch.Command(runCtx)
	if p.stdin != nil {
		cmd.Stdin = bytes.NewReader(p.stdin)
	}

	// Everything read from the pipes is redacted first, then kept (head
	// and tail) and, with an artifact path, written whole to disk.
	var art *lockedFile
	if p.artifact != "" {
		f, err := createArtifact(p.artifact)
		if err != nil {
			res.err = fmt.Errorf("artifact: %w", err)
			return res
		}
		art = &lockedFile{f: f}
		defer func() {
			f.Close()
			if res.artifact == "" {
				os.Remove(p.artifact)
			}
		}()
	}
	sink := func(c *capBuffer) io.WriteCloser {
		var w io.Writer = c
		if art != nil {
			w = io.MultiWriter(c, art)
		}
		return p.redactor.Writer(w)
	}

	// The output goes through pipes we own rather than exec's, so Wait
	// returns when the leader exits even if a grandchild holds the pipe.
	outR, outW, err := os.Pipe()
	if err != nil {
		res.err = fmt.Errorf("pipe: %w", err)
		return res
	}
	defer outR.Close()
	cmd.Stdout, cmd.Stderr = outW, outW
	var errR, errW *os.File
	if p.split {
		errR, errW, err = os.Pipe()
		if err != nil {
			outW.Close()
			res.err = fmt.Errorf("pipe: %w", err)
			return res
		}
		defer errR.Close()
		cmd.Stderr = errW
	}

	var (
		mu        sync.Mutex
		cancelled bool
		killTimer *time.Timer
	)
	cmd.Cancel = func() error {
		leader := cmd.Process
		terminateGroup(leader)
		mu.Lock()
		defer mu.Unlock()
		cancelled = true
		killTimer = time.AfterFunc(termGrace, func() { killGroup(leader) })
		return nil
	}
	// Bounds Wait if the stdin copy blocks on a grandchild holding stdin,
	// and kills the leader if it somehow survived SIGKILL of its group.
	cmd.WaitDelay = termGrace + pipeGrace

	err = launch.Start(cmd)
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	if err != nil && cmd.ProcessState != nil {
		// Started but unrecorded, and so killed: the harness failed.
		res.err, res.harness = err, err
		return res
	}
	if err != nil {
		if ctx.Err() != nil {
			res.cancelled = true
		} else if errors.Is(context.Cause(runCtx), errTimedOut) {
			res.timedOut = true
		}
		res.err = fmt.Errorf("start %s: %w", p.argv[0], err)
		return res
	}

	var wg sync.WaitGroup
	drain := func(r *os.File, w io.WriteCloser) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(w, r)
			_ = w.Close() // flushes the last partial line
		}()
	}
	drain(outR, sink(res.stdout))
	if p.split {
		drain(errR, sink(res.stderr))
	}

	werr := cmd.Wait()
	killGroup(cmd.Process)
	mu.Lock()
	if killTimer != nil {
		killTimer.Stop()
	}
	wasCancelled := cancelled
	mu.Unlock()

	// Everything left in the group is dead, so the pipes reach EOF unless a
	// process escaped the group (setsid); stop reading after pipeGrace.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(pipeGrace):
		_ = outR.SetReadDeadline(time.Now())
		if errR != nil {
			_ = errR.SetReadDeadline(time.Now())
		}
		<-done
	}

	res.state = cmd.ProcessState
	if art != nil && (res.stdout.truncated() || (res.stderr != nil && res.stderr.truncated())) {
		res.artifact = p.artifact
	}
	if wasCancelled {
		if ctx.Err() != nil {
			res.cancelled = true
		} else if errors.Is(context.Cause(runCtx), errTimedOut) {
			res.timedOut = true
		}
	}
	var exitErr *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &exitErr):
		res.err = exitErr
	case res.state != nil && res.state.Success():
		// exec.ErrWaitDelay: the command succeeded, a grandchild held stdin.
	default:
		res.err = werr
	}
	return res
}

// result maps a finished run to a Result, with output as the model reads it.
func (r procResult) result(output string, truncated bool, timeout time.Duration) Result {
	res := Result{Output: output, Truncated: truncated, Artifact: r.artifact, Harness: r.harness}
	switch {
	case r.cancelled:
		res.Status, res.Error = statusCancelled, "cancelled"
	case r.timedOut:
		res.Status, res.Error = statusError, fmt.Sprintf("timed out after %s", timeout)
	case r.err != nil:
		res.Status, res.Error = statusError, r.err.Error()
	default:
		res.Status = statusOK
	}
	return res
}

// lockedFile serializes the writes of the stdout and stderr drains.
type lockedFile struct {
	mu sync.Mutex
	f  *os.File
}

func (l *lockedFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// createArtifact creates the artifact file, readable by its owner only.
func createArtifact(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
}
