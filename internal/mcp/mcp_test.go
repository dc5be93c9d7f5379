package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/mcp"
	"github.com/agentctl/agentctl/internal/mcp/mcptest"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/tools"
)

// TestMain lets this test binary be the MCP server under test (a hidden
// mode chosen by the environment) and host the sandbox it runs in.
func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	sandbox.Init()
	os.Exit(m.Run())
}

// stdioServer is the test binary as a stdio MCP server in mode.
func stdioServer(t *testing.T, name, mode string) mcp.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Server{Name: name, Command: []string{exe}, Env: map[string]string{mcptest.ServeEnv: "stdio", mcptest.ModeEnv: mode}}
}

func sandboxOK() error { return sandbox.Available() }

// discover lists srv's tools in the default sandbox and returns them by
// name; the set is closed when the test ends.
func discover(t *testing.T, opts mcp.Options) (*mcp.Set, map[string]tools.Tool) {
	t.Helper()
	set, err := mcp.Discover(context.Background(), opts)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	t.Cleanup(set.Close)
	byName := map[string]tools.Tool{}
	for _, tl := range set.Tools {
		byName[tl.Name()] = tl
	}
	return set, byName
}

func call(ws string, args string, key string) tools.Call {
	return tools.Call{Args: json.RawMessage(args), Workspace: ws, IdempotencyKey: key, Timeout: 20 * time.Second,
		ArtifactPath: filepath.Join(ws, "..", "artifacts", "c1.txt")}
}

