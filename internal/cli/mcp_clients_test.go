package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// The end-to-end tests of `agentctl mcp` with real MCP clients from npm:
// the Claude Code CLI over stdio (driven by a scripted model behind
// agentctl proxy) and the MCP Inspector's CLI over streamable HTTP. Each
// answer a client got is held, field by field, to what the CLI prints for
// the same home: the server serves the history's figures, not its own.

// Two sessions a debugging agent asks about: a run that finished and one
// the budget stopped in a loop (diagnose has findings for it).
const (
	mcpDoneID = "0000000000a11ce1"
	mcpLoopID = "0000000000a11ce2"
)

// mcpSQL is the query both clients send; the CLI's `query --format json`
// gives the rows it must return.
const mcpSQL = "SELECT session_id, status, tool_calls FROM sessions ORDER BY session_id"

// mcpHome records the home the clients ask about: the two runs and, with
// evals, the smoke suite (its reports are what eval_reports serves).
func mcpHome(t *testing.T, evals bool) string {
	t.Helper()
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	run := func(want int, args ...string) {
		t.Helper()
		cmd := exec.Command("agentctl", append([]string{"--home", home}, args...)...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != want {
			t.Fatalf("agentctl %s: exit %d, want %d\n%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), want, out)
		}
	}
	run(0, "run", filepath.Join(fixtures, "agents", "fix-typo.yaml"), "-q", "--session-id", mcpDoneID)
	run(4, "run", filepath.Join(fixtures, "agents", "loop-forever.yaml"), "-q", "--session-id", mcpLoopID)
	if evals {
		run(0, "eval", filepath.Join(fixtures, "suites", "smoke.yaml"), "-q")
	}
	return home
}

// mcpCall is one question to a tool of `agentctl mcp` and the CLI
// command that answers the same question as JSON.
type mcpCall struct {
	tool string
	args map[string]string
	cli  []string // nil: the answer has no CLI twin; check is called instead
	// check holds an answer with no JSON twin to what it must say.
	check func(t *testing.T, home string, answer any)
}

// The three questions the Claude Code test scripts, in its order.
func claudeCalls() []mcpCall {
	return []mcpCall{
		{tool: "list_sessions", args: map[string]string{}, cli: []string{"sessions", "--json"}},
		{tool: "diagnose", args: map[string]string{"session_id": mcpLoopID}, cli: []string{"diagnose", mcpLoopID, "--json"}},
		{tool: "query", args: map[string]string{"sql": mcpSQL}, cli: []string{"query", "--format", "json", mcpSQL}},
	}
}

// cliJSON runs the CLI against home and decodes its JSON output; a
// command printing one JSON value per line (show --json, replay verify
// --json) is decoded as an array of them.
func cliJSON(t *testing.T, home string, args ...string) any {
	t.Helper()
	out := agentctlOut(t, home, args...)
	if v, err := decodeJSON([]byte(out)); err == nil {
		return v
	}
	var rows []any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		v, err := decodeJSON([]byte(line))
		if err != nil {
			t.Fatalf("agentctl %s: not JSON: %v\n%s", strings.Join(args, " "), err, out)
		}
		rows = append(rows, v)
	}
	return rows
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// jsonDiff names the first place where got and want differ, field by
// field ("" when they agree): a path like [1].findings[0].text.
func jsonDiff(path string, got, want any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an object", orRoot(path), brief(got))
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !gok:
				return fmt.Sprintf("%s.%s: missing, want %s", path, k, brief(wv))
			case !wok:
				return fmt.Sprintf("%s.%s: got %s, the CLI has no such field", path, k, brief(gv))
			}
			if d := jsonDiff(path+"."+k, gv, wv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an array", orRoot(path), brief(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: %d items, want %d", orRoot(path), len(g), len(w))
		}
		for i := range w {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%s: got %s, want %s", orRoot(path), brief(got), brief(want))
	}
	return ""
}

func orRoot(path string) string {
	if path == "" {
		return "(top)"
	}
	return path
}

