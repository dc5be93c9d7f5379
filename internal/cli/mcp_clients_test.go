package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/cli"
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
	run(cli.ExitOK, "run", filepath.Join(fixtures, "agents", "fix-typo.yaml"), "-q", "--session-id", mcpDoneID)
	run(cli.ExitBudgetExceeded, "run", filepath.Join(fixtures, "agents", "loop-forever.yaml"), "-q", "--session-id", mcpLoopID)
	if evals {
		run(cli.ExitOK, "eval", filepath.Join(fixtures, "suites", "smoke.yaml"), "-q")
	}
	return home
}

// mcpCall is one question to a tool of `agentctl mcp` and the CLI
// command that answers the same question as JSON.
type mcpCall struct {
	tool string
	args map[string]any
	cli  []string // the CLI command whose JSON the answer must equal
	// field, when set, is the member of the answer's object that holds
	// the CLI's JSON (a paged answer wraps the CLI's array: sessions,
	// events, rows).
	field string
	// keys, when set, are the only members of each row compared (a tool
	// whose rows carry more than the CLI's twin question selects).
	keys []string
	// reshape, when set, renames the answer's members to the CLI's names
	// before the figures are compared.
	reshape func(any) any
}

// The three questions the Claude Code test scripts, in its order.
func claudeCalls() []mcpCall {
	return []mcpCall{
		{tool: "list_sessions", args: map[string]any{}, cli: []string{"sessions", "--json"}, field: "sessions"},
		{tool: "diagnose", args: map[string]any{"session": mcpLoopID}, cli: []string{"diagnose", mcpLoopID, "--json"}},
		{tool: "query", args: map[string]any{"sql": mcpSQL}, cli: []string{"query", "--format", "json", mcpSQL}, field: "rows"},
	}
}

