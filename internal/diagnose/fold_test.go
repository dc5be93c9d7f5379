package diagnose_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
)

// TestStreamedIsSQL is the differential test of the two ways to diagnose
// a session: Fold, from the log read a record at a time (what `view` and
// `diagnose SESSION` use), and Run, SQL over the views (the reference),
// must give the same report, byte for byte as JSON, for every session of
// the fixture home and of sessions made here to reach each finding's
// corners: compactions, a crash with a pending intent, needs_human and
// its resolution, denials and approvals, failed and repeated tools, a
// reused call id, refusals, cut answers, failed and retried model calls,
// cache tokens, token spikes, zero tokens (NULL in the views), a budget
// raised by budget_changed, subagents and a fork, arguments that json()
// rewrites, a live session and a corrupt log. internal/cli's
// TestFoldAgreesWithViews runs it again over imported corpus transcripts,
// eval suites and a crash matrix (CompareHome).
func TestStreamedIsSQL(t *testing.T) {
	home := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "fixtures", "diagnose", "home")+"/.", home).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	st := recorder.Store{Root: home}
	for id, evs := range madeSessions() {
		evs[0].SessionID = id
		if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
			t.Fatal(err)
		}
		if id != live {
			os.Remove(filepath.Join(st.SessionDir(id), recorder.LeaseFile))
		}
	}
	// A log damaged after its header, as a disk might.
	corrupt := "c0de000000000099"
	evs := madeSessions()["c0de000000000001"]
	evs[0].SessionID = corrupt
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(st.SessionDir(corrupt), recorder.LeaseFile))
	p := filepath.Join(st.SessionDir(corrupt), recorder.LogFile)
	b, _ := os.ReadFile(p)
	b[len(b)*2/3] ^= 0xff
	os.WriteFile(p, b, 0o644)

	n := CompareHome(t, home)
	t.Logf("%d sessions diagnosed alike", n)
	if n < len(madeSessions())+5 {
		t.Fatalf("compared %d sessions", n)
	}
}

