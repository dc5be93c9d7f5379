package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// copilotTestdata is the events.jsonl the real Copilot CLI wrote (see
// testdata/README.md for how).
var copilotTestdata = filepath.Join("testdata", "copilot", "session-state", "ba7c0aca-859a-4f15-82da-1de249ce33a0", "events.jsonl")

// copilotJQ counts a Copilot CLI events.jsonl independently of the
// importer.
const copilotJQ = `[.[] | select((.agentId // "") == $agent)] as $e | {
  user: [$e[] | select(.type == "user.message")] | length,
  assistant: [$e[] | select(.type == "assistant.message") | .data.apiCallId] | unique | length,
  calls: [$e[] | select(.type == "assistant.message") | .data.toolRequests // [] | .[]] | length,
  results: [$e[] | select(.type == "tool.execution_complete")] | length,
  errors: [$e[] | select(.type == "tool.execution_complete" and .data.success == false)] | length,
  input: [$e[] | select(.type == "session.usage_record") | .data.usage.inputTokens] | add,
  output: [$e[] | select(.type == "session.usage_record") | .data.usage.outputTokens] | add,
  cached: [$e[] | select(.type == "session.usage_record") | .data.usage.cacheReadTokens] | add
}`

func checkCopilotImport(t *testing.T, path string, wantChildren int) *Session {
	t.Helper()
	s := checkImport(t, path, FormatCopilot, wantChildren, func(x *Session) []string {
		var a struct {
			Agent string `json:"source_agent_id"`
		}
		_ = json.Unmarshal(x.Events[0].Attrs, &a)
		return []string{"-s", "-c", "--arg", "agent", a.Agent, copilotJQ, path}
	})
	for _, x := range All([]*Session{s}) {
		if x.Events[0].System == "" {
			t.Errorf("session %s: no system prompt in the header", x.Events[0].SessionID)
		}
	}
	return s
}

// TestCopilotRealFile imports the events.jsonl the real Copilot CLI
// wrote, with jq's counts.
func TestCopilotRealFile(t *testing.T) {
	s := checkCopilotImport(t, copilotTestdata, 1)
	// Two calls in one response, run in parallel; the view of a missing
	// file failed.
	if n := s.Report.Counts[string(session.KindToolIntent)]; n != 2 {
		t.Errorf("intents %d, want 2", n)
	}
	for _, e := range s.Events {
		if e.Kind == session.KindToolResult && e.CallID == "call_1_0" && (e.Status != session.ResultError || e.Error != "Path does not exist") {
			t.Errorf("the failed view: %+v", e)
		}
	}
}

