package transcript_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/transcript"
)

// counter returns the path of an independent counting tool (sqlite3, jq):
// CI installs them (.ci/run), so there a missing one fails; elsewhere the
// test is skipped.
func counter(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; .ci/run installs it", name)
		}
		t.Skipf("%s is not installed: the independent count needs it", name)
	}
	return p
}

// sqliteCount runs one query with the sqlite3 CLI over the database,
// read-only, and returns its single number.
func sqliteCount(t *testing.T, sqlite3, db, query string) float64 {
	t.Helper()
	out, err := exec.Command(sqlite3, "-readonly", db, query).Output()
	if err != nil {
		t.Fatalf("sqlite3 %q: %v", query, err)
	}
	s := strings.TrimSpace(string(out))
	if s == "" {
		return 0
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("sqlite3 %q = %q", query, s)
	}
	return n
}

// checkOpenCode imports an opencode database and checks each session
// against what the sqlite3 CLI counts in it, in both of opencode's
// schemas (a database can hold sessions of each): the message/part rows
// of opencode's first session runner and the session_message rows of its
// v2 runner. It counts user messages, model calls (step-finish parts;
// assistant messages of the v2 schema, one per step), tool calls and
// results (tool parts or assistant content items, completed or failed),
// tokens (input with the cache reads and writes), and the source's cost
// kept beside agentctl's.
func checkOpenCode(t *testing.T, db string) {
	sqlite3 := counter(t, "sqlite3")
	if got, err := transcript.Detect(db); err != nil || got != transcript.FormatOpenCode {
		t.Fatalf("Detect = %q, %v", got, err)
	}
	ss, err := transcript.Import(transcript.FormatAuto, db)
	if err != nil {
		t.Fatal(err)
	}
	if want := sqliteCount(t, sqlite3, db, `SELECT count(*) FROM session`); len(ss) != int(want) {
		t.Fatalf("%d sessions imported, the database has %v", len(ss), want)
	}
	again, err := transcript.Import(transcript.FormatOpenCode, db)
	if err != nil {
		t.Fatal(err)
	}
	tools := 0
	for i, s := range ss {
		if again[i].ID() != s.ID() {
			t.Errorf("session %d: id %s, then %s: re-import is not idempotent", i, s.ID(), again[i].ID())
		}
		var attrs struct {
			SourceID string `json:"source_session_id"`
		}
		if err := json.Unmarshal(s.Events[0].Attrs, &attrs); err != nil || attrs.SourceID == "" {
			t.Fatalf("header attrs %s", s.Events[0].Attrs)
		}
		q := func(sel, from, where string) float64 {
			return sqliteCount(t, sqlite3, db, "SELECT "+sel+" FROM "+from+" WHERE session_id = '"+attrs.SourceID+"' AND "+where)
		}
		has := func(table string) bool {
			return sqliteCount(t, sqlite3, db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '"+table+"'") > 0
		}
		tokens := "coalesce(sum(json_extract(data, '$.tokens.input') + json_extract(data, '$.tokens.cache.read') + json_extract(data, '$.tokens.cache.write')), 0)"
		want := map[string]float64{}
		// v1: message and part rows.
		if has("message") && has("part") {
			step := `json_extract(data, '$.type') = 'step-finish'`
			want["user_message"] += q("count(*)", "message", `json_extract(data, '$.role') = 'user'`)
			want["model_call"] += q("count(*)", "part", step)
			want["tool_intent"] += q("count(*)", "part", `json_extract(data, '$.type') = 'tool'`)
			want["tool_result"] += q("count(*)", "part", `json_extract(data, '$.type') = 'tool' AND json_extract(data, '$.state.status') IN ('completed', 'error')`)
			want["input"] += q(tokens, "part", step)
			want["output"] += q("coalesce(sum(json_extract(data, '$.tokens.output')), 0)", "part", step)
			want["cost"] += q("coalesce(sum(json_extract(data, '$.cost')), 0)", "part", step)
		}
		// v2: session_message rows, an assistant row per step, its tool
		// calls items of its content.
		if has("session_message") {
			tool := `json_extract(c.value, '$.type') = 'tool'`
			content := "session_message m, json_each(m.data, '$.content') c"
			asst := `type = 'assistant'`
			want["user_message"] += q("count(*)", "session_message", `type = 'user'`)
			want["model_call"] += q("count(*)", "session_message", asst)
			want["tool_intent"] += q("count(*)", content, "m.type = 'assistant' AND "+tool)
			want["tool_result"] += q("count(*)", content, "m.type = 'assistant' AND "+tool+` AND json_extract(c.value, '$.state.status') IN ('completed', 'error')`)
			want["input"] += q(tokens, "session_message", asst)
			want["output"] += q("coalesce(sum(json_extract(data, '$.tokens.output')), 0)", "session_message", asst)
			want["cost"] += q("coalesce(sum(json_extract(data, '$.cost')), 0)", "session_message", asst)
		}
		got := map[string]float64{}
		for _, e := range s.Events {
			got[string(e.Kind)]++
			if e.Kind == session.KindModelCall {
				got["input"] += float64(e.InputTokens)
				got["output"] += float64(e.OutputTokens)
				var a struct {
					Cost *float64 `json:"source_cost_usd"`
				}
				if json.Unmarshal(e.Attrs, &a); a.Cost == nil {
					t.Errorf("model_call %d has no source_cost_usd: %s", e.Seq, e.Attrs)
				} else {
					got["cost"] += *a.Cost
				}
			}
		}
		for k, w := range want {
			if math.Abs(got[k]-w) > 1e-9 {
				t.Errorf("session %s: %s = %v, sqlite3 counts %v", attrs.SourceID, k, got[k], w)
			}
		}
		if want["model_call"] == 0 || want["user_message"] == 0 {
			t.Errorf("session %s: the database has no conversation to compare", attrs.SourceID)
		}
		tools += int(want["tool_result"])
		if lost := transcript.Lost(s.Report); lost != 0 {
			t.Errorf("session %s: %d records not imported: %+v", attrs.SourceID, lost, s.Report.Notes)
		}
	}
	if tools == 0 {
		t.Error("no tool call with its result in the database")
	}
}

// TestOpenCodeTestdata imports the database opencode 1.18.33 wrote
// (testdata/opencode, see the README there).
func TestOpenCodeTestdata(t *testing.T) {
	checkOpenCode(t, filepath.Join("testdata", "opencode", "opencode.db"))
}

// TestOpenCodeV2Testdata imports the database opencode 1.18.33's v2
// session runner wrote (its session_message table; message and part
// empty): the same events as the first schema's.
func TestOpenCodeV2Testdata(t *testing.T) {
	db := filepath.Join("testdata", "opencode", "opencode-v2.db")
	sqlite3 := counter(t, "sqlite3")
	if n := sqliteCount(t, sqlite3, db, `SELECT count(*) FROM message`); n != 0 {
		t.Fatalf("the v2 database holds %v message rows; it is meant to hold session_message rows only", n)
	}
	checkOpenCode(t, db)
	ss, err := transcript.Import(transcript.FormatOpenCode, db)
	if err != nil {
		t.Fatal(err)
	}
	// The tools' outputs, errors and times: in the second session one
	// response asks for two calls, a read that fails and a bash call
	// whose result is what README.md holds, each answered after it was
	// asked.
	results := map[string]session.Event{}
	intents := map[string]session.Event{}
	var calls []session.ToolCall
	for _, s := range ss {
		for _, e := range s.Events {
			switch e.Kind {
			case session.KindToolIntent:
				intents[s.ID()+e.CallID] = e
			case session.KindToolResult:
				results[s.ID()+e.CallID] = e
			case session.KindAssistantMessage:
				if len(e.ToolCalls) > len(calls) {
					calls = e.ToolCalls
				}
			}
		}
	}
	if len(calls) != 2 || calls[0].Name != "read" || calls[1].Name != "bash" {
		t.Fatalf("the parallel calls are %+v; want read and bash in one response", calls)
	}
	var failed, ok int
	for k, r := range results {
		in := intents[k]
		if r.TS.Before(in.TS) || r.LatencyMS <= 0 {
			t.Errorf("call %s: intent at %v, result at %v, latency %d", r.CallID, in.TS, r.TS, r.LatencyMS)
		}
		switch {
		case r.Tool == "read" && r.Status == session.ResultError && r.Error == "Unable to read MISSING.md":
			failed++
		case r.Tool == "bash" && r.Status == session.ResultOK && strings.Contains(r.Output, "This service will recieve mail"):
			ok++
		default:
			t.Errorf("unexpected result %+v", r)
		}
	}
	if failed != 1 || ok != 2 {
		t.Errorf("%d failed reads and %d bash results; want 1 and 2", failed, ok)
	}
}

// TestOpenCodeV2Only: a database with the v2 schema's tables and not the
// first's (a later opencode may drop message and part) is still told and
// imported. Derived from the real v2 database: a copy with the two tables
// dropped.
func TestOpenCodeV2Only(t *testing.T) {
	sqlite3 := counter(t, "sqlite3")
	b, err := os.ReadFile(filepath.Join("testdata", "opencode", "opencode-v2.db"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "opencode.db")
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sqlite3, db, "DROP TABLE part; DROP TABLE message;").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	checkOpenCode(t, db)
}

// TestOpenCodeLive runs the installed opencode against `agentctl proxy
// --script` with a scripted model (one bash call), then imports the
// database it just wrote (still in WAL mode, as a user's is).
func TestOpenCodeLive(t *testing.T) {
	npm := os.Getenv("AGENTCTL_NPM_AGENTS")
	if npm == "" {
		t.Skip("AGENTCTL_NPM_AGENTS is not set (.ci/run installs the npm agents there)")
	}
	agentctl := buildAgentctl(t)
	work := t.TempDir()
	fixtures, _ := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	ws := filepath.Join(work, "A")
	if out, err := exec.Command("cp", "-r", filepath.Join(fixtures, "workspaces", "typo"), ws).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	c := filepath.Join(fixtures, "external", "clients")
	for i, prompt := range []string{"What does this service do? Read README.md.", "Summarise README.md."} {
		cmd := exec.Command(agentctl, "proxy", "--script", filepath.Join(c, "opencode.yaml"), "--session", "rec"+strconv.Itoa(i),
			"--", "sh", filepath.Join(c, "opencode.sh"), filepath.Join(work, "user"), prompt)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "AGENTCTL_HOME="+filepath.Join(work, "home"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("opencode through the proxy: %v\n%s", err, out.String())
		}
	}
	checkOpenCode(t, filepath.Join(work, "user", ".local", "share", "opencode", "opencode.db"))
}

// TestOpenCodeV2Live runs the installed opencode's v2 session runner
// (opencode serve, its /api/session routes) against `agentctl proxy
// --script` with scripted models, after an `opencode run` of the first
// runner in the same HOME, then imports the database they just wrote:
// one file holding sessions of both schemas, each imported from its own
// rows.
func TestOpenCodeV2Live(t *testing.T) {
	npm := os.Getenv("AGENTCTL_NPM_AGENTS")
	if npm == "" {
		t.Skip("AGENTCTL_NPM_AGENTS is not set (.ci/run installs the npm agents there)")
	}
	counter(t, "curl")
	agentctl := buildAgentctl(t)
	work := t.TempDir()
	fixtures, _ := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	ws := filepath.Join(work, "A")
	if out, err := exec.Command("cp", "-r", filepath.Join(fixtures, "workspaces", "typo"), ws).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	c := filepath.Join(fixtures, "external", "clients")
	for i, run := range []struct{ client, script, prompt string }{
		{"opencode.sh", "opencode.yaml", "Summarise README.md."},
		{"opencode-v2.sh", "opencode.yaml", "What does this service do? Read README.md."},
		{"opencode-v2.sh", "opencode-v2-tools.yaml", "Read MISSING.md and README.md."},
	} {
		cmd := exec.Command(agentctl, "proxy", "--script", filepath.Join(c, run.script), "--session", "rec"+strconv.Itoa(i),
			"--", "sh", filepath.Join(c, run.client), filepath.Join(work, "user"), run.prompt)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "AGENTCTL_HOME="+filepath.Join(work, "home"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("opencode serve through the proxy: %v\n%s", err, out.String())
		}
	}
	db := filepath.Join(work, "user", ".local", "share", "opencode", "opencode.db")
	sqlite3 := counter(t, "sqlite3")
	if n := sqliteCount(t, sqlite3, db, `SELECT count(DISTINCT session_id) FROM session_message`); n != 2 {
		t.Fatalf("opencode's v2 runner wrote session_message rows for %v sessions; want 2", n)
	}
	if n := sqliteCount(t, sqlite3, db, `SELECT count(DISTINCT session_id) FROM message`); n != 1 {
		t.Fatalf("opencode run wrote message rows for %v sessions; want 1", n)
	}
	checkOpenCode(t, db)
}

// buildAgentctl builds the binary the live tests drive.
func buildAgentctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentctl")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/agentctl/agentctl/cmd/agentctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
