package agenthost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/spec"
)

// AgentOutput is the artifact (in the session's artifacts folder) that
// holds an external agent's stdout and stderr, redacted.
const AgentOutput = "agent-output.log"

// agentGrace is how long an external agent has to exit after SIGINT (an
// interruption, the wall-time deadline, a budget refusal) before its
// whole sandbox is killed.
const agentGrace = 5 * time.Second

// listenerWait bounds the wait for the sandbox init to hand over the
// proxy's listener.
const listenerWait = 20 * time.Second

// dummyKey is the API key an external agent always gets: SDKs refuse to
// start without one, and the real key (upstreamKey) stays with the proxy,
// which puts it on the calls it forwards upstream (proxy.WithKey).
const dummyKey = "agentctl-proxy-no-key"

// agentProc is one external agent program running under the sandbox, its
// model calls served by handler on the listener the sandbox made for it.
type agentProc struct {
	cmd    *exec.Cmd
	launch *sandbox.Launch
	srv    *http.Server
	out    *os.File // the output artifact
	tail   *tailBuffer
	done   chan struct{}
	err    error // cmd.Wait's, once done is closed
	signal sync.Once
}

// agentExit is how an external agent ended.
type agentExit struct {
	Code   int    // exit status, 128+signal when killed
	Killed string // what killed it: "interrupted", "max_wall", "budget", "" for its own exit
	Tail   string // the end of its output, redacted
}

// agentEnv is the environment of an external agent: the scrubbed base the
// tools get (PATH, HOME = the workspace, LANG, TMPDIR), the variables of
// sandbox.env, the spec's agent.env, then what points the common SDKs at
// the proxy (spec.ReservedEnv) and keeps them from sending anything else.
// base is the proxy's URL with the session's prefix
// (http://127.0.0.1:PORT/s/<id>).
func agentEnv(sp *spec.Spec, ws, base, id, prompt, key string, unconfined bool) []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8"}
	if unconfined {
		env = append(env, "TMPDIR="+os.TempDir())
	} else {
		env = append(env, "TMPDIR=/tmp")
	}
	env = append(env,
		// Switches of the SDKs that would otherwise phone home (traces,
		// telemetry, update checks); the agent.env may turn them back.
		"OPENAI_AGENTS_DISABLE_TRACING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
		"DO_NOT_TRACK=1", "NO_UPDATE_NOTIFIER=1",
	)
	env = append(env, runner.PassEnv(sp.Sandbox.Env)...)
	keys := make([]string, 0, len(sp.Agent.Env))
	for k := range sp.Agent.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+sp.Agent.Env[k])
	}
	env = append(env, spec.AgentEnv{Base: base, SessionID: id, Key: key, Model: sp.Model.ID, Prompt: prompt}.Vars()...)
	return dedupeEnv(env)
}

// dedupeEnv keeps the last value of each variable, in first-seen order, so
// what is set later wins whatever the program's getenv does with doubles.
func dedupeEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := cutEnv(kv)
		last[k] = i
	}
	var out []string
	for i, kv := range env {
		if k, _, _ := cutEnv(kv); last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// startAgent starts argv in the workspace ws under cfg (whose Serve gets
// set), serves handler to it on the listener the sandbox made inside the
// agent's network namespace, and writes its output, redacted by red, to
// outPath. envFor builds the environment once the address is known. The
// caller must call wait.
func startAgent(cfg sandbox.Config, ws string, argv []string, envFor func(addr string) []string, handler http.Handler, red *redact.Redactor, outPath string) (*agentProc, error) {
	if cfg.Serve == "" {
		cfg.Serve = "127.0.0.1:0"
	}
	if _, err := exec.LookPath(argv[0]); err != nil && !filepath.IsAbs(argv[0]) {
		return nil, fmt.Errorf("start the agent: %s is not on PATH (%v); give its path in agent.command", argv[0], err)
	}
	launch, err := cfg.Prepare(ws, ws, argv, nil)
	if err != nil {
		return nil, fmt.Errorf("start the agent: %w", err)
	}
	env := envFor(launch.ServeAddr)
	launch.Env = append(env, launch.Env...) // the sandbox's own variables last
	if err := os.MkdirAll(filepath.Dir(outPath), 0o755); err != nil {
		launch.Close()
		return nil, fmt.Errorf("start the agent: %w", err)
	}
	out, err := os.OpenFile(outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		launch.Close()
		return nil, fmt.Errorf("start the agent: output file: %w", err)
	}
	p := &agentProc{launch: launch, out: out, tail: &tailBuffer{max: 4096}, done: make(chan struct{})}
	cmd := launch.Command(context.Background())
	w := red.Writer(io.MultiWriter(out, p.tail))
	cmd.Stdout, cmd.Stderr = w, w
	// Unconfined, a grandchild could hold the output pipe past the exit.
	cmd.WaitDelay = agentGrace
	// stdin stays closed (os/exec gives /dev/null): no agent waits on a TTY.
	p.cmd = cmd
	if err := launch.Start(cmd); err != nil {
		launch.Close()
		out.Close()
		if cmd.ProcessState != nil { // started, but unrecorded and killed
			return nil, fmt.Errorf("start the agent: %w", err)
		}
		return nil, fmt.Errorf("start the agent %s: %w", argv[0], err)
	}
	go func() {
		p.err = cmd.Wait()
		w.Close()
		close(p.done)
	}()
	ln, err := launch.Listener(listenerWait)
	if err != nil {
		p.kill()
		<-p.done
		launch.Close()
		out.Close()
		return nil, fmt.Errorf("start the agent: the proxy's listener: %w (agent output: %s)", err, p.tail.String())
	}
	p.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// interruptAgent asks the agent to stop (SIGINT to its process group and,
// through the sandbox init, to every process of its namespace), and kills
// the whole sandbox agentGrace later if it has not exited.
func (p *agentProc) interruptAgent() {
	p.signal.Do(func() {
		pid := p.cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGINT)
		go func() {
			select {
			case <-p.done:
			case <-time.After(agentGrace):
				p.kill()
			}
		}()
	})
}

func (p *agentProc) kill() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

// wait waits for the agent to exit. A cancelled ctx interrupts it (its
// cause is in stop: "interrupted", "max_wall", "budget"); it exits, or is
// killed agentGrace later. Then the proxy stops (in-flight calls get
// their end), the sandbox is cleaned up and the output file closed.
func (p *agentProc) wait(ctx context.Context, stop func() string) agentExit {
	var killed string
	select {
	case <-p.done:
	case <-ctx.Done():
		killed = stop()
		p.interruptAgent()
		<-p.done
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = p.srv.Shutdown(sctx)
	cancel()
	_ = p.srv.Close()
	p.launch.Close()
	p.out.Sync()
	p.out.Close()
	code := 0
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if p.err != nil {
		code = -1
	}
	return agentExit{Code: code, Killed: killed, Tail: p.tail.String()}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