// TestCopilotLive runs the real Copilot CLI (AGENTCTL_NPM_COPILOT, from
// .ci/run) offline against a fake OpenAI chat completions server (BYOK:
// no GitHub login), and imports the events.jsonl it writes.
func TestCopilotLive(t *testing.T) {
	dir := os.Getenv("AGENTCTL_NPM_COPILOT")
	bin := filepath.Join(dir, "node_modules", ".bin", "copilot")
	if _, err := os.Stat(bin); dir == "" || err != nil {
		t.Skip("AGENTCTL_NPM_COPILOT does not hold @github/copilot (.ci/run installs it)")
	}
	srv := httptest.NewServer(&fakeChat{})
	defer srv.Close()
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	_ = os.MkdirAll(proj, 0o755)
	_ = os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hi\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "List the files here and read notes.txt.", "--disable-client-telemetry", "--no-auto-update")
	cmd.Dir = proj
	// COPILOT_OFFLINE: no GitHub login, telemetry or update check; the
	// model is the BYOK provider only.
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL="+srv.URL+"/v1", "COPILOT_PROVIDER_API_KEY=test",
		"COPILOT_MODEL=gpt-4.1", "COPILOT_AUTO_UPDATE=false", "COPILOT_ALLOW_ALL=true", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("copilot: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(home, ".copilot", "session-state", "*", "events.jsonl"))
	if len(files) != 1 {
		t.Fatalf("copilot wrote %v; want one events.jsonl\n%s", files, out)
	}
	checkCopilotImport(t, files[0], 1)
	if keep := os.Getenv("AGENTCTL_COPILOT_KEEP"); keep != "" {
		if err := os.CopyFS(keep, os.DirFS(filepath.Dir(files[0]))); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeChat answers OpenAI chat completions as the API streams them. The
// main agent's first call asks for two tools at once: view of a file that
// does not exist (a tool error) and an explore sub-agent (task); the
// sub-agent (its request offers no task tool) runs bash ls, then answers;
// then the main agent answers in two text chunks. Usage comes in the
// include_usage chunk, cached tokens on odd calls.
type fakeChat struct {
	mu sync.Mutex
	n  int
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	sub := true
	for _, t := range req.Tools {
		if t.Function.Name == "task" {
			sub = false
		}
	}
	answered := len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "tool"
	id := fmt.Sprintf("chatcmpl-fake%d", n)
	chunk := func(delta, finish string) string {
		if finish == "" {
			finish = "null"
		} else {
			finish = `"` + finish + `"`
		}
		return `{"id":"` + id + `","object":"chat.completion.chunk","created":1796553000,"model":"gpt-4.1","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	call := func(i int, name, args string) string {
		a, _ := json.Marshal(args)
		return chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":"call_%d_%d","type":"function","function":{"name":%q,"arguments":%s}}]}`, i, n, i, name, a), "")
	}
	usage := fmt.Sprintf(`{"id":"%s","object":"chat.completion.chunk","created":1796553000,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		id, 1000+n, 10+n, 1010+2*n, 100*(n%2))
	var chunks []string
	switch {
	case sub && !answered:
		chunks = []string{chunk(`{"role":"assistant","content":null}`, ""), call(0, "bash", `{"command":"ls","description":"list files"}`), chunk(`{}`, "tool_calls"), usage}
	case sub:
		chunks = []string{chunk(`{"role":"assistant","content":"The folder holds a.txt."}`, ""), chunk(`{}`, "stop"), usage}
	case !answered:
		chunks = []string{chunk(`{"role":"assistant","content":null}`, ""), call(0, "view", `{"path":"notes.txt"}`),
			call(1, "task", `{"description":"list files","prompt":"List the files in the current folder.","agent_type":"explore","name":"lister"}`),
			chunk(`{}`, "tool_calls"), usage}
	default:
		chunks = []string{chunk(`{"role":"assistant","content":"The folder holds "}`, ""), chunk(`{"content":"a.txt; notes.txt does not exist."}`, ""), chunk(`{}`, "stop"), usage}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// TestCopilotSchemaEvents: events the real file does not show, shaped as
// Copilot CLI's shipped session-events schema defines them, appended to
// it: an error, a compaction, reasoning before a response, an abort.
func TestCopilotSchemaEvents(t *testing.T) {
	data, err := os.ReadFile(copilotTestdata)
	if err != nil {
		t.Fatal(err)
	}
	add := `{"type":"session.compaction_complete","data":{"success":true,"summaryContent":"the files were listed"},"id":"e1","timestamp":"2026-12-06T10:54:27.000Z","parentId":null}
{"type":"assistant.reasoning","data":{"reasoningId":"r1","content":"look again"},"id":"e2","timestamp":"2026-12-06T10:54:27.100Z","parentId":null}
{"type":"assistant.message","data":{"messageId":"m9","content":"Again: a.txt.","toolRequests":[],"apiCallId":"chatcmpl-x9"},"id":"e3","timestamp":"2026-12-06T10:54:27.200Z","parentId":null}
{"type":"session.error","data":{"errorType":"model_call","message":"rate limited"},"id":"e4","timestamp":"2026-12-06T10:54:27.300Z","parentId":null}
{"type":"abort","data":{"reason":"user_abort"},"id":"e5","timestamp":"2026-12-06T10:54:27.400Z","parentId":null}
`
	// The file's session.shutdown goes last, as Copilot CLI writes it.
	l := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	body := strings.Join(l[:len(l)-1], "\n") + "\n" + add + l[len(l)-1] + "\n"
	p := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err := Import(FormatCopilot, p)
	if err != nil {
		t.Fatal(err)
	}
	var compaction, reasoning, errs bool
	for _, e := range ss[0].Events {
		switch {
		case e.Kind == session.KindCompaction && e.Summary == "the files were listed" && e.Through > 1:
			compaction = true
		case e.Kind == session.KindAssistantMessage && e.Text == "Again: a.txt." && strings.Contains(string(e.Attrs), "look again"):
			reasoning = true
		case e.Kind == session.KindError && e.Error == "rate limited":
			errs = true
		}
	}
	if !compaction || !reasoning || !errs {
		t.Errorf("compaction %v, reasoning on the response %v, error %v", compaction, reasoning, errs)
	}
	// The shutdown after the abort is the end state the file ends in.
	if !strings.Contains(string(ss[0].Events[0].Attrs), `"source_status":"routine"`) || Lost(ss[0].Report) != 0 {
		t.Errorf("header %s, notes %+v", ss[0].Events[0].Attrs, ss[0].Report.Notes)
	}
}
