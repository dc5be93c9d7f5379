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

// geminiTestdata is the session the real gemini-cli wrote (see
// testdata/README.md for how), with its sub-agent's file in the folder
// named by its session id.
var geminiTestdata = filepath.Join("testdata", "gemini-cli", "chats", "session-2026-12-06T10-36-9c2e7759.jsonl")

// geminiJQ counts a Gemini CLI session file independently of the
// importer: the last copy of each message (records and $set checkpoints),
// as jq reads them.
const geminiJQ = `[.[] | (select(.id), (.["$set"].messages // [])[], (select(.sessionId) | .messages // [] | .[]))] | group_by(.id) | map(last) as $m |
{
  user: [$m[] | select(.type == "user") | select(((.content | if type == "array" then . else [.] end) | map(has("functionResponse")? // false) | all) | not)] | length,
  assistant: [$m[] | select(.type == "gemini")] | length,
  calls: [$m[] | select(.type == "gemini") | .toolCalls // [] | .[]] | length,
  results: [$m[] | select(.type == "gemini") | .toolCalls // [] | .[] | select(.result != null)] | length,
  input: [$m[] | select(.type == "gemini") | .tokens // {} | (.input // 0) + (.tool // 0)] | add,
  output: [$m[] | select(.type == "gemini") | .tokens // {} | (.output // 0) + (.thoughts // 0)] | add,
  cached: [$m[] | select(.type == "gemini") | .tokens.cached // 0] | add
}`

// geminiCount is what geminiJQ gives, and what an import of the same
// file must give.
type geminiCount struct {
	User, Assistant, Calls, Results int
	Input, Output, Cached           int64
}

func jqCountGemini(t *testing.T, path string) geminiCount {
	t.Helper()
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed; the independent count needs it")
	}
	out, err := exec.Command(jq, "-s", "-c", geminiJQ, path).Output()
	if err != nil {
		t.Fatalf("jq on %s: %v", path, err)
	}
	var c geminiCount
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("jq output %s: %v", out, err)
	}
	return c
}

// importedCount is countOf's figures that jq counts in a Gemini CLI file.
func importedCount(s *Session) geminiCount {
	c := countOf(s)
	return geminiCount{User: c.User, Assistant: c.Assistant, Calls: c.Calls, Results: c.Results, Input: c.Input, Output: c.Output, Cached: c.Cached}
}

// checkGeminiImport imports path (detected, not named) and checks it and
// its sub-agents against jq's count of each file.
func checkGeminiImport(t *testing.T, path string, wantChildren int) *Session {
	t.Helper()
	f, err := Detect(path)
	if err != nil || f != FormatGeminiCLI {
		t.Fatalf("Detect(%s) = %q, %v; want %s", path, f, err, FormatGeminiCLI)
	}
	ss, err := Import(FormatAuto, path)
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	if got, want := importedCount(s), jqCountGemini(t, path); got != want {
		t.Errorf("%s: imported %+v; jq counts %+v", path, got, want)
	}
	if Lost(s.Report) != 0 {
		t.Errorf("%s: lost records: %+v", path, s.Report.Notes)
	}
	if len(s.Children) != wantChildren {
		t.Fatalf("%s: %d sub-agents imported, want %d (notes %+v)", path, len(s.Children), wantChildren, s.Report.Notes)
	}
	for _, c := range s.Children {
		if got, want := importedCount(c), jqCountGemini(t, c.Report.File); got != want {
			t.Errorf("sub-agent %s: imported %+v; jq counts %+v", c.Report.File, got, want)
		}
		if s.Report.Counts[string(session.KindSubagentStarted)] != 1 {
			t.Errorf("parent has no subagent_started for %s", c.Report.File)
		}
	}
	return s
}

// TestGeminiCLIRealFile imports the session the real gemini-cli wrote,
// with its sub-agent, and checks the counts against jq's.
func TestGeminiCLIRealFile(t *testing.T) {
	s := checkGeminiImport(t, geminiTestdata, 1)
	var hdr struct {
		SID         string   `json:"source_session_id"`
		NotRecorded []string `json:"not_recorded"`
	}
	_ = json.Unmarshal(s.Events[0].Attrs, &hdr)
	if hdr.SID != "9c2e7759-2f94-43e9-813c-c930cb479494" || len(hdr.NotRecorded) == 0 {
		t.Errorf("header attrs %s", s.Events[0].Attrs)
	}
	if s.Events[0].Provider != "gemini" || s.Events[0].Model == "" {
		t.Errorf("header provider/model = %q/%q", s.Events[0].Provider, s.Events[0].Model)
	}
}

