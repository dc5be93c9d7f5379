package mcp_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/mcp/mcptest"
	"github.com/agentctl/agentctl/internal/testenv"
)

// runDir writes a spec whose MCP server "notes" is this test binary in
// mode (or, with url set, the HTTP server there) plus extra spec lines,
// and a scripted model of turns; it returns the spec's path and a home.
func runDir(t *testing.T, mode, url, extra, turns string) (specPath, home string) {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	server := `  - {name: notes, command: [` + exe + `], env: {` + mcptest.ServeEnv + `: stdio, ` + mcptest.ModeEnv + `: "` + mode + `"}}`
	if url != "" {
		server = `  - {name: notes, url: "` + url + `", headers_env: {Authorization: MCPTEST_AUTH}}`
	}
	spec := "name: mcp-run\nmodel: {provider: scripted, id: scripted-1, script: model.yaml}\nprompt: \"Go.\"\nworkspace: {from: ws}\ntools: [read_file]\nmcp_servers:\n" + server + "\n" + extra
	for name, text := range map[string]string{"agent.yaml": spec, "model.yaml": "turns:\n" + turns, "ws/README": "x\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "agent.yaml"), filepath.Join(dir, "home")
}

// TestRunToolTimeout: a server that never answers cannot hold the run past
// tool_timeout: the call is a tool error, the model goes on, and the next
// call finds the server started again.
func TestRunToolTimeout(t *testing.T) {
	testenv.NeedSandbox(t)
	spec, home := runDir(t, "hang", "", "tool_timeout: 2s\n", `  - text: "Adding."
    tool_calls:
      - {name: notes__add_note, args: {name: n, text: x}}
  - text: "Reading."
    tool_calls:
      - {name: notes__read_note, args: {name: n}}
  - text: "Done."
`)
	began := time.Now()
	code, out := agentctl(t, home, "run", spec, "--session-id", "70000000000000a1", "-q")
	if code != 0 {
		t.Fatalf("run: exit %d:\n%s", code, out)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the run took %s with a 2s tool timeout", took)
	}
	got := results(t, home, "70000000000000a1")
	if !strings.Contains(got["call_1_0"], "error: timed out after 2s: MCP server notes did not answer") {
		t.Errorf("hung call = %q", got["call_1_0"])
	}
	// The note was never written (the hang comes first), so the restarted
	// server answers with its own error: it is alive again.
	if !strings.HasPrefix(got["call_2_0"], "error: ") || !strings.Contains(got["call_2_0"], "the tool reported an error: no note n") {
		t.Errorf("call after the hang = %q", got["call_2_0"])
	}
}

// TestRunBudgetAndRedaction: MCP calls count against max_tool_calls like
// any call, and a secret the server prints (an agentctl variable passed
// through sandbox.env) is redacted in the log and in the stderr artifact.
func TestRunBudgetAndRedaction(t *testing.T) {
	testenv.NeedSandbox(t)
	t.Setenv("MCPTEST_API_TOKEN", "tok-redact-me-0123456789")
	t.Setenv(mcptest.StderrSecretEnv, "tok-redact-me-0123456789")
	spec, home := runDir(t, "stderr", "", "budget: {max_tool_calls: 1}\nsandbox: {env: [MCPTEST_API_TOKEN, "+mcptest.StderrSecretEnv+"]}\n", `  - text: "Env."
    tool_calls:
      - {name: notes__env, args: {}}
  - text: "Again."
    tool_calls:
      - {name: notes__env, args: {}}
  - text: "Done."
`)
	code, out := agentctl(t, home, "run", spec, "--session-id", "70000000000000a2", "-q")
	if code != 4 || !strings.Contains(out, "budget_exceeded") {
		t.Fatalf("run: exit %d, want 4 (budget):\n%s", code, out)
	}
	got := results(t, home, "70000000000000a2")
	if !strings.Contains(got["call_1_0"], "MCPTEST_API_TOKEN=[REDACTED:MCPTEST_API_TOKEN]") {
		t.Errorf("env call = %q, want the token redacted", got["call_1_0"])
	}
	if _, ok := got["call_2_0"]; ok {
		t.Errorf("the second call ran past max_tool_calls: %q", got["call_2_0"])
	}
	_, log := agentctl(t, home, "show", "70000000000000a2", "--json")
	if strings.Contains(log, "tok-redact-me") {
		t.Error("the secret reached the log")
	}
	b, err := os.ReadFile(filepath.Join(home, "sessions", "70000000000000a2", "artifacts", "mcp-notes.stderr.txt"))
	if err != nil || !strings.Contains(string(b), "starting with token [REDACTED:") || strings.Contains(string(b), "tok-redact-me") {
		t.Errorf("stderr artifact = %q, %v", b, err)
	}
}

// TestRunHTTPServer: a spec's streamable HTTP server, with its header read
// from the environment, is reachable only once sandbox.allow names it.
func TestRunHTTPServer(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var auth []string
	h := mcptest.Handler(dir, "")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	host := strings.TrimPrefix(ts.URL, "http://")
	turns := `  - text: "Adding."
    tool_calls:
      - {name: notes__add_note, args: {name: web, text: over http}}
  - text: "Done."
`
	spec, home := runDir(t, "", ts.URL, "", turns)
	t.Setenv("MCPTEST_AUTH", "Bearer from-env-42")
	code, out := agentctl(t, home, "run", spec, "-q")
	if code != 1 || !strings.Contains(out, host+" is not in sandbox.allow") {
		t.Fatalf("run with the host not allowed: exit %d:\n%s", code, out)
	}
	spec, home = runDir(t, "", ts.URL, "sandbox: {allow: [\""+host+"\"]}\n", turns)
	code, out = agentctl(t, home, "run", spec, "--session-id", "70000000000000a3", "-q")
	if code != 0 {
		t.Fatalf("run: exit %d:\n%s", code, out)
	}
	if got := results(t, home, "70000000000000a3")["call_1_0"]; got != "ok: added note web" {
		t.Errorf("add_note over HTTP = %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes", "web")); string(b) != "over http" {
		t.Errorf("the server's note = %q", b)
	}
	mu.Lock()
	for _, a := range auth {
		if a != "Bearer from-env-42" {
			t.Errorf("a request went without the header from headers_env: %q", auth)
			break
		}
	}
	mu.Unlock() // the handler takes it for each request
	if _, log := agentctl(t, home, "show", "70000000000000a3", "--json"); strings.Contains(log, "from-env-42") {
		t.Error("the header value reached the log")
	}
	os.Unsetenv("MCPTEST_AUTH")
	if code, out := agentctl(t, home, "run", spec, "-q"); code != 1 || !strings.Contains(out, "headers_env Authorization names MCPTEST_AUTH, which is not set") {
		t.Errorf("run without the header's variable: exit %d:\n%s", code, out)
	}
}

// TestRunInterrupted: an interruption while an MCP call is in flight stops
// the server (no orphan), records the call as cancelled and ends the run
// as interrupted, at once, not at the tool timeout.
func TestRunInterrupted(t *testing.T) {
	testenv.NeedSandbox(t)
	spec, home := runDir(t, "hang", "", "", `  - text: "Adding."
    tool_calls:
      - {name: notes__add_note, args: {name: n, text: x}}
  - text: "Done."
`)
	ctx, cancel := context.WithCancel(context.Background())
	// The server is a recorded process of the session while it runs (for
	// resume's sweep); the run is interrupted once the record is seen.
	procsDir := filepath.Join(home, "sessions", "70000000000000a4", "procs")
	recorded := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if es, _ := os.ReadDir(procsDir); len(es) > 0 {
				time.Sleep(300 * time.Millisecond) // the call is in flight
				recorded <- true
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		recorded <- false
		cancel()
	}()
	began := time.Now()
	var out bytes.Buffer
	code := cli.Main(ctx, []string{"--home", home, "run", spec, "--session-id", "70000000000000a4", "-q"}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out})
	if code != 130 || time.Since(began) > 15*time.Second {
		t.Fatalf("run: exit %d after %s, want 130 soon after the interruption:\n%s", code, time.Since(began), out.String())
	}
	if !<-recorded {
		t.Error("the server never appeared in the session's process records")
	}
	if got := results(t, home, "70000000000000a4")["call_1_0"]; !strings.HasPrefix(got, "cancelled: ") {
		t.Errorf("call in flight = %q, want cancelled", got)
	}
	procs, _ := os.ReadDir(procsDir)
	if len(procs) != 0 {
		t.Errorf("process records left after the run: %v", procs)
	}
}