func workspace(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestStdioServer runs a real MCP server on stdio in the sandbox: its
// tools are listed with their schemas and annotations, named
// <server>__<tool>, treated as the annotations say, and called; the
// side-effecting call carries the idempotency key in _meta, so a repeat
// with the same key takes effect once.
func TestStdioServer(t *testing.T) {
	testenv.NeedSandbox(t)
	set, byName := discover(t, mcp.Options{Servers: []mcp.Server{stdioServer(t, "notes", "")}})
	if len(set.Servers) != 1 {
		t.Fatalf("servers = %d, want 1", len(set.Servers))
	}
	rec := set.Servers[0]
	if rec.ProtocolVersion != mcp.ProtocolVersion || rec.ServerName != "agentctl-mcptest" || rec.Transport != "stdio" {
		t.Errorf("server record = %+v", rec)
	}
	if rec.ToolsHash != session.MCPToolsHash(rec.Tools) || !strings.HasPrefix(rec.ToolsHash, "sha256:") {
		t.Errorf("tools hash = %q", rec.ToolsHash)
	}
	want := map[string]struct{ side, idem bool }{
		"notes__read_note": {false, false}, "notes__add_note": {true, true},
		"notes__read_file": {false, false}, "notes__env": {false, false},
	}
	if len(byName) != len(want) {
		t.Fatalf("tools = %v, want %v", keys(byName), want)
	}
	for name, w := range want {
		tl, ok := byName[name]
		if !ok {
			t.Fatalf("tool %s missing; have %v", name, keys(byName))
		}
		idem := tl.(tools.Reconciler).Idempotent()
		if tl.SideEffects() != w.side || idem != w.idem {
			t.Errorf("%s: side effects %v idempotent %v, want %v %v", name, tl.SideEffects(), idem, w.side, w.idem)
		}
	}
	// The schema is the server's and our validator checks calls against it.
	if err := tools.Validate(byName["notes__add_note"], json.RawMessage(`{"name":"a"}`)); err == nil || !strings.Contains(err.Error(), "text") {
		t.Errorf("Validate without text = %v, want a missing-property error", err)
	}

	ws := workspace(t)
	add := byName["notes__add_note"]
	for i := range 2 {
		res := add.Run(context.Background(), call(ws, `{"name":"n1","text":"hello"}`, "sess-7-0-notes__add_note"))
		if res.Status != session.ResultOK || res.Output != "added note n1" {
			t.Fatalf("add_note try %d = %+v", i, res)
		}
	}
	ledger, err := os.ReadFile(filepath.Join(ws, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(ledger), "sess-7-0-notes__add_note"); n != 1 {
		t.Errorf("ledger holds the key %d times, want 1:\n%s", n, ledger)
	}
	res := byName["notes__read_note"].Run(context.Background(), call(ws, `{"name":"n1"}`, ""))
	if res.Status != session.ResultOK || res.Output != "hello" {
		t.Errorf("read_note = %+v", res)
	}
	res = byName["notes__read_note"].Run(context.Background(), call(ws, `{"name":"missing"}`, ""))
	if res.Status != session.ResultError || !strings.Contains(res.Error, "no note missing") {
		t.Errorf("read_note of a missing note = %+v, want the tool's error", res)
	}
}

func keys(m map[string]tools.Tool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestServerFailures: a server that dies mid-call, never answers, or
// sends garbage becomes a tool error that says so, within the tool
// timeout, and is started afresh for the next call.
func TestServerFailures(t *testing.T) {
	testenv.NeedSandbox(t)
	cases := []struct {
		mode    string
		timeout time.Duration
		want    string
	}{
		{"crash-once", 20 * time.Second, "crashing in the middle of add_note"},
		{"hang", 2 * time.Second, "timed out after 2s: MCP server srv did not answer"},
		{"garbage", 20 * time.Second, "MCP server srv failed"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			set, byName := discover(t, mcp.Options{Servers: []mcp.Server{stdioServer(t, "srv", c.mode)}})
			ws := workspace(t)
			cl := call(ws, `{"name":"n","text":"x"}`, "k1")
			cl.Timeout = c.timeout
			began := time.Now()
			res := byName["srv__add_note"].Run(context.Background(), cl)
			took := time.Since(began)
			if res.Status != session.ResultError || !strings.Contains(res.Error, c.want) || !strings.Contains(res.Error, "starts again for the next call") {
				t.Fatalf("call = %+v, want an error with %q", res, c.want)
			}
			if took > c.timeout+5*time.Second {
				t.Errorf("the call took %s, past its timeout %s", took, c.timeout)
			}
			client := byName["srv__add_note"].(*mcp.Tool).Server()
			starts := client.Starts()
			// The next call starts the server again.
			res = byName["srv__read_note"].Run(context.Background(), call(ws, `{"name":"n"}`, ""))
			if client.Starts() != starts+1 {
				t.Errorf("starts = %d after the next call, want %d", client.Starts(), starts+1)
			}
			if c.mode == "crash-once" && (res.Status != session.ResultOK || res.Output != "x") {
				t.Errorf("read after the crash = %+v, want the note written before it", res)
			}
			if c.mode != "crash-once" && res.Status != session.ResultError && res.Status != session.ResultOK {
				t.Errorf("next call = %+v", res)
			}
			_ = set
		})
	}
}

// TestFloodIsCapped: a server that answers megabytes is cut to the call's
// output cap like a built-in, and the whole answer kept as the artifact.
func TestFloodIsCapped(t *testing.T) {
	testenv.NeedSandbox(t)
	_, byName := discover(t, mcp.Options{Servers: []mcp.Server{stdioServer(t, "srv", "flood")}})
	ws := workspace(t)
	cl := call(ws, `{"name":"x"}`, "")
	cl.MaxOutput = 4096
	res := byName["srv__read_note"].Run(context.Background(), cl)
	if res.Status != session.ResultOK || !res.Truncated || len(res.Output) > 4096+100 || !strings.Contains(res.Output, "bytes elided") {
		t.Fatalf("flood: status %s truncated %v, %d bytes", res.Status, res.Truncated, len(res.Output))
	}
	fi, err := os.Stat(res.Artifact)
	if err != nil || fi.Size() != mcptest.FloodBytes {
		t.Fatalf("artifact %q: %v, size %d, want %d", res.Artifact, err, sizeOf(fi), mcptest.FloodBytes)
	}
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return -1
	}
	return fi.Size()
}

// TestHostileToolLists: a server advertising ten thousand tools, tools
// too big for every model request, a name a model cannot call or a schema
// the validator cannot check is refused with an error that says why, and
// none of its tools is offered.
func TestHostileToolLists(t *testing.T) {
	testenv.NeedSandbox(t)
	for _, c := range []struct{ mode, want string }{
		{"many", "lists more than 512 tools"},
		{"huge", "its description and schema take 120"},
		{"wide", "descriptions and schemas take more than 1048576 bytes together"},
		{"badname", `lists a tool named "rm -rf ../", which a model cannot call`},
		{"badschema", `tool old: its input schema cannot be checked: unsupported $schema`},
	} {
		t.Run(c.mode, func(t *testing.T) {
			set, err := mcp.Discover(context.Background(), mcp.Options{Servers: []mcp.Server{stdioServer(t, "big", c.mode)}})
			if err == nil || !strings.Contains(err.Error(), c.want) || set != nil {
				t.Fatalf("Discover = %v, %v; want a refusal with %q", set, err, c.want)
			}
		})
	}
}

// TestServerConfined: the server reads any path it is given, but runs in
// the sandbox: files outside the workspace (a folder under /tmp, the
// user's credential folders) do not exist for it, and its environment is
// scrubbed of agentctl's secrets.
func TestServerConfined(t *testing.T) {
	testenv.NeedSandbox(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("outside-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPTEST_API_TOKEN", "tok-should-not-leak-1234")
	_, byName := discover(t, mcp.Options{Servers: []mcp.Server{stdioServer(t, "srv", "")}})
	ws := workspace(t)
	if err := os.WriteFile(filepath.Join(ws, "inside.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	rf := byName["srv__read_file"]
	for _, c := range []struct{ path, want string }{
		{"inside.txt", "inside"},
		{outside, "no such file"},
		{"../../" + filepath.Base(filepath.Dir(outside)) + "/secret.txt", "no such file"},
	} {
		args, _ := json.Marshal(map[string]string{"path": c.path})
		res := rf.Run(context.Background(), call(ws, string(args), ""))
		got := res.Output + res.Error
		if !strings.Contains(got, c.want) || strings.Contains(got, "outside-secret") {
			t.Errorf("read_file %s = %+v, want %q", c.path, res, c.want)
		}
	}
	res := byName["srv__env"].Run(context.Background(), call(ws, `{}`, ""))
	if strings.Contains(res.Output, "tok-should-not-leak") || !strings.Contains(res.Output, "HOME="+ws) {
		t.Errorf("the server's environment:\n%s", res.Output)
	}
}

// TestStderrArtifactRedacted: the server's stderr goes to an artifact next
// to the call's, redacted.
func TestStderrArtifactRedacted(t *testing.T) {
	testenv.NeedSandbox(t)
	srv := stdioServer(t, "srv", "stderr")
	srv.Env[mcptest.StderrSecretEnv] = "s3cr3t-value-for-the-test"
	_, byName := discover(t, mcp.Options{Servers: []mcp.Server{srv}})
	ws := workspace(t)
	cl := call(ws, `{}`, "")
	cl.Redactor = redact.New(redact.Secret{Name: "TEST_SECRET", Value: "s3cr3t-value-for-the-test"})
	if res := byName["srv__env"].Run(context.Background(), cl); res.Status != session.ResultOK {
		t.Fatalf("env = %+v", res)
	}
	if strings.Contains(cl.Redactor.String("x s3cr3t-value-for-the-test"), "s3cr3t") {
		t.Fatal("the redactor does not know the secret")
	}
	byName["srv__env"].(*mcp.Tool).Server().Close() // flushes the artifact
	path := filepath.Join(filepath.Dir(cl.ArtifactPath), "mcp-srv.stderr.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "starting with token [REDACTED:TEST_SECRET]") || strings.Contains(string(b), "s3cr3t") {
		t.Errorf("stderr artifact:\n%s", b)
	}
}

// TestHTTPServer: a streamable HTTP server is reached only where the
// sandbox's network rules let a tool reach (its host:port allowed), with
// the configured headers on every request.
func TestHTTPServer(t *testing.T) {
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
	srv := mcp.Server{Name: "web", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer tkn"}}

	_, err := mcp.Discover(context.Background(), mcp.Options{Servers: []mcp.Server{srv}})
	if err == nil || !strings.Contains(err.Error(), host+" is not in sandbox.allow") {
		t.Fatalf("Discover with the network denied = %v, want a refusal naming %s", err, host)
	}
	env := mcp.Env{Sandbox: &sandbox.Config{Allow: []string{host}}}
	_, byName := discover(t, mcp.Options{Servers: []mcp.Server{srv}, Env: env})
	ws := workspace(t)
	cl := call(ws, `{"name":"h","text":"over http"}`, "key-http")
	cl.Sandbox = env.Sandbox
	res := byName["web__add_note"].Run(context.Background(), cl)
	if res.Status != session.ResultOK {
		t.Fatalf("add_note over HTTP = %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes", "h")); string(b) != "over http" {
		t.Errorf("the HTTP server wrote %q", b)
	}
	mu.Lock()
	for _, a := range auth {
		if a != "Bearer tkn" {
			t.Errorf("a request went without the header: %q", auth)
			break
		}
	}
	mu.Unlock() // the handler takes it for each request, the session's DELETE included
	// A call whose sandbox no longer allows the host is refused.
	cl.Sandbox = &sandbox.Config{}
	if res := byName["web__read_note"].Run(context.Background(), cl); res.Status != session.ResultError || !strings.Contains(res.Error, "not in sandbox.allow") {
		t.Errorf("call with the host not allowed = %+v", res)
	}
}

// TestHTTPServerGone: an HTTP server that stops answering mid-session is
// a tool error, not a hang.
func TestHTTPServerGone(t *testing.T) {
	dir := t.TempDir()
	ts := httptest.NewServer(mcptest.Handler(dir, ""))
	host := strings.TrimPrefix(ts.URL, "http://")
	env := mcp.Env{Sandbox: &sandbox.Config{Allow: []string{host}}}
	_, byName := discover(t, mcp.Options{Servers: []mcp.Server{{Name: "web", URL: ts.URL}}, Env: env})
	ts.Close()
	ln, err := net.Listen("tcp", host) // something that accepts and never answers
	if err == nil {
		defer ln.Close()
	}
	cl := call(workspace(t), `{"name":"x"}`, "")
	cl.Sandbox, cl.Timeout = env.Sandbox, 2*time.Second
	began := time.Now()
	res := byName["web__read_note"].Run(context.Background(), cl)
	if res.Status != session.ResultError || time.Since(began) > 8*time.Second {
		t.Fatalf("call to a gone server = %+v after %s", res, time.Since(began))
	}
}

// TestDecide: the spec's declaration wins over the annotations, and the
// annotations' defaults are conservative.
func TestDecide(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		ann        string
		d          mcp.Decl
		side, idem bool
	}{
		{``, mcp.Decl{}, true, false},
		{`{"readOnlyHint":true}`, mcp.Decl{}, false, false},
		{`{"idempotentHint":true}`, mcp.Decl{}, true, true},
		{`{"destructiveHint":false}`, mcp.Decl{}, true, false},
		{`{"readOnlyHint":true}`, mcp.Decl{SideEffects: &yes}, true, false},
		{`{"idempotentHint":true}`, mcp.Decl{Idempotent: &no}, true, false},
		{``, mcp.Decl{SideEffects: &no, Idempotent: &yes}, false, false},
	}
	for _, c := range cases {
		got := mcp.Decide(session.MCPTool{Name: "t", Annotations: json.RawMessage(c.ann)}, c.d)
		if got.SideEffects != c.side || got.Idempotent != c.idem {
			t.Errorf("Decide(%s, %+v) = side %v idem %v, want %v %v", c.ann, c.d, got.SideEffects, got.Idempotent, c.side, c.idem)
		}
	}
}