func brief(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// holdToCLI checks one tool answer (the text the client got) against the
// CLI's JSON for the same question.
func holdToCLI(t *testing.T, home string, c mcpCall, text string) {
	t.Helper()
	got, err := decodeJSON([]byte(text))
	if err != nil {
		t.Errorf("%s answered %q: not JSON: %v", c.tool, brief(text), err)
		return
	}
	if c.cli == nil {
		c.check(t, home, got)
		return
	}
	want := cliJSON(t, home, c.cli...)
	if d := jsonDiff("", unwrapAnswer(got, want), want); d != "" {
		t.Errorf("%s(%v) and `agentctl %s` differ: %s", c.tool, c.args, strings.Join(c.cli, " "), d)
	}
}

// unwrapAnswer takes from a tool's answer the part the CLI prints: a
// paged answer wraps the CLI's array in an object with its cursor.
func unwrapAnswer(got, want any) any {
	if _, isArray := want.([]any); !isArray {
		return got
	}
	if obj, ok := got.(map[string]any); ok {
		for _, v := range obj {
			if arr, ok := v.([]any); ok {
				return arr
			}
		}
	}
	return got
}

// The real Claude Code CLI (npm), configured with `agentctl mcp` as a
// stdio MCP server (--mcp-config, its tools allowed non-interactively),
// is driven through agentctl proxy by a scripted model that calls
// list_sessions, diagnose and query in turn. The tool results Claude Code
// sent back to the model, as the proxy recorded them, are the CLI's
// `sessions --json`, `diagnose --json` and `query --format json` for the
// same home, field by field. Without the server Claude Code has no such
// tools and the run records none of these results.
func TestMCPClaudeCode(t *testing.T) {
	npm := os.Getenv("AGENTCTL_NPM_AGENTS")
	if npm == "" {
		t.Skip("AGENTCTL_NPM_AGENTS is not set (.ci/run installs the npm agents there)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	agentctlBin, err := exec.LookPath("agentctl")
	if err != nil {
		t.Fatal(err)
	}
	home := mcpHome(t, false)
	dir := t.TempDir()
	calls := claudeCalls()

	// The scripted model: one MCP tool per turn, then an answer.
	var script strings.Builder
	script.WriteString("turns:\n")
	allowed := make([]string, len(calls))
	for i, c := range calls {
		allowed[i] = "mcp__agentctl__" + c.tool
		args, _ := json.Marshal(c.args)
		fmt.Fprintf(&script, "  - text: \"Asking agentctl.\"\n    tool_calls:\n      - {name: %s, args: %s}\n    usage: {input_tokens: 900, output_tokens: 30}\n", allowed[i], args)
	}
	script.WriteString("  - text: \"The loop-forever run kept re-running make.\"\n    usage: {input_tokens: 1000, output_tokens: 12}\n")
	model := filepath.Join(dir, "model.yaml")
	cfg := filepath.Join(dir, "mcp.json")
	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"agentctl": map[string]any{"type": "stdio", "command": agentctlBin, "args": []string{"mcp", "--home", home}},
	}})
	for name, b := range map[string][]byte{model: []byte(script.String()), cfg: config} {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	launcher, _ := filepath.Abs(filepath.Join("..", "..", "fixtures", "external", "clients", "claude-code.sh"))
	rec := t.TempDir()
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "agentctl", "--home", rec, "proxy", "--script", model, "--session", "mcpcc", "--",
		"sh", launcher, filepath.Join(dir, "user"), "Why did last night's run fail? Ask agentctl.",
		"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools="+strings.Join(allowed, ","))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "AGENTCTL_NPM_AGENTS="+npm)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("proxy with Claude Code: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "The loop-forever run kept re-running make.") {
		t.Errorf("Claude Code answered %q, want the scripted answer", out.String())
	}

	// The tool results Claude Code sent back, in the order it was asked.
	var results []session.Event
	for _, e := range showEvents(t, rec, "mcpcc") {
		if e.Kind == session.KindToolResult {
			results = append(results, e)
		}
	}
	if len(results) != len(calls) {
		t.Fatalf("the session has %d tool results, want %d (one per MCP call):\n%s", len(results), len(calls), agentctlOut(t, rec, "show", "mcpcc"))
	}
	for i, c := range calls {
		r := results[i]
		if r.Tool != allowed[i] || r.Status != "ok" {
			t.Errorf("tool result %d: %s %s, want %s ok: %s", i+1, r.Tool, r.Status, allowed[i], brief(r.Output))
			continue
		}
		holdToCLI(t, home, c, r.Output)
	}
}
