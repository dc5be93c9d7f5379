package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/recorder/otlp/jaegertest"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/testenv"
)

// toolAgent is an external agent written with curl and jq: it calls Chat
// Completions with its history, runs the tool call it gets (a canned
// result), and calls again until an answer has no tool call.
const toolAgent = `set -e
msgs=$(jq -nc --arg p "$AGENTCTL_PROMPT" '[{role:"user",content:$p}]')
for i in 1 2 3 4; do
  body=$(jq -nc --arg m "$OPENAI_DEFAULT_MODEL" --argjson msgs "$msgs" '{model:$m,messages:$msgs}')
  out=$(curl -sf "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' -H "authorization: Bearer $OPENAI_API_KEY" -d "$body")
  msg=$(printf '%s' "$out" | jq -c '.choices[0].message')
  msgs=$(printf '%s' "$msgs" | jq -c --argjson m "$msg" '. + [$m]')
  id=$(printf '%s' "$msg" | jq -r '.tool_calls[0].id // empty')
  [ -z "$id" ] && break
  msgs=$(printf '%s' "$msgs" | jq -c --arg id "$id" '. + [{role:"tool",tool_call_id:$id,content:"# Mailer"}]')
done
printf '%s' "$msg" | jq -r .content
`

// An external agent's run with the OTLP variables pointing at a real
// Jaeger: the trace has the invoke_agent root, a chat span per model call
// the proxy recorded and an execute_tool span for the tool result the
// agent sent back, with the GenAI attributes, and the token totals are
// the ones show and query give for the session.
func TestOTLPExternalAgentToJaeger(t *testing.T) {
	testenv.NeedSandbox(t)
	for _, tool := range []string{"/usr/bin/curl", "/usr/bin/jq"} {
		if _, err := os.Stat(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	j := jaegertest.Start(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.yaml"), []byte(`turns:
  - text: "Let me look."
    tool_calls:
      - {name: read_file, args: {path: README.md}}
    usage: {input_tokens: 300, output_tokens: 20}
  - text: "It is the mailer."
    usage: {input_tokens: 420, output_tokens: 9}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(fmt.Sprintf(
		"name: ext-otlp\nmodel: {provider: scripted, id: gpt-ext, script: model.yaml}\nprompt: what is this?\nagent:\n  command: [sh, -c, %q]\n", toolAgent)), 0o644)
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			setenv(t, j.Env(proto))
			t.Setenv("OTEL_SERVICE_NAME", "agentctl-ext")
			home := t.TempDir()
			sid := map[string]string{"grpc": "00000000000e1001", "http/protobuf": "00000000000e1002"}[proto]
			code, stdout, stderr := agentctl(t, home, "run", filepath.Join(dir, "agent.yaml"), "-q", "--json", "--session-id", sid)
			if code != 0 || stderr != "" {
				t.Fatalf("run exit %d, stdout %s, stderr %q", code, stdout, stderr)
			}
			var run struct {
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
				Turns        int   `json:"turns"`
			}
			json.Unmarshal([]byte(stdout), &run)
			if run.Turns != 2 || run.InputTokens != 720 || run.OutputTokens != 29 {
				t.Fatalf("run --json = %s, want 2 turns of 720 in, 29 out", stdout)
			}
			// show and query give the same totals as the run.
			code, showOut, _ := agentctl(t, home, "show", sid, "--tree")
			if code != 0 || !strings.Contains(showOut, "1 tool calls, 749 tokens") {
				t.Errorf("show --tree (exit %d) = %q, want 749 tokens", code, showOut)
			}
			code, q, _ := agentctl(t, home, "query", "SELECT sum(input_tokens) AS i, sum(output_tokens) AS o FROM events WHERE kind = 'model_call' AND session_id = '"+sid+"'", "--format", "csv")
			if code != 0 || strings.TrimSpace(q) != "i,o\n720,29" {
				t.Errorf("query totals (exit %d) = %q, want 720,29", code, q)
			}

			spans := j.WaitTrace(t, otlp.TraceID(sid).String(), 4)
			byName, byID := tree(t, spans)
			roots := byName["invoke_agent ext-otlp"]
			if len(roots) != 1 || roots[0].Parent != "" {
				t.Fatalf("invoke_agent spans = %d, want one root (names: %v)", len(roots), keysOf(byName))
			}
			root := roots[0]
			for k, want := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ext-otlp",
				"gen_ai.conversation.id": sid, "gen_ai.request.model": "gpt-ext", "agentctl.session.status": "done",
				"gen_ai.usage.input_tokens": "720", "gen_ai.usage.output_tokens": "29"} {
				if got := tag(root, k); got != want {
					t.Errorf("invoke_agent %s = %q, want %q", k, got, want)
				}
			}
			if root.Service != "agentctl-ext" {
				t.Errorf("service = %q", root.Service)
			}
			chats := byName["chat gpt-ext"]
			if len(chats) != 2 {
				t.Fatalf("chat spans = %d, want 2 (names: %v)", len(chats), keysOf(byName))
			}
			var in, out float64
			for _, c := range chats {
				if c.Parent != root.SpanID {
					t.Errorf("chat %s parent = %s, want the invoke_agent span", c.SpanID, c.Parent)
				}
				for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
					"gen_ai.request.model": "gpt-ext", "gen_ai.response.model": "gpt-ext", "span.kind": "client"} {
					if got := tag(c, k); got != want {
						t.Errorf("chat %s = %q, want %q", k, got, want)
					}
				}
				if tag(c, "gen_ai.response.finish_reasons") == "<missing>" {
					t.Errorf("chat without finish reasons: %v", c.Tags)
				}
				i, _ := c.Tags["gen_ai.usage.input_tokens"].(float64)
				o, _ := c.Tags["gen_ai.usage.output_tokens"].(float64)
				in, out = in+i, out+o
			}
			if in != 720 || out != 29 {
				t.Errorf("chat spans sum to %v in, %v out; the session has 720, 29", in, out)
			}
			tools := byName["execute_tool read_file"]
			if len(tools) != 1 || tools[0].Parent != root.SpanID || !strings.HasPrefix(tag(tools[0], "gen_ai.tool.call.id"), "call_") {
				t.Errorf("execute_tool read_file spans = %+v, want one under the root with its call id", tools)
			}
			if len(byID) != 4 {
				t.Errorf("spans = %d, want 4 (names: %v)", len(byID), keysOf(byName))
			}

			// A fork at the first call (seq 4) is exported as its own
			// trace: the replayed call and the live one, same totals.
			fid := "f" + sid[1:]
			code, stdout, stderr = agentctl(t, home, "replay", "fork", sid, "--from", "4", "-q", "--session-id", fid)
			if code != 0 || !strings.Contains(stdout, "1 of 2 recorded model calls replayed, 1 live") {
				t.Fatalf("fork exit %d: %s %s", code, stdout, stderr)
			}
			fspans := j.WaitTrace(t, otlp.TraceID(fid).String(), 4)
			fbyName, _ := tree(t, fspans)
			froot := fbyName["invoke_agent ext-otlp"]
			if len(froot) != 1 || len(fbyName["chat gpt-ext"]) != 2 || len(fspans) != 4 {
				t.Fatalf("fork trace names %v", keysOf(fbyName))
			}
			if got := tag(froot[0], "gen_ai.usage.input_tokens") + "/" + tag(froot[0], "gen_ai.usage.output_tokens"); got != "720/29" {
				t.Errorf("fork invoke_agent tokens = %s, want 720/29", got)
			}
		})
	}
}

