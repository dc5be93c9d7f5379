package evals_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/evals"
)

// hostile is what an agent can put in a failing assertion's evidence (a
// file it wrote, a command's output): HTML, a link, a bare URL, a table
// pipe, a code fence and a heading on lines of their own, a backtick
// run, a terminal escape and a bidi override.
const hostile = "x`` </code><img src=x onerror=alert(1)> [click](https://evil.example/a) https://evil.example/b | cell\n```\n# owned\n<script>alert(1)</script>\x1b[2J\u202e"

// TestSummarySaysWhy: the Markdown summary names, under each failing
// scenario, the failed assertion (the check as written, expected, and
// what was found, got), with and without a baseline; hostile evidence
// stays text: no HTML, no link, no heading, the table keeps its rows
// and cells.
func TestSummarySaysWhy(t *testing.T) {
	t.Parallel()
	base := mkReport(mkScenario(scOpt{name: "breaks", runs: 1, passed: 1, tokens: 10}), mkScenario(scOpt{name: "steady", index: 1, runs: 1, passed: 1}),
		mkScenario(scOpt{name: "still-broken", index: 2, runs: 1, passed: 0}))
	cur := mkReport(mkScenario(scOpt{name: "breaks", runs: 1, passed: 0, tokens: 10}), mkScenario(scOpt{name: "steady", index: 1, runs: 1, passed: 1}),
		mkScenario(scOpt{name: "still-broken", index: 2, runs: 1, passed: 0}))
	cur.Scenarios[0].Runs[0].Results = []evals.Result{
		{Kind: evals.KindStatus, Assertion: "status: done", OK: true, Message: "status done"},
		{Kind: evals.KindFile, Assertion: `file: README.md matches "will receive"`, Line: 14, Message: `README.md does not match "will receive"; it starts ` + hostile},
	}
	// Failing on both sides is no regression, and still a failure to explain.
	cur.Scenarios[2].Runs[0].Results = []evals.Result{{Kind: evals.KindCalled, Assertion: "called: edit_file", Line: 20, Message: "edit_file was never called (calls: none)"}}
	cur.Passed, cur.Failed = 1, 2
	c, err := evals.Compare(base, cur, evals.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmp := range []*evals.Comparison{c, nil} {
		var buf bytes.Buffer
		if err := evals.WriteSummary(&buf, cur, cmp); err != nil {
			t.Fatal(err)
		}
		md := buf.String()
		for _, want := range []string{`file: README.md matches "will receive"`, "suite line 14", "does not match", "onerror=alert(1)",
			"expected: called: edit_file   (suite line 20)", "got:      edit_file was never called"} {
			if !strings.Contains(md, want) {
				t.Errorf("summary (baseline %v) does not name the failed assertion (%q):\n%s", cmp != nil, want, md)
			}
		}
		if strings.Contains(md, "\x1b") || strings.Contains(md, "\u202e") {
			t.Errorf("summary (baseline %v) carries a raw escape or bidi control", cmp != nil)
		}
		r := renderMarkdown(t, buf.Bytes())
		if r == nil {
			continue
		}
		for _, bad := range []string{"<img", "<script", "<a ", "<h1"} {
			if strings.Contains(r.HTML, bad) {
				t.Errorf("summary (baseline %v): the evidence became markup %s:\n%s", cmp != nil, bad, r.HTML)
			}
		}
		if len(r.Tables) == 0 || len(r.Tables[0].Rows) != 3 || len(r.Tables[0].Rows[0]) != len(r.Tables[0].Head) {
			t.Errorf("summary (baseline %v): the table lost its shape: %+v", cmp != nil, r.Tables)
		}
		var code strings.Builder
		for _, b := range r.Code {
			code.WriteString(b.Content)
		}
		if !strings.Contains(code.String(), `expected: file: README.md matches "will receive"`) || !strings.Contains(code.String(), "<img src=x onerror=alert(1)>") {
			t.Errorf("summary (baseline %v): no code block holds the assertion and its evidence as text:\n%s", cmp != nil, md)
		}
		for _, h := range r.Headings {
			if strings.Contains(h.Text, "owned") {
				t.Errorf("summary (baseline %v): the evidence made a heading", cmp != nil)
			}
		}
	}
}

// TestSummaryNamesDivergence runs the replay of failing.yaml, whose tool
// results differ from the recording: the summary names the turn and shows
// the first differing text of both sides.
func TestSummaryNamesDivergence(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, 1)
	cfg.Filter = regexpMust(t, "^replay_matches$")
	rep := run(t, loadSuite(t, "failing"), cfg)
	if rep.OK || len(rep.Scenarios) != 1 {
		t.Fatalf("report ok %v with %d scenarios; want the failed replay", rep.OK, len(rep.Scenarios))
	}
	var buf bytes.Buffer
	if err := evals.WriteSummary(&buf, rep, nil); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{"expected: replay_matches: 7e90000000000001", "got:      ", "diverged: turn ", "  - log:    ", "  + replay: "} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if r := renderMarkdown(t, buf.Bytes()); r != nil && !slices.ContainsFunc(r.Code, func(c struct {
		Info    string `json:"info"`
		Content string `json:"content"`
	}) bool {
		return strings.Contains(c.Content, "diverged: turn ")
	}) {
		t.Errorf("the divergence is not in a code block:\n%s", md)
	}
}