// TestGeminiCLIRewindAndCheckpoint appends what gemini-cli writes on
// /rewind and on a history rewrite to the real file: the rewound messages
// and those a checkpoint replaces leave the session, noted as fork lines.
func TestGeminiCLIRewindAndCheckpoint(t *testing.T) {
	data, err := os.ReadFile(geminiTestdata)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var first json.RawMessage
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var m struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if json.Unmarshal(l, &m) == nil && m.ID != "" && (len(ids) == 0 || ids[len(ids)-1] != m.ID) {
			ids = append(ids, m.ID)
			if m.Type == "user" && first == nil {
				first = append(json.RawMessage(nil), l...)
			}
		}
	}
	full, err := Import(FormatGeminiCLI, geminiTestdata)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		add      string
		wantUser int
		wantAsst int
		fork     bool
	}{
		// /rewind to the first prompt: every message from it on goes.
		{"rewind", fmt.Sprintf(`{"$rewindTo":%q}`, ids[0]), 1, 0, true},
		// An unknown id: gemini-cli's loader drops them all.
		{"rewind unknown", `{"$rewindTo":"no-such-message"}`, 0, 0, true},
		// A checkpoint of the first prompt alone replaces the rest.
		{"checkpoint", `{"$set":{"messages":[` + string(first) + `]}}`, 1, 0, true},
		// A rewind then a new prompt: the new prompt stays.
		{"rewind then prompt", fmt.Sprintf(`{"$rewindTo":%q}`, ids[0]) + "\n" +
			`{"id":"new-1","timestamp":"2026-12-06T11:00:00.000Z","type":"user","content":[{"text":"again"}]}`, 2, 0, true},
		// No change: the same counts as the file.
		{"none", "", full[0].Report.Counts[string(session.KindUserMessage)], full[0].Report.Counts[string(session.KindAssistantMessage)], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "session.jsonl")
			if err := os.WriteFile(p, append(append([]byte{}, data...), []byte(tt.add+"\n")...), 0o644); err != nil {
				t.Fatal(err)
			}
			ss, err := Import(FormatGeminiCLI, p)
			if err != nil {
				t.Fatal(err)
			}
			r := ss[0].Report
			if r.Counts[string(session.KindUserMessage)] != tt.wantUser || r.Counts[string(session.KindAssistantMessage)] != tt.wantAsst {
				t.Errorf("counts %v; want %d user, %d assistant", r.Counts, tt.wantUser, tt.wantAsst)
			}
			forks := 0
			for _, n := range r.Notes {
				if n.Code == CodeFork {
					forks++
				}
			}
			if (forks > 0) != tt.fork {
				t.Errorf("%d fork notes, want some: %v (%+v)", forks, tt.fork, r.Notes)
			}
		})
	}
}

// TestGeminiCLILegacyJSON imports the single .json gemini-cli 0.38
// wrote (before the JSONL log), with jq's counts; its one call failed
// (0.38 has no invoke_agent), and the result says so.
func TestGeminiCLILegacyJSON(t *testing.T) {
	s := checkGeminiImport(t, filepath.Join("testdata", "gemini-cli", "legacy", "session-2026-12-06T10-44-6a3c7931.json"), 0)
	var errs int
	for _, e := range s.Events {
		if e.Kind == session.KindToolResult && e.Status == session.ResultError && strings.Contains(e.Error, "not found") {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("%d failed results, want the one invoke_agent", errs)
	}
}

// TestGeminiCLILive runs the real gemini-cli (AGENTCTL_NPM_GEMINI, from
// .ci/run) against a fake Gemini API that scripts a sub-agent call, and
// imports the session it writes with the counts jq gives.
func TestGeminiCLILive(t *testing.T) {
	dir := os.Getenv("AGENTCTL_NPM_GEMINI")
	bin := filepath.Join(dir, "node_modules", ".bin", "gemini")
	if _, err := os.Stat(bin); dir == "" || err != nil {
		t.Skip("AGENTCTL_NPM_GEMINI does not hold gemini-cli (.ci/run installs it)")
	}
	srv := httptest.NewServer(&fakeGemini{})
	defer srv.Close()
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(proj, 0o755)
	_ = os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hi\n"), 0o644)
	// API-key auth, no folder-trust prompt, no update check, no usage
	// statistics: nothing but the fake server is asked.
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},
"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false},
"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}`
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "List the files here using the generalist sub-agent.", "--yolo", "-m", "gemini-2.5-flash")
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GEMINI_API_KEY=test",
		"GOOGLE_GEMINI_BASE_URL="+srv.URL, "GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.json*"))
	if len(files) != 1 {
		t.Fatalf("gemini-cli wrote %v; want one session file\n%s", files, out)
	}
	// AGENTCTL_GEMINI_KEEP=folder keeps what it wrote (how testdata's
	// sessions were made).
	if keep := os.Getenv("AGENTCTL_GEMINI_KEEP"); keep != "" {
		if err := os.CopyFS(keep, os.DirFS(filepath.Dir(files[0]))); err != nil {
			t.Fatal(err)
		}
	}
	// Versions before 0.39 wrote one .json and no sub-agent files.
	children := 1
	if strings.HasSuffix(files[0], ".json") {
		children = 0
	}
	checkGeminiImport(t, files[0], children)
}