// The real OpenAI Agents SDK agent (Responses API), run with the OTLP
// variables set: its three calls and two tool results are in Jaeger with
// the session's totals. With $AGENTCTL_NPM_AGENTS set (.ci/run) it runs.
func TestOTLPExternalNPMAgentToJaeger(t *testing.T) {
	npm := os.Getenv("AGENTCTL_NPM_AGENTS")
	if npm == "" {
		t.Skip("AGENTCTL_NPM_AGENTS is not set (.ci/run installs the npm agents there)")
	}
	if err := sandbox.Available(); err != nil {
		t.Fatalf("sandbox unavailable: %v", err)
	}
	j := jaegertest.Start(t)
	setenv(t, j.Env("http/protobuf"))
	t.Setenv("NODE_PATH", filepath.Join(npm, "node_modules"))
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixture(t, "external/openai-agents"))); err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(strings.ReplaceAll(string(y), "/NPM_AGENTS", npm)), 0o644)
	home := t.TempDir()
	const sid = "00000000000e2001"
	code, stdout, stderr := agentctl(t, home, "run", filepath.Join(dir, "agent.yaml"), "-q", "--session-id", sid)
	if code != 0 || !strings.Contains(stdout, "done: 3 turns, 2 tool calls, 1272 tokens") {
		t.Fatalf("run exit %d: %s %s", code, stdout, stderr)
	}
	code, q, _ := agentctl(t, home, "query", "SELECT sum(input_tokens) AS i, sum(output_tokens) AS o FROM events WHERE kind = 'model_call' AND session_id = '"+sid+"'", "--format", "csv")
	if code != 0 || strings.TrimSpace(q) != "i,o\n1200,72" {
		t.Fatalf("query totals (exit %d) = %q", code, q)
	}
	spans := j.WaitTrace(t, otlp.TraceID(sid).String(), 6)
	byName, byID := tree(t, spans)
	roots := byName["invoke_agent openai-agents-typo"]
	if len(roots) != 1 {
		t.Fatalf("invoke_agent spans = %d (names: %v)", len(roots), keysOf(byName))
	}
	if got := tag(roots[0], "gen_ai.usage.input_tokens") + "/" + tag(roots[0], "gen_ai.usage.output_tokens"); got != "1200/72" {
		t.Errorf("invoke_agent tokens = %s, want 1200/72 as query gives", got)
	}
	chats := byName["chat gpt-4.1-mini"]
	if len(chats) != 3 {
		t.Errorf("chat spans = %d, want 3 (names: %v)", len(chats), keysOf(byName))
	}
	for _, c := range chats {
		if tag(c, "gen_ai.provider.name") != "openai" || tag(c, "gen_ai.response.model") != "gpt-4.1-mini" || tag(c, "gen_ai.response.id") == "<missing>" {
			t.Errorf("chat span %v", c.Tags)
		}
	}
	for _, tool := range []string{"read_file", "write_file"} {
		if n := len(byName["execute_tool "+tool]); n != 1 {
			t.Errorf("execute_tool %s spans = %d, want 1", tool, n)
		}
	}
	if len(byID) != 6 {
		t.Errorf("spans = %d, want 6 (names: %v)", len(byID), keysOf(byName))
	}
}
