package view_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/testenv/redteam"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// selfEnv, set to 1, makes the test binary run as agentctl (for runs that
// must be a process of their own: killed at a failpoint, interrupted).
const selfEnv = "AGENTCTL_VIEW_TEST_SELF"

func TestMain(m *testing.M) {
	sandbox.Init() // tools re-execute this binary as their sandbox init
	if os.Getenv(selfEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Main(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
		stop()
		os.Exit(code)
	}
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// shared is the home record made for the first test that asked, reused by
// the others (they only read it).
var shared struct {
	once sync.Once
	dir  string
	h    *home
	err  string
}

// recorded returns the sessions of record, recorded once per test binary.
func recorded(t *testing.T) *home {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "agentctl-view-test-")
		if err != nil {
			shared.err = err.Error()
			return
		}
		shared.dir = dir
		rt := &recordT{T: t, dir: dir}
		func() {
			defer func() {
				if r := recover(); r != nil && r != errRecordFailed {
					panic(r)
				}
			}()
			shared.h = record(rt)
		}()
		shared.err = rt.failure
	})
	if shared.err != "" {
		t.Fatalf("recording the test sessions failed: %s", shared.err)
	}
	return &home{t: t, dir: shared.h.dir, fixtures: shared.h.fixtures}
}

var errRecordFailed = errors.New("recording failed")

// recordT runs record for recorded: its temporary folders outlive the
// test that happened to ask first, and a failure is kept for every test
// that asks.
type recordT struct {
	*testing.T
	dir     string
	n       int
	failure string
}

func (r *recordT) TempDir() string {
	r.n++
	d := filepath.Join(r.dir, fmt.Sprint(r.n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		r.Fatal(err)
	}
	return d
}

func (r *recordT) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	panic(errRecordFailed)
}

func (r *recordT) Fatal(args ...any) {
	r.failure = fmt.Sprint(args...)
	panic(errRecordFailed)
}

// home is an agentctl home the tests record sessions into with the real
// command tree.
type home struct {
	t        testing.TB
	dir      string
	fixtures string
}

func newHome(t testing.TB) *home {
	fx, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	return &home{t: t, dir: t.TempDir(), fixtures: fx}
}

func (h *home) agent(name string) string { return filepath.Join(h.fixtures, "agents", name+".yaml") }

