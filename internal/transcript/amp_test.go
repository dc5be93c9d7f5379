package transcript

import (
	"bytes"
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

// ampTestdata is the thread the real Amp CLI wrote (see
// testdata/README.md for how).
var ampTestdata = filepath.Join("testdata", "amp", "threads", "T-01a24c47-f69e-76b6-a1e6-27c5504ce8e6.json")

// ampJQ counts an Amp thread independently of the importer: prompts (user
// messages with text), responses, tool_use blocks, tool_result blocks
// (and those whose run failed), and the usage of the responses (input
// with the cached tokens, as Anthropic bills them). Its tool_use blocks
// and results are counted without the Task sub-agents'.
const ampJQ = `[.messages[] | select(.role == "assistant")] as $a | [.messages[] | select(.role == "user")] as $u | {
  user: [$u[] | select(any(.content[]; .type == "text"))] | length,
  assistant: $a | length,
  calls: [$a[] | .content[] | select(.type == "tool_use")] | length,
  results: [$u[] | .content[] | select(.type == "tool_result")] | length,
  errors: [$u[] | .content[] | select(.type == "tool_result" and .run.status == "error")] | length,
  input: [$a[] | .usage | .inputTokens + .cacheCreationInputTokens + .cacheReadInputTokens] | add,
  output: [$a[] | .usage.outputTokens] | add,
  cached: [$a[] | .usage.cacheReadInputTokens] | add
}`

// ampTaskJQ counts the sub-agent of Task call $call: its prompt, one
// response per progress step, the steps' tool uses and results, and the
// usage of its inferences (the placeholder's zeros and nulls count 0).
const ampTaskJQ = `[.messages[].content[] | select(.type == "tool_result" and .toolUseID == $call) | .run][0] as $r | {
  user: 1,
  assistant: $r.progress | length,
  calls: [$r.progress[].tool_uses[]] | length,
  results: [$r.progress[].tool_uses[] | select(.status == "done" or .status == "error")] | length,
  errors: [$r.progress[].tool_uses[] | select(.status == "error")] | length,
  input: [$r["~debug"].inferences[].usage | .inputTokens + (.cacheCreationInputTokens // 0) + (.cacheReadInputTokens // 0)] | add,
  output: [$r["~debug"].inferences[].usage.outputTokens] | add,
  cached: [$r["~debug"].inferences[].usage | .cacheReadInputTokens // 0] | add
}`

func checkAmpImport(t *testing.T, path string, wantChildren int) *Session {
	t.Helper()
	return checkImport(t, path, FormatAmp, wantChildren, func(x *Session) []string {
		var a struct {
			Call string `json:"source_tool_call"`
		}
		_ = json.Unmarshal(x.Events[0].Attrs, &a)
		if a.Call != "" {
			return []string{"-c", "--arg", "call", a.Call, ampTaskJQ, path}
		}
		return []string{"-c", ampJQ, path}
	})
}

// TestAmpRealFile imports the thread the real Amp CLI wrote, with jq's
// counts, the times the file records and what it does not record.
func TestAmpRealFile(t *testing.T) {
	s := checkAmpImport(t, ampTestdata, 1)
	hdr := s.Events[0]
	var attrs struct {
		ID          string   `json:"source_session_id"`
		Version     string   `json:"source_version"`
		Status      string   `json:"source_status"`
		Title       string   `json:"source_title"`
		NotRecorded []string `json:"not_recorded"`
	}
	if err := json.Unmarshal(hdr.Attrs, &attrs); err != nil {
		t.Fatal(err)
	}
	if attrs.ID != "T-01a24c47-f69e-76b6-a1e6-27c5504ce8e6" || attrs.Version != "0.0.1774569934-g39e3ec" || attrs.Status != "complete" ||
		attrs.Title != "Read the readme" || hdr.Model != "claude-opus-4-6" || hdr.Provider != "amp" {
		t.Errorf("header %s %s/%s", hdr.Attrs, hdr.Provider, hdr.Model)
	}
	for _, w := range []string{"system prompt", "tool definitions", "response ids"} {
		if !strings.Contains(strings.Join(attrs.NotRecorded, ";"), w) {
			t.Errorf("not_recorded %v lacks %q", attrs.NotRecorded, w)
		}
	}
	// Two calls in one response: the Read of a file that is not there
	// failed, the Bash call ran; each result comes at the end of the
	// tools span that ran them, after its intent.
	intents := map[string]session.Event{}
	var thinking bool
	for _, e := range s.Events {
		switch e.Kind {
		case session.KindAssistantMessage:
			thinking = thinking || strings.Contains(string(e.Attrs), "The user wants the README.")
		case session.KindModelCall:
			if e.FinishReason == "" || e.CostUSD <= 0 {
				t.Errorf("model_call without finish reason or cost: %+v", e)
			}
		case session.KindToolIntent:
			intents[e.CallID] = e
		case session.KindToolResult:
			in, ok := intents[e.CallID]
			if !ok || e.TS.Before(in.TS) || e.LatencyMS <= 0 {
				t.Errorf("result %s at %v, intent at %v, latency %d", e.CallID, e.TS, in.TS, e.LatencyMS)
			}
			switch e.Tool {
			case "Read":
				if e.Status != session.ResultError || !strings.Contains(e.Error, "File not found") {
					t.Errorf("the failed Read: %+v", e)
				}
			case "Bash":
				if e.Status != session.ResultOK || !strings.Contains(e.Output, "typo") || !strings.Contains(string(e.Attrs), `"exit_code":0`) {
					t.Errorf("the Bash run: %+v", e)
				}
			}
		}
	}
	if len(intents) != 3 || !thinking {
		t.Errorf("intents %d, thinking kept %v", len(intents), thinking)
	}
	// The Task's sub-agent is a child session, linked before the Task's
	// result: its prompt, its two steps at their inferences' times, its
	// Bash call; the CLI recorded no usage or model for its inferences.
	c := s.Children[0]
	var cattrs struct {
		Call        string   `json:"source_tool_call"`
		Status      string   `json:"source_status"`
		NotRecorded []string `json:"not_recorded"`
	}
	_ = json.Unmarshal(c.Events[0].Attrs, &cattrs)
	if c.Events[0].Name != "amp sub-agent Task: list files" || cattrs.Call != "toolu_fake3" || cattrs.Status != "done" ||
		!strings.Contains(strings.Join(cattrs.NotRecorded, ";"), "usage") || c.Events[0].ParentSessionID != s.ID() {
		t.Errorf("sub-agent header %+v %s", c.Events[0], c.Events[0].Attrs)
	}
	if c.Events[1].Kind != session.KindUserMessage || c.Events[1].Text != "List the files in the current folder." {
		t.Errorf("sub-agent prompt %+v", c.Events[1])
	}
	for _, e := range c.Events {
		if e.Kind == session.KindToolResult && (e.Tool != "Bash" || e.Output != "README.md\n" || e.LatencyMS <= 0) {
			t.Errorf("sub-agent result %+v", e)
		}
	}
	// The sub-agent's markers stand where their times fall, between the
	// Task's intent and its result, and the log's times never run back.
	var intent, started, finished, result int
	for i, e := range s.Events {
		switch {
		case i > 0 && e.TS.Before(s.Events[i-1].TS):
			t.Errorf("seq %d (%s) at %v, before seq %d at %v", e.Seq, e.Kind, e.TS, s.Events[i-1].Seq, s.Events[i-1].TS)
		case e.Kind == session.KindToolIntent && e.CallID == "toolu_fake3":
			intent = i
		case e.Kind == session.KindSubagentStarted && e.ChildSessionID == c.ID():
			started = i
		case e.Kind == session.KindSubagentFinished && e.ChildSessionID == c.ID() && e.Output == "The folder holds README.md.":
			finished = i
		case e.Kind == session.KindToolResult && e.CallID == "toolu_fake3":
			result = i
		}
	}
	if !(intent > 0 && intent < started && started < finished && finished < result) {
		t.Errorf("Task intent at %d, sub-agent started %d, finished %d, result %d: want them in that order", intent, started, finished, result)
	}
}

// TestAmpHostile: a thread cut short is refused with a clear error; a
// JSON object that is no thread is not claimed, nor imported as amp; a
// file over the bound is not read.
func TestAmpHostile(t *testing.T) {
	data, err := os.ReadFile(ampTestdata)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	torn := write("torn.json", data[:len(data)/2])
	if f, err := Detect(torn); err != nil || f != FormatAmp {
		t.Errorf("Detect(torn) = %q, %v; the head is an Amp thread's", f, err)
	}
	if _, err := Import(FormatAuto, torn); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("torn thread: %v", err)
	}
	other := write("other.json", []byte(`{"v": 1, "id": "thread-1", "messages": []}`))
	if _, err := Detect(other); err == nil {
		t.Error("a JSON object whose id is no Amp thread id was claimed")
	}
	if _, err := Import(FormatAmp, other); err == nil || !strings.Contains(err.Error(), "Amp thread") {
		t.Errorf("import amp of a non-thread: %v", err)
	}
	// A message that does not decode is reported by its place; the rest
	// is imported.
	var th map[string]any
	if err := json.Unmarshal(data, &th); err != nil {
		t.Fatal(err)
	}
	th["messages"] = append(th["messages"].([]any), map[string]any{"role": "user", "content": "not a list of blocks"})
	b, _ := json.Marshal(th)
	ss, err := Import(FormatAmp, write("bad-message.json", b))
	if err != nil {
		t.Fatal(err)
	}
	if r := ss[0].Report; Lost(r) != 1 || r.Notes[0].Code != CodeBadLine || r.Notes[0].Line != 7 || r.Counts[string(session.KindAssistantMessage)] != 3 {
		t.Errorf("a message that does not decode: %+v", r)
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the bound is checked without the test writing 64 MiB.
	if err := f.Truncate(ampMaxBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Import(FormatAmp, big); err == nil || !strings.Contains(err.Error(), "over 64 MiB") {
		t.Errorf("a file over the bound: %v", err)
	}
}

// TestAmpLive runs the real Amp CLI (AGENTCTL_NPM_AMP, from .ci/run) in
// execute mode against a fake Amp server (fakeAmp: AMP_URL, a made-up
// AMP_API_KEY), and imports the thread file it writes.
func TestAmpLive(t *testing.T) {
	dir := os.Getenv("AGENTCTL_NPM_AMP")
	bin := filepath.Join(dir, "node_modules", ".bin", "amp")
	if _, err := os.Stat(bin); dir == "" || err != nil {
		t.Skip("AGENTCTL_NPM_AMP does not hold @sourcegraph/amp (.ci/run installs it)")
	}
	fake := &fakeAmp{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	_ = os.MkdirAll(proj, 0o755)
	_ = os.WriteFile(filepath.Join(proj, "README.md"), []byte("# typo\n\nA service that fixes typos.\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := filepath.Join(home, ".local", "share")
	run := func(want string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+data, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "AMP_URL="+srv.URL, "AMP_API_KEY=sgamp-test", "AMP_SKIP_UPDATE_CHECK=1", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("amp %v: %v\n%s\nrequests: %v", args, err, out, fake.paths())
		}
		// amp -x exits 0 on a server error too: the answer tells.
		if !strings.Contains(string(out), want) {
			t.Fatalf("amp %v printed %q, not the scripted answer; requests: %v", args, out, fake.paths())
		}
	}
	run("The README describes typo", "-x", "What does README.md say? Read NOTES.md too, and have a sub-agent list the folder.")
	files, _ := filepath.Glob(filepath.Join(data, "amp", "threads", "T-*.json"))
	if len(files) != 1 {
		t.Fatalf("amp wrote %v; want one thread", files)
	}
	// A second turn in the same thread.
	run("Nothing else", "threads", "continue", strings.TrimSuffix(filepath.Base(files[0]), ".json"), "-x", "Anything else?")
	if u := fake.unknown(); len(u) > 0 {
		t.Logf("requests the fake does not script (answered 404): %v", u)
	}
	s := checkAmpImport(t, files[0], 1)
	if n, p := s.Report.Counts[string(session.KindToolResult)], s.Report.Counts[string(session.KindUserMessage)]; n != 3 || p != 2 {
		t.Errorf("%d results, %d prompts; want 3 and 2", n, p)
	}
	if keep := os.Getenv("AGENTCTL_AMP_KEEP"); keep != "" {
		if err := os.CopyFS(keep, os.DirFS(filepath.Dir(files[0]))); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeAmp answers what the Amp CLI's execute mode asks of the Amp server,
// and no more: the internal API calls it makes (getUserInfo for the
// login, the free tier status, uploadThread and setThreadMeta as it syncs
// the thread, getThreadLinkInfo when it continues one), and the model
// through the server's Anthropic messages route. Anything else is a 404
// (a continued thread's GET /api/durable-thread-workers/<id>: no worker
// runs it, so the CLI does). The title call (not streamed, tool
// set_title) gets a title; the agent's first streamed call gets thinking,
// text and three tool calls at once (Read of a file that does not exist,
// a tool error; Bash cat README.md; a Task sub-agent, whose own calls are
// not streamed: Bash ls, then its answer), the call after the results the
// answer, a later prompt an answer without tools. Usage is Anthropic's,
// with cache writes, then reads.
type fakeAmp struct {
	mu  sync.Mutex
	log []string
	bad []string
}

func (f *fakeAmp) paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *fakeAmp) unknown() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bad...)
}

func (f *fakeAmp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	f.mu.Lock()
	f.log = append(f.log, r.Method+" "+r.URL.RequestURI())
	f.mu.Unlock()
	// The internal API takes the key as a bearer token, the model route
	// (Anthropic's SDK pointed at the server) as x-api-key.
	if r.Header.Get("Authorization") != "Bearer sgamp-test" && r.Header.Get("X-Api-Key") != "sgamp-test" {
		http.Error(w, `{"error":"auth-required"}`, http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/internal":
		result := ""
		switch r.URL.RawQuery {
		case "getUserInfo":
			result = `{"id":"user-1","email":"test@example.com","username":"test","features":[],"team":null}`
		case "getUserFreeTierStatus", "uploadThread", "setThreadMeta", "getThreadLinkInfo":
			result = `{}`
		}
		if result != "" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"ok":true,"result":%s}`, result)
			return
		}
	case r.Method == http.MethodPost && r.URL.Path == "/api/provider/anthropic/v1/messages":
		f.messages(w, body)
		return
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/durable-thread-workers/"):
		http.NotFound(w, r) // no worker runs the thread: the CLI does
		return
	}
	f.mu.Lock()
	f.bad = append(f.bad, r.Method+" "+r.URL.RequestURI())
	f.mu.Unlock()
	http.NotFound(w, r)
}

func (f *fakeAmp) messages(w http.ResponseWriter, body []byte) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	// The last message says what comes next: a prompt gets the tool
	// calls (the first) or an answer without tools (a later one), tool
	// results the answer.
	last := ""
	if len(req.Messages) > 0 {
		last = string(req.Messages[len(req.Messages)-1].Content)
	}
	answered, later := strings.Contains(last, `"tool_result"`), len(req.Messages) > 1
	if !req.Stream {
		// Not streamed: the title call (its one tool set_title), or the
		// Task sub-agent's steps.
		w.Header().Set("Content-Type", "application/json")
		reply := func(id, content, stop string, in, out int) {
			fmt.Fprintf(w, `{"id":%q,"type":"message","role":"assistant","model":%q,"content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":%d}}`, id, req.Model, content, stop, in, out)
		}
		switch {
		case bytes.Contains(body, []byte(`"set_title"`)):
			reply("msg_title", `[{"type":"tool_use","id":"toolu_title","name":"set_title","input":{"title":"Read the readme"}}]`, "tool_use", 120, 12)
		case !answered:
			reply("msg_sub1", `[{"type":"text","text":"Listing the folder."},{"type":"tool_use","id":"toolu_sub1","name":"Bash","input":{"cmd":"ls"}}]`, "tool_use", 900, 20)
		default:
			reply("msg_sub2", `[{"type":"text","text":"The folder holds README.md."}]`, "end_turn", 950, 9)
		}
		return
	}
	var ev []string
	add := func(typ, data string) { ev = append(ev, "event: "+typ+"\ndata: "+data+"\n\n") }
	start := func(id string, in, write, read int) {
		add("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`, id, req.Model, in, write, read))
	}
	block := func(i int, startBlock, delta string) {
		add("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, startBlock))
		add("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta))
		add("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	stop := func(reason string, out int) {
		add("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, reason, out))
		add("message_stop", `{"type":"message_stop"}`)
	}
	switch {
	case !answered && !later:
		start("msg_fake1", 1500, 200, 0)
		add("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)
		add("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants the README."}}`)
		add("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2lnLWZha2U="}}`)
		add("content_block_stop", `{"type":"content_block_stop","index":0}`)
		block(1, `{"type":"text","text":""}`, `{"type":"text_delta","text":"I'll read both and list the folder."}`)
		block(2, `{"type":"tool_use","id":"toolu_fake1","name":"Read","input":{}}`, `{"type":"input_json_delta","partial_json":"{\"path\":\"/nonexistent/NOTES.md\"}"}`)
		block(3, `{"type":"tool_use","id":"toolu_fake2","name":"Bash","input":{}}`, `{"type":"input_json_delta","partial_json":"{\"cmd\":\"cat README.md\"}"}`)
		block(4, `{"type":"tool_use","id":"toolu_fake3","name":"Task","input":{}}`, `{"type":"input_json_delta","partial_json":"{\"prompt\":\"List the files in the current folder.\",\"description\":\"list files\"}"}`)
		stop("tool_use", 40)
	case answered:
		start("msg_fake2", 60, 30, 1700)
		block(0, `{"type":"text","text":""}`, `{"type":"text_delta","text":"The README describes typo, a service that fixes typos; NOTES.md does not exist; the folder holds README.md."}`)
		stop("end_turn", 24)
	default:
		start("msg_fake3", 80, 0, 1790)
		block(0, `{"type":"text","text":""}`, `{"type":"text_delta","text":"Nothing else: the folder holds only README.md."}`)
		stop("end_turn", 12)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range ev {
		io.WriteString(w, e)
	}
}