// fakeGemini answers streamGenerateContent as the Gemini API does (SSE
// of GenerateContentResponse chunks): the main agent calls the
// generalist sub-agent, the sub-agent lists the folder, completes its
// task with arguments refused (a tool error) and then right, then the main agent answers in two text chunks.
type fakeGemini struct {
	mu sync.Mutex
	n  int
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	var req struct {
		Contents []struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"parametersJsonSchema"`
				Params json.RawMessage `json:"parameters"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	if !strings.Contains(r.URL.Path, ":streamGenerateContent") {
		// A side request (a classifier, a check): a plain JSON answer.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"{}"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4}}`)
		return
	}
	complete := json.RawMessage(nil)
	for _, t := range req.Tools {
		for _, d := range t.FunctionDeclarations {
			if d.Name == "complete_task" {
				complete = cmpRaw(d.Schema, d.Params)
			}
		}
	}
	answered := ""
	if len(req.Contents) > 0 {
		for _, p := range req.Contents[len(req.Contents)-1].Parts {
			if fr, ok := p["functionResponse"]; ok {
				var x struct {
					Name string `json:"name"`
				}
				_ = json.Unmarshal(fr, &x)
				answered = x.Name
			}
		}
	}
	usage := fmt.Sprintf(`"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"cachedContentTokenCount":%d,"thoughtsTokenCount":%d,"totalTokenCount":%d}`,
		1000+n, 10+n, 100*(n%2), n, 1000+n+10+n+n)
	call := func(name, args string) []string {
		return []string{`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"` + name + `","args":` + args + `}}]},"finishReason":"STOP","index":0}],` + usage + `,"modelVersion":"gemini-2.5-flash"}`}
	}
	var chunks []string
	switch {
	case complete != nil && answered == "":
		chunks = call("list_directory", `{"dir_path":"."}`)
	case complete != nil && answered == "list_directory":
		// Arguments its schema refuses: the sub-agent sees the tool's
		// error and tries again.
		chunks = call("complete_task", `{"result":{}}`)
	case complete != nil:
		chunks = call("complete_task", fillRequired(complete))
	case answered == "":
		chunks = call("invoke_agent", `{"agent_name":"generalist","prompt":"List the files in the current folder and report their names."}`)
	default:
		chunks = []string{
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"The folder holds "}]},"index":0}],"modelVersion":"gemini-2.5-flash"}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"one file, a.txt."}]},"finishReason":"STOP","index":0}],` + usage + `,"modelVersion":"gemini-2.5-flash"}`,
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\r\n\r\n", c)
	}
}

func cmpRaw(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 && string(a) != "null" {
		return a
	}
	return b
}

// fillRequired makes arguments for a JSON schema: each required property
// a string, or an object filled the same way.
func fillRequired(schema json.RawMessage) string {
	b, _ := json.Marshal(fillSchema(schema))
	return string(b)
}

func fillSchema(schema json.RawMessage) any {
	var s struct {
		Type       any                        `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	switch strings.ToLower(fmt.Sprint(s.Type)) {
	case "object":
		args := map[string]any{}
		for _, k := range s.Required {
			args[k] = fillSchema(s.Properties[k])
		}
		return args
	case "boolean":
		return true
	case "array":
		return []any{}
	}
	return "The folder holds a.txt."
}