// run runs agentctl in this process and fails the test unless it exits
// with want; it returns stdout.
func (h *home) run(want int, args ...string) string {
	h.t.Helper()
	r := testcli.Run(h.t, h.dir, args...)
	if r.Code != want {
		h.t.Fatalf("agentctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// proc starts agentctl as a process of its own (this test binary).
func (h *home) proc(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"--home", h.dir}, args...)...)
	cmd.Env = append(append(os.Environ(), selfEnv+"=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd
}

// summary is the session's line of `agentctl sessions --json`.
func (h *home) summary(id string) map[string]any {
	h.t.Helper()
	var list []map[string]any
	if err := json.Unmarshal([]byte(h.run(cli.ExitOK, "sessions", "--json")), &list); err != nil {
		h.t.Fatal(err)
	}
	for _, s := range list {
		if s["session_id"] == id {
			return s
		}
	}
	h.t.Fatalf("session %s is not listed by sessions --json", id)
	return nil
}

// Session ids of the sessions recorded by record.
const (
	idRich      = "7e57000000000001" // hostile output, an error, long output, an artifact, a secret
	idFork      = "7e57000000000002" // a fork of idRich to another scripted model
	idCompact   = "7e57000000000003" // long-refactor: compactions
	idApproval  = "7e57000000000004" // run-migration: approvals for the session and once, a denial, resumes
	idCrash     = "7e57000000000005" // charge-order: killed inside a tool, resumed, reconciled
	idInterrupt = "7e57000000000006" // slow-tool: SIGINT, then resumed
)

// secret is a value in the rich session's workspace .env file that its
// tool prints; the recorder redacts it.
const secret = "hunter2-correct-horse-battery"

// record records the test sessions: every one with the real command tree,
// the crash and the interruption in processes of their own.
func record(t testing.TB) *home {
	h := newHome(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	files := map[string]string{
		"ws/.env": "DB_PASSWORD=" + secret + "\n",
		// A tool output that tries to be markup and terminal control:
		// the red-team corpus every page test records.
		"ws/hostile.txt": redteam.Text("") + "\n",
		"ws/hostile.sh":  "cat hostile.txt .env\n",
		"model.yaml": `turns:
  - text: "Printing what the build left."
    tool_calls:
      - {name: bash, args: {command: "sh hostile.sh"}}
    usage: {input_tokens: 1200, output_tokens: 80}
  - text: "Reading a file that is not there."
    tool_calls:
      - {name: read_file, args: {path: missing.txt}}
  - text: "Listing many lines."
    tool_calls:
      - {name: bash, args: {command: "seq 1 400"}}
  - text: "Making a huge output."
    tool_calls:
      - {name: bash, args: {command: "head -c 300000 /dev/zero | tr '\\0' x"}}
  - text: "All done."
`,
		"alt.yaml": `turns:
  - text: "Trying another way."
    tool_calls:
      - {name: read_file, args: {path: hostile.sh}}
  - text: "Done differently."
`,
		"spec.yaml": `name: rich
model: {provider: scripted, id: claude-sonnet-4-5, script: model.yaml}
prompt: "Tidy the build output."
workspace: {from: ws}
mode: write
tools: [bash, read_file]
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.run(cli.ExitOK, "run", filepath.Join(dir, "spec.yaml"), "-q", "--session-id", idRich)
	h.run(cli.ExitOK, "replay", "fork", idRich, "--from", "6", "--rerun-bash", "--model", "scripted/alt", "--script", filepath.Join(dir, "alt.yaml"), "-q", "--session-id", idFork)
	h.run(cli.ExitOK, "run", h.agent("long-refactor"), "-q", "--session-id", idCompact)
	h.run(cli.ExitAwaitingApproval, "run", h.agent("run-migration"), "-q", "--session-id", idApproval)
	h.run(cli.ExitOK, "approve", idApproval, "--scope", "session") // write_file, for the session
	h.run(cli.ExitAwaitingApproval, "resume", idApproval, "-q")
	h.run(cli.ExitOK, "deny", idApproval, "--reason", "run it in staging first") // the first bash
	h.run(cli.ExitAwaitingApproval, "resume", idApproval, "-q")
	h.run(cli.ExitOK, "approve", idApproval) // the second bash, once
	h.run(cli.ExitOK, "resume", idApproval, "-q")

	// Killed inside the charge (after its effect, before its result),
	// then resumed: the lookup reconciles the charge.
	crash := h.proc([]string{"AGENTCTL_FAILPOINT=in-tool:9"}, "run", h.agent("charge-order"), "-q", "--session-id", idCrash)
	if err := crash.Run(); err == nil {
		t.Fatalf("the run at the failpoint was not killed: %s", crash.Stdout)
	}
	h.run(cli.ExitOK, "resume", idCrash, "-q")

	// SIGINT while a tool runs, then resumed.
	intr := h.proc(nil, "run", h.agent("slow-tool"), "-q", "--session-id", idInterrupt)
	if err := intr.Start(); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(recorder.Store{Root: h.dir}.SessionDir(idInterrupt), "workspace", "started.txt")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			intr.Process.Kill()
			t.Fatalf("the slow tool did not start: %s", intr.Stdout)
		}
	}
	intr.Process.Signal(syscall.SIGINT)
	if err := intr.Wait(); err == nil {
		t.Fatalf("the interrupted run exited 0: %s", intr.Stdout)
	}
	h.run(cli.ExitOK, "resume", idInterrupt, "-q")
	return h
}

// view writes `agentctl view` of args into dir and returns the page's path.
func (h *home) view(dir string, args ...string) string {
	h.t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("view-%d.html", time.Now().UnixNano()))
	h.run(cli.ExitOK, append([]string{"view", "-o", out}, args...)...)
	return out
}