// cliJSON runs the CLI against home and decodes its JSON output; a
// command printing one JSON value per line (show --json, replay verify
// --json) is decoded as an array of them.
func cliJSON(t *testing.T, home string, args ...string) any {
	t.Helper()
	cmd := exec.Command("agentctl", append([]string{"--home", home}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Exit 6 is a finding, not a failure: replay diff of two sessions
	// that differ prints its comparison and exits 6.
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != cli.ExitChecksFailed {
		t.Fatalf("agentctl %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	out := stdout.String()
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
	case json.Number:
		// Numbers by value: 1.0 and 1, 1e-05 and 0.00001 are the same figure.
		g, ok := got.(json.Number)
		gr, gok := new(big.Rat).SetString(string(g))
		wr, wok := new(big.Rat).SetString(string(w))
		if !ok || !gok || !wok || gr.Cmp(wr) != 0 {
			return fmt.Sprintf("%s: got %s, want %s", orRoot(path), brief(got), brief(want))
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
// CLI's JSON for the same question, field by field.
func holdToCLI(t *testing.T, home string, c mcpCall, text string) {
	t.Helper()
	got, err := decodeJSON([]byte(text))
	if err != nil {
		t.Errorf("%s answered %s: not JSON: %v", c.tool, brief(text), err)
		return
	}
	if c.field != "" {
		obj, _ := got.(map[string]any)
		v, ok := obj[c.field]
		if !ok {
			t.Errorf("%s answered %s: no %q", c.tool, brief(got), c.field)
			return
		}
		got = v
	}
	if c.reshape != nil {
		got = c.reshape(got)
	}
	want := cliJSON(t, home, c.cli...)
	if rows, ok := want.([]any); ok && len(rows) == 0 {
		t.Fatalf("`agentctl %s` printed no rows: the home has nothing to compare %s with", strings.Join(c.cli, " "), c.tool)
	}
	if c.keys != nil {
		got, want = onlyKeys(got, c.keys), onlyKeys(want, c.keys)
	}
	if d := jsonDiff("", got, want); d != "" {
		t.Errorf("%s(%s) and `agentctl %s` differ: %s", c.tool, brief(c.args), strings.Join(c.cli, " "), d)
	}
}

// onlyKeys keeps keys of each row of an array of objects.
func onlyKeys(v any, keys []string) any {
	rows, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(rows))
	for i, r := range rows {
		obj, ok := r.(map[string]any)
		if !ok {
			out[i] = r
			continue
		}
		kept := map[string]any{}
		for _, k := range keys {
			if x, ok := obj[k]; ok {
				kept[k] = x
			}
		}
		out[i] = kept
	}
	return out
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
	t.Parallel() // long, and self-contained: it overlaps the scripts' tail
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

// The seven tools the Inspector test calls, each once, and the CLI
// command each answer is held to. compare_sessions is view --compare's
// comparison, which `replay diff --json` prints; eval_reports' suite row
// is held to the CLI's own count of the suite's reports.
func inspectorCalls() []mcpCall {
	const evalSQL = "SELECT suite, count(*) AS reports, arg_max(ok, started) AS last_ok, arg_max(runs_ok, started) AS last_runs_ok, arg_max(runs, started) AS last_runs FROM eval_runs GROUP BY suite ORDER BY suite"
	return []mcpCall{
		{tool: "list_sessions", args: map[string]any{}, cli: []string{"sessions", "--json"}, field: "sessions"},
		{tool: "show_session", args: map[string]any{"session": mcpDoneID}, cli: []string{"show", "--json", mcpDoneID}, field: "events"},
		{tool: "diagnose", args: map[string]any{"session": mcpLoopID}, cli: []string{"diagnose", mcpLoopID, "--json"}},
		{tool: "compare_sessions", args: map[string]any{"a": mcpDoneID, "b": mcpLoopID}, cli: []string{"replay", "diff", mcpDoneID, mcpLoopID, "--json"},
			reshape: compareAsDiff},
		{tool: "query", args: map[string]any{"sql": mcpSQL}, cli: []string{"query", "--format", "json", mcpSQL}, field: "rows"},
		{tool: "eval_reports", args: map[string]any{}, cli: []string{"query", "--format", "json", evalSQL}, field: "rows",
			keys: []string{"suite", "reports", "last_ok", "last_runs_ok", "last_runs"}},
		{tool: "replay_verify", args: map[string]any{"session": mcpDoneID}, cli: []string{"replay", "verify", mcpDoneID, "--json"}},
	}
}

// compareAsDiff renames compare_sessions' answer (the UI's comparison,
// view.Compare) to replay diff --json's names: each side's summary is the
// side, and a turn's in, out and cost are input_tokens, output_tokens and
// cost_usd. The figures are not touched.
func compareAsDiff(v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for _, k := range []string{"a", "b"} {
		if side, ok := obj[k].(map[string]any); ok && side["summary"] != nil {
			obj[k] = side["summary"]
		}
	}
	rows, _ := obj["rows"].([]any)
	for _, r := range rows {
		row, _ := r.(map[string]any)
		for _, k := range []string{"a", "b"} {
			turn, ok := row[k].(map[string]any)
			if !ok {
				continue
			}
			for from, to := range map[string]string{"in": "input_tokens", "out": "output_tokens", "cost": "cost_usd"} {
				if x, ok := turn[from]; ok {
					turn[to] = x
					delete(turn, from)
				}
			}
		}
	}
	return obj
}

// The MCP Inspector's CLI (npm @modelcontextprotocol/inspector) against
// `agentctl mcp --listen 127.0.0.1:0` over streamable HTTP with the
// bearer token the server printed: tools/list has the seven tools, each
// tools/call answers without an error and with the CLI's figures for the
// same home, the diagnosis resource is `agentctl diagnose`'s text, and a
// request without the token is refused. Without the
// server there is nothing to connect to.
func TestMCPInspector(t *testing.T) {
	npm := os.Getenv("AGENTCTL_NPM_INSPECTOR")
	if npm == "" {
		t.Skip("AGENTCTL_NPM_INSPECTOR is not set (.ci/run installs the MCP Inspector there)")
	}
	inspector := filepath.Join(npm, "node_modules", ".bin", "mcp-inspector")
	home := mcpHome(t, true)
	url, token := startMCPHTTP(t, home)

	user := t.TempDir() // the Inspector keeps a catalog and secrets under ~/.mcp-inspector
	inspect := func(withToken bool, args ...string) (map[string]any, string, int) {
		t.Helper()
		full := []string{"--cli", url, "--transport", "http", "--format", "json", "-q"}
		if withToken {
			full = append(full, "--header", "Authorization: Bearer "+token)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, inspector, append(full, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+user)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		var res struct {
			Result map[string]any `json:"result"`
		}
		if cmd.ProcessState.ExitCode() == 0 {
			if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Result == nil {
				t.Fatalf("inspector %s: not a result: %v\n%s", strings.Join(args, " "), err, out.String())
			}
		}
		return res.Result, out.String() + errb.String(), cmd.ProcessState.ExitCode()
	}

	list, out, code := inspect(true, "--method", "tools/list")
	if code != 0 {
		t.Fatalf("inspector tools/list: exit %d\n%s", code, out)
	}
	tools, _ := list["tools"].([]any)
	listed := map[string]bool{}
	for _, x := range tools {
		if tool, ok := x.(map[string]any); ok {
			listed[fmt.Sprint(tool["name"])] = true
		}
	}
	calls := inspectorCalls()
	for _, c := range calls {
		if !listed[c.tool] {
			t.Errorf("tools/list has no %s: %s", c.tool, brief(list))
		}
	}
	if len(tools) != len(calls) {
		t.Errorf("tools/list has %d tools, want the %d of agentctl mcp: %s", len(tools), len(calls), brief(list))
	}

	for _, c := range calls {
		args, _ := json.Marshal(c.args)
		res, out, code := inspect(true, "--method", "tools/call", "--tool-name", c.tool, "--tool-args-json", string(args))
		if code != 0 {
			t.Errorf("inspector tools/call %s: exit %d\n%s", c.tool, code, out)
			continue
		}
		if isErr, _ := res["isError"].(bool); isErr {
			t.Errorf("%s(%s) is a tool error: %s", c.tool, args, brief(res))
			continue
		}
		var text strings.Builder
		content, _ := res["content"].([]any)
		for _, x := range content {
			if block, ok := x.(map[string]any); ok && block["type"] == "text" {
				text.WriteString(fmt.Sprint(block["text"]))
			}
		}
		holdToCLI(t, home, c, text.String())
	}

	// A resource by session id: the diagnosis as the text `agentctl
	// diagnose ID` prints.
	uri := "agentctl://sessions/" + mcpLoopID + "/diagnosis"
	if res, out, code := inspect(true, "--method", "resources/read", "--uri", uri); code != 0 {
		t.Errorf("inspector resources/read %s: exit %d\n%s", uri, code, out)
	} else {
		contents, _ := res["contents"].([]any)
		var text string
		if len(contents) == 1 {
			c, _ := contents[0].(map[string]any)
			text, _ = c["text"].(string)
		}
		if want := agentctlOut(t, home, "diagnose", mcpLoopID); text != want {
			t.Errorf("resources/read %s = %s\nwant `agentctl diagnose %s`:\n%s", uri, brief(res), mcpLoopID, want)
		}
	}

	// Without the bearer token: refused, no result.
	if _, out, code := inspect(false, "--method", "tools/list"); code == 0 {
		t.Errorf("tools/list without the token succeeded:\n%s", out)
	}
}

// startMCPHTTP starts `agentctl mcp --listen 127.0.0.1:0 --json` on home
// for the rest of the test and returns the URL and token it printed.
func startMCPHTTP(t *testing.T, home string) (url, token string) {
	t.Helper()
	cmd := exec.Command("agentctl", "--home", home, "mcp", "--listen", "127.0.0.1:0", "--json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	type listening struct {
		Kind  string `json:"kind"`
		URL   string `json:"url"`
		Token string `json:"token"`
	}
	got := make(chan listening, 1)
	go func() {
		var l listening
		json.NewDecoder(stdout).Decode(&l)
		got <- l
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-got:
		if l.URL == "" || l.Token == "" {
			t.Fatalf("agentctl mcp --listen printed no url and token (stderr %q)", errb.String())
		}
		return l.URL, l.Token
	case <-time.After(30 * time.Second):
		t.Fatalf("agentctl mcp --listen printed nothing in 30s (stderr %q)", errb.String())
	}
	return "", ""
}

// jsonDiff is what makes the client tests fail on a wrong answer: it
// names the first differing member, a missing or extra one, or a length.
func TestMCPJSONDiff(t *testing.T) {
	for _, tc := range []struct {
		got, want, diff string
	}{
		{`[{"a":1,"b":[1,2]}]`, `[{"a":1,"b":[1,2]}]`, ""},
		{`[{"a":1,"b":[1,2]}]`, `[{"a":1,"b":[1,3]}]`, "[0].b[1]: got 2, want 3"},
		{`[{"a":1}]`, `[{"a":1,"b":2}]`, "[0].b: missing, want 2"},
		{`{"a":1,"c":3}`, `{"a":1}`, ".c: got 3, the CLI has no such field"},
		{`[1]`, `[1,2]`, "(top): 1 items, want 2"},
		{`{"a":"1"}`, `{"a":1}`, `.a: got "1", want 1`},
		{`{"a":1.0,"b":1e-05}`, `{"a":1,"b":0.00001}`, ""},
		{`{"a":0.5}`, `{"a":0.25}`, ".a: got 0.5, want 0.25"},
		{`{"a":null}`, `{"a":0}`, ".a: got null, want 0"},
	} {
		got, _ := decodeJSON([]byte(tc.got))
		want, _ := decodeJSON([]byte(tc.want))
		if d := jsonDiff("", got, want); d != tc.diff {
			t.Errorf("jsonDiff(%s, %s) = %q, want %q", tc.got, tc.want, d, tc.diff)
		}
	}
}
