// Package mcptest is a real MCP server, written with the official Go SDK,
// for agentctl's tests: a read tool, a side-effecting tool that keeps a
// ledger in its working directory (idempotent by the key in _meta), and
// switches that make it misbehave the ways a real server can (crash
// mid-call, never answer, send garbage, flood, list ten thousand tools).
// Test binaries run it as a hidden mode (Main) on stdio, in agentctl's
// sandbox, or serve Handler over streamable HTTP.
//
// Tools (cwd is the server's working directory, the workspace):
//
//	read_note {name}        readOnlyHint: the text of notes/<name>
//	add_note  {name, text}  idempotentHint: appends {key, name, text} to
//	                        ledger.jsonl and writes notes/<name>; a key
//	                        already in the ledger returns the first result
//	                        and appends nothing
//	read_file {path}        readOnlyHint: reads ANY path it is given, with
//	                        no check at all (the sandbox must confine it)
//	env {}                  readOnlyHint: its environment, one per line
//
// Behaviour is chosen by the environment variable ModeEnv:
// "" (well behaved), "crash" (add_note exits mid-call, after its effect),
// "crash-once" (only the first add_note does), "hang" (add_note never
// answers), "garbage" (add_note answers a line that is not JSON-RPC),
// "flood" (read_note returns FloodBytes of text), "many" (lists 10,000
// tools), "stderr" (writes StderrSecretEnv's value to stderr at start),
// "v2" (lists one more tool, delete_note: a changed tool surface),
// "nokey" (add_note ignores the idempotency key); hostile tool lists:
// "huge" (one 120 KB description), "wide" (400 tools of 4 KB each),
// "badname" (a tool named "rm -rf ../"), "badschema" (a draft-04 schema).
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables.
const (
	// ServeEnv, set to "stdio", makes a test binary that calls
	// MaybeServe run the server instead of its tests.
	ServeEnv = "AGENTCTL_MCPTEST_SERVE"
	// ModeEnv chooses the behaviour (see the package documentation).
	ModeEnv = "AGENTCTL_MCPTEST_MODE"
	// StderrSecretEnv names a value the "stderr" mode writes to stderr.
	StderrSecretEnv = "AGENTCTL_MCPTEST_SECRET"
)

// FloodBytes is how much read_note returns in "flood" mode.
const FloodBytes = 5 << 20

// MaybeServe runs the stdio server and exits when ServeEnv is "stdio";
// otherwise it returns at once. Call it first thing in TestMain.
func MaybeServe() {
	if os.Getenv(ServeEnv) != "stdio" {
		return
	}
	Main()
}

// Main serves on stdin/stdout in the working directory and exits.
func Main() {
	mode := os.Getenv(ModeEnv)
	if mode == "stderr" {
		fmt.Fprintf(os.Stderr, "starting with token %s\n", os.Getenv(StderrSecretEnv))
	}
	wd, _ := os.Getwd()
	s := NewServer(wd, mode)
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Handler serves the server over streamable HTTP, working in dir.
func Handler(dir, mode string) http.Handler {
	s := NewServer(dir, mode)
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
}

var ledgerMu sync.Mutex

// NewServer returns the server working in dir.
func NewServer(dir, mode string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "agentctl-mcptest", Version: "1.0.0"}, nil)
	text := func(format string, a ...any) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, a...)}}}
	}
	failed := func(format string, a ...any) *sdk.CallToolResult {
		r := text(format, a...)
		r.IsError = true
		return r
	}
	args := func(req *sdk.CallToolRequest) map[string]string {
		m := map[string]string{}
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	okTool := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ok"), nil }
	switch mode {
	case "many":
		for i := range 10000 {
			s.AddTool(&sdk.Tool{Name: fmt.Sprintf("t%05d", i), InputSchema: json.RawMessage(`{"type":"object"}`)}, okTool)
		}
		return s
	case "huge":
		s.AddTool(&sdk.Tool{Name: "huge", Description: strings.Repeat("a very long description ", 5000), InputSchema: json.RawMessage(`{"type":"object"}`)}, okTool)
		return s
	case "wide":
		for i := range 400 {
			s.AddTool(&sdk.Tool{Name: fmt.Sprintf("w%03d", i), Description: strings.Repeat("d", 4000), InputSchema: json.RawMessage(`{"type":"object"}`)}, okTool)
		}
		return s
	case "badname":
		s.AddTool(&sdk.Tool{Name: "rm -rf ../", InputSchema: json.RawMessage(`{"type":"object"}`)}, okTool)
		return s
	case "badschema":
		s.AddTool(&sdk.Tool{Name: "old", InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`)}, okTool)
		return s
	}
	s.AddTool(&sdk.Tool{Name: "read_note", Description: "Read a note by name.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if mode == "flood" {
				return text("%s", strings.Repeat("0123456789abcdef", FloodBytes/16)), nil
			}
			name := args(req)["name"]
			b, err := os.ReadFile(filepath.Join(dir, "notes", filepath.Base(name)))
			if err != nil {
				return failed("no note %s", name), nil
			}
			return text("%s", b), nil
		})
	s.AddTool(&sdk.Tool{Name: "add_note", Description: "Add a note; calls with the same idempotency key take effect once.",
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1},"text":{"type":"string"}},"required":["name","text"],"additionalProperties":false}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			a := args(req)
			key, _ := req.Params.Meta["agentctl/idempotency_key"].(string)
			if mode == "nokey" {
				key = "" // a server that ignores the key: a repeat duplicates
			}
			switch mode {
			case "hang":
				<-ctx.Done()
				select {} // never answers, not even to a cancellation
			case "garbage":
				os.Stdout.WriteString("this is not a JSON-RPC message\n")
				select {}
			}
			out, err := addNote(dir, key, a["name"], a["text"])
			if err != nil {
				return failed("add_note: %v", err), nil
			}
			if mode == "crash" || (mode == "crash-once" && !exists(filepath.Join(dir, ".crashed"))) {
				_ = os.WriteFile(filepath.Join(dir, ".crashed"), nil, 0o644)
				fmt.Fprintln(os.Stderr, "mcptest: crashing in the middle of add_note")
				os.Exit(3)
			}
			return text("%s", out), nil
		})
	s.AddTool(&sdk.Tool{Name: "read_file", Description: "Read any file by path (no checks at all).",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			p := args(req)["path"]
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return failed("read %s: %v", p, err), nil
			}
			return text("%s", b), nil
		})
	if mode == "v2" {
		s.AddTool(&sdk.Tool{Name: "delete_note", Description: "Delete a note.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("deleted"), nil })
	}
	s.AddTool(&sdk.Tool{Name: "env", Description: "Print the environment.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			env := os.Environ()
			sort.Strings(env)
			return text("%s", strings.Join(env, "\n")), nil
		})
	return s
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// addNote is the side effect: one ledger line per key, and the note file.
func addNote(dir, key, name, text string) (string, error) {
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	ledger := filepath.Join(dir, "ledger.jsonl")
	if key != "" {
		if b, err := os.ReadFile(ledger); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				var e struct{ Key, Name string }
				if json.Unmarshal([]byte(line), &e) == nil && e.Key == key {
					return "added note " + e.Name, nil // the first answer, again
				}
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", filepath.Base(name)), []byte(text), 0o644); err != nil {
		return "", err
	}
	line, _ := json.Marshal(map[string]string{"key": key, "name": name, "text": text})
	f, err := os.OpenFile(ledger, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	return "added note " + name, nil
}