// TestGeminiCopilotMalformed: variants of the real files, cut or broken
// the ways a file on disk can be, import what is sound and name the rest
// by line; nothing already recorded is lost to a bad record after it.
func TestGeminiCopilotMalformed(t *testing.T) {
	gem, err := os.ReadFile(geminiTestdata)
	if err != nil {
		t.Fatal(err)
	}
	cop, err := os.ReadFile(copilotTestdata)
	if err != nil {
		t.Fatal(err)
	}
	lines := func(b []byte) []string { return strings.Split(strings.TrimRight(string(b), "\n"), "\n") }
	join := func(l []string) []byte { return []byte(strings.Join(l, "\n") + "\n") }
	for _, tt := range []struct {
		name, format string
		data         []byte
		code         string
		line         int
		// fewer: how many fewer user and assistant messages than the file.
		fewerUser, fewerAsst int
	}{
		{"gemini torn last line", FormatGeminiCLI, func() []byte {
			l := lines(gem)
			// The last line is the final answer's $set; cut the answer itself.
			l = l[:len(l)-1]
			l[len(l)-1] = l[len(l)-1][:len(l[len(l)-1])/2]
			return join(l)
		}(), CodeTornLine, 10, 0, 1},
		{"gemini $rewindTo that is no string", FormatGeminiCLI, append(append([]byte{}, gem...), []byte(`{"$rewindTo":{"id":"x"}}`+"\n")...),
			CodeUnknownRecord, 12, 0, 0},
		{"gemini bad line between messages", FormatGeminiCLI, func() []byte {
			l := lines(gem)
			return join(append(l[:4:4], append([]string{`{"id":"broken",`}, l[4:]...)...))
		}(), CodeBadLine, 5, 0, 0},
		{"gemini message whose fields do not decode", FormatGeminiCLI, append(append([]byte{}, gem...), []byte(`{"id":"m9","type":"gemini","toolCalls":"none"}`+"\n")...),
			CodeBadLine, 12, 0, 0},
		{"copilot torn last line", FormatCopilot, func() []byte {
			l := lines(cop)
			l[len(l)-1] = l[len(l)-1][:40]
			return join(l)
		}(), CodeTornLine, len(lines(cop)), 0, 0},
		{"copilot unknown event", FormatCopilot, append(append([]byte{}, cop...), []byte(`{"type":"derived.unknown_event","data":{},"id":"x","timestamp":"2026-12-06T10:54:27.000Z"}`+"\n")...),
			CodeUnknownRecord, len(lines(cop)) + 1, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			orig := geminiTestdata
			if tt.format == FormatCopilot {
				orig = copilotTestdata
			}
			want, err := Import(tt.format, orig)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), filepath.Base(orig))
			if err := os.WriteFile(p, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			ss, err := Import(tt.format, p)
			if err != nil {
				t.Fatal(err)
			}
			r, w := ss[0].Report, want[0].Report
			found := false
			for _, n := range r.Notes {
				found = found || (n.Code == tt.code && n.Line == tt.line)
			}
			if !found {
				t.Errorf("no %s note at line %d: %+v", tt.code, tt.line, r.Notes)
			}
			for kind, fewer := range map[session.Kind]int{session.KindUserMessage: tt.fewerUser, session.KindAssistantMessage: tt.fewerAsst} {
				if got, wantN := r.Counts[string(kind)], w.Counts[string(kind)]-fewer; got != wantN {
					t.Errorf("%s: %d, want %d", kind, got, wantN)
				}
			}
		})
	}
}

// TestGeminiCLICompressed imports a session the real gemini-cli
// compressed (testdata/gemini-cli/compressed, README says how): resumed,
// its first exchange summarized into a <state_snapshot> by a checkpoint
// that keeps copies, under new ids, of the prompt and the call after it.
// Every turn that was sent stays, with its usage (jq sums the file's
// tokens, one copy per message); the compression is a compaction through
// the last summarized message; the copies are not imported twice.
func TestGeminiCLICompressed(t *testing.T) {
	checkGeminiCompressed(t, filepath.Join("testdata", "gemini-cli", "compressed", "session-2026-12-06T11-05-c6dd7b08.jsonl"))
}

