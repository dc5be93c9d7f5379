package mcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
)

// FilesystemEnv names the entry script of the reference filesystem server
// (@modelcontextprotocol/server-filesystem, dist/index.js), which .ci/run
// installs from npm. When it is set the test runs, and fails if the server
// does not work.
const FilesystemEnv = "AGENTCTL_MCP_FILESYSTEM"

// agentctl runs the real command tree in this process (tools re-execute
// this test binary as their sandbox init) and returns its exit code and
// output.
func agentctl(t *testing.T, home string, args ...string) (int, string) {
	t.Helper()
	r := testcli.Run(t, home, args...)
	return r.Code, r.Stdout + r.Stderr
}

// results reads a session's tool results by call id: "status: text".
func results(t *testing.T, home, id string) map[string]string {
	t.Helper()
	code, out := agentctl(t, home, "show", id, "--json")
	if code != 0 {
		t.Fatalf("show %s: exit %d: %s", id, code, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		var e struct {
			Kind   string `json:"kind"`
			CallID string `json:"call_id"`
			Status string `json:"status"`
			Output string `json:"output"`
			Error  string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Kind == "tool_result" {
			got[e.CallID] = e.Status + ": " + e.Output + e.Error
		}
	}
	return got
}

// TestFilesystemServer runs the reference filesystem MCP server from npm
// through specs: its tools listed, called, confined to the workspace,
// recorded and replayed. The second spec gives the server a wrong
// allowlist (the whole file system): the sandbox alone must keep it in
// the workspace.
func TestFilesystemServer(t *testing.T) {
	script := os.Getenv(FilesystemEnv)
	if script == "" {
		t.Skipf("%s is not set (.ci/run installs the server from npm)", FilesystemEnv)
	}
	testenv.NeedSandbox(t)
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("%s=%s: %v", FilesystemEnv, script, err)
	}
	pkgRoot := script
	if i := strings.Index(script, "/node_modules/"); i >= 0 {
		pkgRoot = script[:i]
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("ws/README", "a workspace\n")
	write("outside.txt", "outside-secret\n")
	spec := func(name, allowed, model string) string {
		return `name: ` + name + `
model: {provider: scripted, id: scripted-1, script: ` + model + `}
prompt: "Keep notes."
workspace: {from: ws}
tools: [read_file]
sandbox: {read_only: [` + pkgRoot + `]}
mcp_servers:
  - {name: fs, command: [node, ` + script + `, "` + allowed + `"]}
approvals: [{tool: "fs__write*"}]
`
	}
	write("agent.yaml", spec("fs-notes", ".", "model.yaml"))
	write("model.yaml", `turns:
  - text: "Writing."
    tool_calls:
      - {name: fs__write_file, args: {path: notes.txt, content: "from the agent\n"}}
  - text: "Reading."
    tool_calls:
      - {name: fs__read_text_file, args: {path: notes.txt}}
  - text: "Done."
`)
	code, out := agentctl(t, home, "run", filepath.Join(dir, "agent.yaml"), "--session-id", "f500000000000001", "-q")
	if code != 3 || !strings.Contains(out, "call call_1_0 (fs__write_file) waits for approval") {
		t.Fatalf("run: exit %d, want 3 (the approval glob gates fs__write_file):\n%s", code, out)
	}
	if code, out := agentctl(t, home, "approve", "f500000000000001"); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	if code, out := agentctl(t, home, "resume", "f500000000000001", "-q"); code != 0 {
		t.Fatalf("resume: exit %d:\n%s", code, out)
	}
	ws := filepath.Join(home, "sessions", "f500000000000001", "workspace")
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "from the agent\n" {
		t.Fatalf("notes.txt = %q, %v", b, err)
	}
	got := results(t, home, "f500000000000001")
	for id, want := range map[string]string{
		"call_1_0": "ok: Successfully wrote to notes.txt",
		"call_2_0": "ok: from the agent",
	} {
		if !strings.Contains(got[id], want) {
			t.Errorf("%s = %q, want %q", id, got[id], want)
		}
	}
	// Recorded: the server, its protocol version and tool-list hash.
	code, out = agentctl(t, home, "query", "--format", "jsonl", "select json_extract_string(attrs, '$.mcp_servers[0].server_name') s, json_extract_string(attrs, '$.mcp_servers[0].tools_hash') h, json_array_length(json_extract(attrs, '$.mcp_servers[0].tools')) n from events where kind = 'session_started' and session_id = 'f500000000000001'")
	if code != 0 || !strings.Contains(out, `"s":"secure-filesystem-server"`) || !strings.Contains(out, `"h":"sha256:`) {
		t.Errorf("header query: exit %d:\n%s", code, out)
	}
	// Replayed live (the server writes again in a fresh workspace) and
	// offline (no server).
	for _, args := range [][]string{{"replay", "run", "f500000000000001", "-q"}, {"replay", "run", "f500000000000001", "-q", "--offline"}} {
		if code, out := agentctl(t, home, args...); code != 0 || !strings.Contains(out, "2 tool results, 2 same, 0 differences") {
			t.Errorf("%v: exit %d:\n%s", args, code, out)
		}
	}

	// The wrong allowlist: everything outside the workspace is either not
	// there or read-only, whatever the server's own checks say.
	write("agent-root.yaml", strings.Replace(spec("fs-root", "/", "model-root.yaml"), `approvals: [{tool: "fs__write*"}]`, "", 1))
	log := filepath.Join(home, "sessions", "f500000000000002", "events.log")
	write("model-root.yaml", `turns:
  - text: "Escaping."
    tool_calls:
      - {name: fs__read_text_file, args: {path: `+filepath.Join(dir, "outside.txt")+`}}
      - {name: fs__read_text_file, args: {path: `+log+`}}
      - {name: fs__write_file, args: {path: /usr/local/agentctl-pwned, content: x}}
      - {name: fs__write_file, args: {path: /etc/agentctl-pwned, content: x}}
      - {name: fs__list_directory, args: {path: /root}}
      - {name: fs__write_file, args: {path: `+filepath.Join(dir, "pwned")+`, content: x}}
  - text: "Done."
`)
	if code, out := agentctl(t, home, "run", filepath.Join(dir, "agent-root.yaml"), "--session-id", "f500000000000002", "-q"); code != 0 {
		t.Fatalf("run with the wrong allowlist: exit %d:\n%s", code, out)
	}
	got = results(t, home, "f500000000000002")
	for id, want := range map[string]string{
		"call_1_0": "ENOENT", "call_1_1": "ENOENT", "call_1_2": "EROFS", "call_1_3": "EROFS", "call_1_4": "ENOENT",
	} {
		if !strings.HasPrefix(got[id], "error: ") || !strings.Contains(got[id], want) {
			t.Errorf("%s = %q, want an error with %s", id, got[id], want)
		}
	}
	// Under /tmp the server writes into the sandbox's private /tmp, which
	// is gone with it: the host's folder never sees the file.
	if !strings.HasPrefix(got["call_1_5"], "ok: ") {
		t.Errorf("call_1_5 = %q, want the write into the private /tmp to succeed", got["call_1_5"])
	}
	for _, p := range []string{"/usr/local/agentctl-pwned", "/etc/agentctl-pwned", filepath.Join(dir, "pwned")} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("the server wrote %s outside the workspace", p)
		}
	}
	if _, out := agentctl(t, home, "show", "f500000000000002", "--json"); strings.Contains(out, "outside-secret") {
		t.Error("a file outside the workspace reached the log")
	}
}