// notRunSuite writes a suite of two scenarios beside the fixtures: live
// calls OpenAI (it needs OPENAI_API_KEY), offline is scripted and
// requires a tool that is not installed when gone is true.
func notRunSuite(t *testing.T, gone bool) *evals.Suite {
	t.Helper()
	dir := t.TempDir()
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	spec := "name: live\nmodel: {provider: openai, id: gpt-4o}\nprompt: \"Fix the typo in README.md\"\n" +
		"workspace: {from: " + filepath.Join(fixtures, "workspaces", "typo") + "}\nmode: write\ntools: [read_file, edit_file]\n"
	tool := "sh"
	if gone {
		tool = "agentctl-no-such-tool-h-report"
	}
	suite := "name: secrets\nscenarios:\n" +
		"  - name: live\n    agent: live.yaml\n    assert: [{status: done}]\n" +
		"  - name: offline\n    agent: " + filepath.Join(fixtures, "agents", "fix-typo.yaml") + "\n    requires: {commands: [" + tool + "]}\n    assert: [{status: done}]\n"
	for name, body := range map[string]string{"live.yaml": spec, "suite.yaml": suite} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := evals.Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNotRun: a scenario that cannot run here (its model's key is not
// set: a fork's pull request gets no secrets; a required command is not
// installed) is reported as not run, with why, in the JSON report and
// the summary; against a baseline where it passed it is not_run, never
// regressed, and the gate holds. A report where nothing ran is not ok.
func TestNotRun(t *testing.T) {
	t.Parallel()
	noKey := func(string) string { return "" }
	cfg := testConfig(t, 1)
	cfg.Getenv = noKey
	rep := roundTrip(t, run(t, notRunSuite(t, false), cfg))
	b, _ := json.Marshal(rep)
	var doc struct {
		OK        bool `json:"ok"`
		NotRun    int  `json:"not_run"`
		Passed    int  `json:"passed"`
		Failed    int  `json:"failed"`
		Scenarios []struct {
			Name   string `json:"name"`
			Reason string `json:"not_run_reason"`
			Runs   []any  `json:"runs"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.NotRun != 1 || doc.Passed != 1 || doc.Failed != 0 || doc.OK {
		t.Errorf("report: %d not run, %d passed, %d failed, ok %v; want 1, 1, 0 and not ok (a scenario did not run)", doc.NotRun, doc.Passed, doc.Failed, doc.OK)
	}
	if len(doc.Scenarios) != 2 || !strings.Contains(doc.Scenarios[0].Reason, "OPENAI_API_KEY is not set") || len(doc.Scenarios[0].Runs) != 0 {
		t.Errorf("scenario live: %+v; want not run because OPENAI_API_KEY is not set, and no runs", doc.Scenarios)
	}

	base := mkReport(mkScenario(scOpt{name: "live", runs: 1, passed: 1, tokens: 300}), mkScenario(scOpt{name: "offline", index: 1, runs: 1, passed: 1, tokens: 330}))
	c, err := evals.Compare(base, rep, evals.CompareOptions{Tolerance: evals.Tolerance{}})
	if err != nil {
		t.Fatal(err)
	}
	if d := verdictOf(t, c, "live"); d.Verdict != "not_run" || !c.OK || c.Regressed != 0 {
		t.Errorf("live against a baseline that passed: %s (%v), gate ok %v; want not_run and the gate ok", d.Verdict, d.Reasons, c.OK)
	}
	for _, cmp := range []*evals.Comparison{c, nil} {
		var buf bytes.Buffer
		if err := evals.WriteSummary(&buf, rep, cmp); err != nil {
			t.Fatal(err)
		}
		md := buf.String()
		if !strings.Contains(md, "### Not run") || !strings.Contains(md, "OPENAI\\_API\\_KEY is not set") || !strings.Contains(md, "1 not run") || strings.Contains(md, "✅") {
			t.Errorf("summary (baseline %v) does not say live was not run, and why, in its headline and a section:\n%s", cmp != nil, md)
		}
	}

	var junit bytes.Buffer
	if err := evals.WriteJUnit(&junit, rep, c); err != nil {
		t.Fatal(err)
	}
	schemaCheck(t, junit.Bytes())
	if x := junit.String(); !strings.Contains(x, `<skipped message="not run: OPENAI_API_KEY is not set`) || !strings.Contains(x, `skipped="1"`) {
		t.Errorf("JUnit does not skip live, saying why:\n%s", x)
	}

	// A required command that is missing; then nothing runs at all.
	cfg = testConfig(t, 1)
	cfg.Getenv = noKey
	none := run(t, notRunSuite(t, true), cfg)
	if rep.Complete() {
		t.Errorf("a report with a scenario not run is complete: it could become a history: baseline")
	}
	if none.OK || none.Runs != 0 || !strings.Contains(none.Scenarios[1].NotRunReason, "agentctl-no-such-tool-h-report is not installed") {
		t.Errorf("nothing ran: ok %v, %d runs, offline %q; want not ok, no runs, the command named", none.OK, none.Runs, none.Scenarios[1].NotRunReason)
	}
}

// TestMergeKeepsRepeat: the merged shards of a --repeat run say so, as
// the whole run's report does (the summary and the history read it), and
// shards run with different --repeat are not one suite run.
func TestMergeKeepsRepeat(t *testing.T) {
	t.Parallel()
	shard := func(i, repeat int) *evals.Report {
		r := mkReport(mkScenario(scOpt{name: "s" + string(rune('0'+i)), index: i - 1, runs: repeat, passed: repeat}))
		r.Shards, r.Repeat, r.SuiteSHA256 = []evals.Shard{{Index: i, Count: 2}}, repeat, "abc"
		return r
	}
	m, err := evals.Merge([]*evals.Report{shard(1, 3), shard(2, 3)}, false)
	if err != nil || m.Repeat != 3 {
		t.Fatalf("merged: repeat %v, err %v; want 3", m, err)
	}
	if _, err := evals.Merge([]*evals.Report{shard(1, 3), shard(2, 5)}, false); !errors.Is(err, evals.ErrMergeMismatch) {
		t.Errorf("shards of --repeat 3 and 5 merged: %v, want ErrMergeMismatch", err)
	}
}