// CompareHome diagnoses every session of home both ways and reports
// each difference; it returns how many sessions it compared.
func CompareHome(t *testing.T, home string) int {
	t.Helper()
	ctx := context.Background()
	db, err := query.Open(ctx, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := recorder.Store{Root: home}
	ids, err := st.IDs()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, id := range ids {
		got, _, gerr := diagnose.Stream(st, id)
		if errors.Is(gerr, recorder.ErrCorrupt) {
			gerr = nil // the report is of the events before the damage, as the views'
		}
		a := replaycheck.NewAnchorer(id, nil)
		st.Stream(id, a.Add)
		want, werr := diagnose.Run(ctx, db, id, a.Report())
		if (gerr != nil) != (werr != nil) {
			t.Errorf("%s: streamed error %v, SQL error %v", id, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		if os.Getenv("DIAG_SHOW") != "" {
			t.Logf("%s", g)
		}
		if string(g) != string(w) {
			t.Errorf("%s: streamed report:\n%s\nSQL report:\n%s", id, g, w)
		}
		n++
	}
	return n
}

// live is the id of the made session left with its lease held.
const live = "c0de00000000000b"

// madeSessions are logs written here, each reaching findings' corners.
func madeSessions() map[string][]session.Event {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)
	type evs = []session.Event
	at := func(ms int, e session.Event) session.Event {
		e.TS = t0.Add(time.Duration(ms)*time.Millisecond + time.Duration(ms%7)*time.Microsecond)
		return e
	}
	hdr := func(extra string) session.Event {
		return session.Event{Kind: session.KindSessionStarted, Name: "made", Provider: "scripted", Model: "m1",
			Spec: json.RawMessage(`{"budget":{"max_tokens":5000,"max_tool_calls":40,"max_cost_usd":0.5,"max_wall":"10m"}` + extra + `}`)}
	}
	call := func(id, tool, args string) session.ToolCall {
		return session.ToolCall{ID: id, Name: tool, Args: json.RawMessage(args)}
	}
	asst := func(ms int, in, out int64, calls ...session.ToolCall) []session.Event {
		return evs{
			at(ms, session.Event{Kind: session.KindAssistantMessage, Text: "ok", ToolCalls: calls, InputTokens: in / 2, OutputTokens: out / 2}),
			at(ms+1, session.Event{Kind: session.KindModelCall, InputTokens: in, OutputTokens: out, CostUSD: float64(in) * 1e-6}),
		}
	}
	tool := func(ms int, id, name, status string, latency int64) []session.Event {
		return evs{
			at(ms, session.Event{Kind: session.KindToolIntent, CallID: id, Tool: name, IdempotencyKey: "k-" + id}),
			at(ms+latencyMS(latency), session.Event{Kind: session.KindToolResult, CallID: id, Tool: name, Status: status, LatencyMS: latency, Error: errText(status)}),
		}
	}
	cat := func(parts ...[]session.Event) []session.Event {
		var out []session.Event
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	one := func(e session.Event) []session.Event { return evs{e} }
	user := one(at(1, session.Event{Kind: session.KindUserMessage, Text: "Fix the build. Keep vendor/ as is."}))
	return map[string][]session.Event{
		// A loop after a failure, a budget raised then hit, token spikes
		// and zero token counts.
		"c0de000000000001": cat(one(hdr("")), user,
			asst(10, 100, 20, call("a", "bash", `{"command":"make"}`)), tool(12, "a", "bash", "error", 1500),
			asst(20, 100, 0, call("b", "bash", `{ "command" : "make" }`)), tool(22, "b", "bash", "error", 1200),
			asst(30, 90000, 30, call("c", "bash", `{"command":"make"}`), call("c2", "read_file", `{"path":"a\/b","n":1.0,"x":1e2,"u":"\u00e9\u001f"}`)),
			tool(32, "c", "bash", "error", 900), tool(34, "c2", "read_file", "ok", 5),
			one(at(40, session.Event{Kind: session.KindBudgetChanged, Attrs: json.RawMessage(`{"max_tokens":100000}`)})),
			asst(50, 0, 10, call("d", "read_file", `{"n":1.0,"x":1e2,"path":"a/b","u":"é\u001F"}`), call("e", "read_file", `{"path":"a\/b","n":1.0,"x":1e2,"u":"\u00e9\u001f"}`)),
			tool(52, "d", "read_file", "ok", 7), tool(54, "e", "read_file", "ok", 7),
			one(at(60, session.Event{Kind: session.KindBudgetExceeded, Reason: "max_tokens 100000 reached"})),
			one(at(61, session.Event{Kind: session.KindSessionFinished, Status: "budget_exceeded", Reason: "max_tokens"}))),
		// A crash with a pending intent, after a refusal, a cut answer,
		// failed and retried model calls, and cache tokens.
		"c0de000000000002": cat(one(hdr("")), user,
			one(at(5, session.Event{Kind: session.KindModelCall, Error: "overloaded", ErrorType: "overloaded_error", Attempt: 1, Text: "partial ans△"})),
			one(at(6, session.Event{Kind: session.KindModelCall, Attempt: 2, InputTokens: 50, OutputTokens: 5, CacheReadInputTokens: 40})),
			one(at(7, session.Event{Kind: session.KindAssistantMessage, Refusal: "I can't help with that.\nReally."})),
			one(at(8, session.Event{Kind: session.KindModelCall, InputTokens: 60, OutputTokens: 7, CacheCreationInputTokens: 30, CacheReadInputTokens: 5})),
			one(at(9, session.Event{Kind: session.KindAssistantMessage, Text: "cut", FinishReason: "length"})),
			one(at(10, session.Event{Kind: session.KindModelCall, Error: "boom with a long message " + strings.Repeat("x", 90)})),
			asst(20, 300, 40, call("p", "charge", `{"amount":12,"card":"tok"}`)),
			one(at(22, session.Event{Kind: session.KindToolIntent, CallID: "p", Tool: "charge", IdempotencyKey: "idem-1"}))),
		// needs_human, resolved for one call and not for another, an
		// interruption, resumed and finished twice.
		"c0de000000000003": cat(one(hdr("")), user,
			asst(10, 100, 10, call("q", "charge", `{"amount":1}`), call("r", "notify", `{}`)),
			one(at(12, session.Event{Kind: session.KindToolIntent, CallID: "q", Tool: "charge"})),
			one(at(13, session.Event{Kind: session.KindToolIntent, CallID: "r", Tool: "notify"})),
			one(at(14, session.Event{Kind: session.KindSessionFinished, Status: "crashed"})),
			one(at(5000, session.Event{Kind: session.KindReconciled, CallID: "q", Tool: "charge", Outcome: session.ReconciledNeedsHuman})),
			one(at(5001, session.Event{Kind: session.KindReconciled, CallID: "r", Tool: "notify", Outcome: session.ReconciledNeedsHuman})),
			one(at(9000, session.Event{Kind: session.KindToolResult, CallID: "q", Tool: "charge", Status: "ok", LatencyMS: 3})),
			one(at(9001, session.Event{Kind: session.KindInterrupted, Reason: "SIGINT"})),
			one(at(9002, session.Event{Kind: session.KindSessionFinished, Status: "interrupted", Reason: "interrupted by the user"}))),
		// Approvals granted, denied and open; a compaction; an error event.
		"c0de000000000004": cat(one(hdr("")), user,
			asst(10, 100, 10, call("g", "deploy", `{"env":"prod"}`), call("h", "deploy", `{"env":"staging"}`), call("i", "rm", `{"path":"/"}`)),
			one(at(12, session.Event{Kind: session.KindApprovalRequest, CallID: "g", Tool: "deploy"})),
			one(at(13, session.Event{Kind: session.KindApprovalRequest, CallID: "h", Tool: "deploy"})),
			one(at(14, session.Event{Kind: session.KindApprovalRequest, CallID: "i", Tool: "rm"})),
			one(at(2514, session.Event{Kind: session.KindApprovalGranted, CallID: "g", Tool: "deploy", Scope: "once"})),
			one(at(3000, session.Event{Kind: session.KindApprovalDenied, CallID: "h", Tool: "deploy"})),
			tool(3001, "g", "deploy", "ok", 2000),
			one(at(3002, session.Event{Kind: session.KindToolResult, CallID: "h", Tool: "deploy", Status: session.ResultDenied})),
			one(at(3010, session.Event{Kind: session.KindModelCall, InputTokens: 900, OutputTokens: 80, Attrs: json.RawMessage(`{"purpose":"compaction"}`)})),
			one(at(3011, session.Event{Kind: session.KindCompaction, Through: 3, Summary: "Deployed to prod."})),
			one(at(3020, session.Event{Kind: session.KindError, Error: "the model stopped answering"})),
			asst(3030, 10, 10)),
		// A reused call id (a scripted model forked from its start) and an
		// orphan result; a subagent; a fork header.
		"c0de000000000005": cat(one(func() session.Event {
			h := hdr("")
			h.ParentSessionID, h.ForkedFrom = "c0de000000000001", 3
			return h
		}()), user,
			one(at(8, session.Event{Kind: session.KindToolResult, CallID: "z", Tool: "grep", Status: "error", LatencyMS: 4})),
			asst(10, 100, 10, call("z", "grep", `{"q":"x"}`)), tool(12, "z", "grep", "error", 40),
			asst(20, 100, 10, call("z", "grep", `{"q":"x"}`)), tool(22, "z", "grep", "ok", 40),
			asst(30, 100, 10, call("task", "task", `{"goal":"sub"}`)),
			one(at(31, session.Event{Kind: session.KindToolIntent, CallID: "task", Tool: "task"})),
			one(at(32, session.Event{Kind: session.KindSubagentStarted, ChildSessionID: "c0de00000000000c"})),
			one(at(40, session.Event{Kind: session.KindSubagentFinished, ChildSessionID: "c0de00000000000c", InputTokens: 10, OutputTokens: 2, Attrs: json.RawMessage(`{"tool_calls":1}`)})),
			one(at(41, session.Event{Kind: session.KindToolResult, CallID: "task", Tool: "task", Status: "ok", LatencyMS: 9000})),
			one(at(50, session.Event{Kind: session.KindEvaluation, Outcome: "fail", Evidence: "tests fail"})),
			one(at(51, session.Event{Kind: session.KindSessionFinished, Status: "failed", Reason: "evaluation failed"}))),
		// An import with no end; the live one; a header alone.
		"c0de000000000006": cat(one(session.Event{Kind: session.KindSessionStarted, Provider: "anthropic", Model: "claude",
			Attrs: json.RawMessage(`{"imported_from":"claude-code","source_status":"end_turn"}`)}), user,
			asst(10, 100, 10, call("t1", "Bash", `{"command":"ls -la\n"}`)),
			one(at(12, session.Event{Kind: session.KindToolResult, CallID: "t1", Tool: "Bash", Status: "ok"}))),
		live:               cat(one(hdr("")), user, asst(10, 1, 1, call("l", "bash", `{"command":"sleep 9"}`)), one(at(12, session.Event{Kind: session.KindToolIntent, CallID: "l", Tool: "bash"}))),
		"c0de00000000000d": one(hdr("")),
		// Many of everything a finding lists: each list is cut at
		// maxListed (TestFindingsListAFew).
		many: func() []session.Event {
			out := cat(one(hdr("")), user)
			ms := 10
			for i := range 8 {
				out = append(out, one(at(ms, session.Event{Kind: session.KindModelCall, Error: "overloaded", ErrorType: "overloaded_error", Attempt: int64(i + 1)}))...)
				ms += 2
			}
			for i := range 8 {
				// Each command asked twice: the loop finding names 8.
				for j := range 2 {
					id := fmt.Sprintf("r%d-%d", i, j)
					out = append(out, asst(ms, 10, 1, call(id, "bash", fmt.Sprintf(`{"command":"make t%d"}`, i)))...)
					out = append(out, tool(ms+2, id, "bash", "error", 1)...)
					ms += 5
				}
			}
			for i := range 8 {
				id := fmt.Sprintf("ap%d", i)
				out = append(out, one(at(ms, session.Event{Kind: session.KindApprovalRequest, CallID: id, Tool: "deploy"}))...)
				ms++
			}
			for i := range 8 {
				out = append(out, one(at(ms, session.Event{Kind: session.KindSessionFinished, Status: "crashed", Reason: fmt.Sprint("run ", i)}))...)
				ms += 100
			}
			for i := range 8 {
				id := fmt.Sprintf("p%d", i)
				out = append(out, one(at(ms, session.Event{Kind: session.KindToolIntent, CallID: id, Tool: "charge", IdempotencyKey: "k-" + id}))...)
				ms++
			}
			return out
		}(),
		// An import whose source records no usage and no times (a Cursor
		// transcript), and a fork of it, which records its own.
		noUsage: cat(one(session.Event{Kind: session.KindSessionStarted, Provider: "cursor",
			Attrs: json.RawMessage(`{"imported_from":"cursor","not_recorded":["timestamps","usage"]}`)}), user,
			asst(10, 0, 0, call("n1", "Read", `{"path":"a"}`)),
			one(at(12, session.Event{Kind: session.KindToolIntent, CallID: "n1", Tool: "Read"}))),
		"c0de000000000011": cat(one(session.Event{Kind: session.KindSessionStarted, Provider: "cursor", ParentSessionID: noUsage, ForkedFrom: 3,
			Attrs: json.RawMessage(`{"imported_from":"cursor","not_recorded":["timestamps","usage"]}`)}), user,
			asst(10, 40, 5, call("n2", "Read", `{"path":"a"}`)), tool(12, "n2", "Read", "ok", 3)),
		// One message naming one id twice: both asks join its one call.
		"c0de00000000000e": cat(one(hdr("")), user,
			asst(25, 100, 10, call("w", "grep", `{"q":"y"}`), call("w", "grep", `{"q":"other"}`)), tool(27, "w", "grep", "error", 3),
			asst(28, 100, 10, call("w2", "grep", `{"q":"y"}`)), tool(29, "w2", "grep", "ok", 3)),
	}
}

// noUsage is the made import whose source records no usage or times.
const noUsage = "c0de000000000010"

// TestNotRecordedIsNotZero: the budget finding of an import whose source
// records no tokens or times says so, instead of "0 tokens ... $0.0000 in
// 0s" as if measured; a fork of it, which records its own, counts them.
func TestNotRecordedIsNotZero(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	for _, id := range []string{noUsage, "c0de000000000011"} {
		evs := madeSessions()[id]
		evs[0].SessionID = id
		if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]string{
		noUsage:            "Spent 1 tool calls; the cursor transcript records no tokens (so no cost) and no times.",
		"c0de000000000011": "Spent 45 tokens, 1 tool calls and $0.0000 in ",
	} {
		rep, _, err := diagnose.Stream(st, id)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range rep.Findings {
			if f.Kind == "budget" {
				found = true
				if !strings.HasPrefix(f.Text, want) {
					t.Errorf("%s: budget %q, want it to start %q", id, f.Text, want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no budget finding: %+v", id, rep.Findings)
		}
	}
}

// many is the session of madeSessions with more of each listed thing
// than a finding lists.
const many = "c0de00000000000f"

// TestFindingsListAFew: a finding is one line that names a few items and
// counts the rest (an imported Cursor transcript of 4,000 calls printed
// every pending intent). The seqs are bounded by MaxSeqs already.
func TestFindingsListAFew(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	evs := madeSessions()[many]
	evs[0].SessionID = many
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	rep, _, err := diagnose.Stream(st, many)
	if err != nil {
		t.Fatal(err)
	}
	// What each says of the rest, and an item past the first few.
	cut := map[string][2]string{
		"loop":      {"and 3 more", "make t7"},
		"provider":  {"and 3 more", "seq 10 failed"},
		"approvals": {"and 3 more", "ap7 "},
		"pending":   {"and 3 more", "p7 "},
		"exit":      {"3 earlier runs", "(run 0)"},
	}
	for _, f := range rep.Findings {
		c, ok := cut[f.Kind]
		if !ok {
			continue
		}
		delete(cut, f.Kind)
		if !strings.Contains(f.Text, c[0]) {
			t.Errorf("%s: %q does not say %q", f.Kind, f.Text, c[0])
		}
		if strings.Contains(f.Text, c[1]) {
			t.Errorf("%s lists %q, past the first few: %s", f.Kind, c[1], f.Text)
		}
	}
	for k := range cut {
		t.Errorf("no %s finding: %+v", k, rep.Findings)
	}
}

func latencyMS(l int64) int { return int(l) }

func errText(status string) string {
	if status == session.ResultError {
		return "exit status 2"
	}
	return ""
}

// TestSQLJSONIsDuckDBs asks DuckDB's json() for the form of arguments the
// streamed loop finding writes itself (sqlJSON, through Fold): two calls
// whose arguments json() makes equal are the same call, and the label
// shows json()'s text.
func TestSQLJSONIsDuckDBs(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, args := range []string{
		``, `null`, `{}`, `[]`, `"s"`, `true`, `{"a":null,"b":false}`,
		`{"b":1.0,"a":1e2,"c":12345678901234567890,"d":"\u00e9\/\u0001<>&","e":[1, 2],"f":-0,"g":1.5E-3,"h":0.1,"i":100000000000000000000000}`,
		`[1e21,1e20,1e-7,1e-6,1e-5,123456789012345678.0,1.5e300,-2.5,1e16,0.00001,-0.0,-1e2,9007199254740993.0,-9223372036854775809,18446744073709551616,1E400,1e-400,0e0,5E+20,1.25e-6]`,
		`{"x":"\ud83d\ude00 \"q\" \\ \t\n\b\f\r\u007f\u0000 \u001a\u001F\u2028 😀"}`, `{"a":1,"a":2}`, "{\n  \"k\" : [ 1 , {\"z\":\"y\"} ]\n}",
	} {
		tc := `[{"id":"a","name":"x"}]`
		if args != "" {
			tc = `[{"id":"a","name":"x","args":` + args + `}]`
		}
		var want string
		if err := db.QueryRow(`SELECT coalesce(CAST(json(u.c.args) AS VARCHAR), '') FROM (SELECT unnest(from_json(?::VARCHAR, '[{"id":"VARCHAR","name":"VARCHAR","args":"JSON"}]')) AS c) u`, tc).Scan(&want); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		if got := diagnose.SQLJSON(json.RawMessage(args)); got != want {
			t.Errorf("sqlJSON(%s) = %s, json() = %s", args, got, want)
		}
	}

}