func checkGeminiCompressed(t *testing.T, p string) {
	t.Helper()
	ss, err := Import(FormatAuto, p)
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	c := importedCount(s)
	if c.User != 3 || c.Assistant != 3 || c.Calls != 1 || c.Results != 1 {
		t.Errorf("imported %+v; want 3 prompts (the context, two typed), 3 responses, 1 call answered", c)
	}
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed")
	}
	out, err := exec.Command(jq, "-s", `[.[] | (select(.id), (.["$set"].messages // [])[]) | select(.type == "gemini" and .tokens != null) | {id, t: (.tokens.input + .tokens.tool)}] | group_by(.id) | map(last.t) | add`, p).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)); fmt.Sprint(c.Input) != want {
		t.Errorf("input tokens %d; jq sums %s", c.Input, want)
	}
	var comp []session.Event
	for _, e := range s.Events {
		if e.Kind == session.KindCompaction {
			comp = append(comp, e)
		}
	}
	if len(comp) != 1 || !strings.Contains(comp[0].Summary, "<state_snapshot>the user said hi</state_snapshot>") {
		t.Fatalf("compactions %+v", comp)
	}
	// Through the first exchange's response: the prompt after it and its
	// call are the turns the compression kept.
	if e := s.Events[comp[0].Through-1]; e.Kind != session.KindModelCall || s.Events[comp[0].Through].Text != "now list the files" {
		t.Errorf("compaction through seq %d (%s), followed by %q", comp[0].Through, e.Kind, s.Events[comp[0].Through].Text)
	}
	for _, n := range s.Report.Notes {
		if n.Code == CodeFork || Lost(s.Report) != 0 {
			t.Errorf("note %+v: nothing of this file is a branch or lost", n)
		}
	}
}

// TestGeminiCLICompressLive makes the compressed session of testdata again
// with the real gemini-cli (AGENTCTL_NPM_GEMINI): a first run, then a
// resumed one whose call reports 900000 prompt tokens, so gemini-cli
// compresses the history before its next turn; the import is checked as
// the testdata file is.
func TestGeminiCLICompressLive(t *testing.T) {
	dir := os.Getenv("AGENTCTL_NPM_GEMINI")
	bin := filepath.Join(dir, "node_modules", ".bin", "gemini")
	if _, err := os.Stat(bin); dir == "" || err != nil {
		t.Skip("AGENTCTL_NPM_GEMINI does not hold gemini-cli (.ci/run installs it)")
	}
	srv := httptest.NewServer(http.HandlerFunc(fakeGeminiCompress))
	defer srv.Close()
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	_ = os.MkdirAll(filepath.Join(home, ".gemini"), 0o755)
	_ = os.MkdirAll(proj, 0o755)
	_ = os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hi\n"), 0o644)
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},
"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false},
"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}`
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-p", "hi there"}, {"--resume", "latest", "-p", "now list the files"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, bin, append(args, "--yolo", "-m", "gemini-2.5-flash")...)
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GEMINI_API_KEY=test",
			"GOOGLE_GEMINI_BASE_URL="+srv.URL, "GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("gemini %v: %v\n%s", args, err, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("gemini-cli wrote %v; want one session file", files)
	}
	checkGeminiCompressed(t, files[0])
}

// fakeGeminiCompress answers as the Gemini API does: "now list the files"
// gets a list_directory call whose usage is 900000 prompt tokens (over
// half the model's window), anything else the text "ok"; generateContent
// (the compression's summary and its check) a <state_snapshot>;
// countTokens 100.
func fakeGeminiCompress(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	switch {
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"totalTokens":100}`)
		return
	case !strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"<state_snapshot>the user said hi</state_snapshot>"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":20,"totalTokenCount":70}}`)
		return
	}
	var req struct {
		Contents []struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	_ = json.Unmarshal(body, &req)
	last, answered := "", false
	if len(req.Contents) > 0 {
		for _, p := range req.Contents[len(req.Contents)-1].Parts {
			last += string(p["text"])
			answered = answered || p["functionResponse"] != nil
		}
	}
	chunk := `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":3,"totalTokenCount":1003},"modelVersion":"gemini-2.5-flash"}`
	if strings.Contains(last, "now list the files") && !answered {
		chunk = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"list_directory","args":{"dir_path":"."}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":900000,"candidatesTokenCount":10,"totalTokenCount":900010},"modelVersion":"gemini-2.5-flash"}`
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\r\n\r\n", chunk)
}
