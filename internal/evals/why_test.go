package evals_test

import (
	"bytes"
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
	base := mkReport(mkScenario(scOpt{name: "breaks", runs: 1, passed: 1, tokens: 10}), mkScenario(scOpt{name: "steady", index: 1, runs: 1, passed: 1}))
	cur := mkReport(mkScenario(scOpt{name: "breaks", runs: 1, passed: 0, tokens: 10}), mkScenario(scOpt{name: "steady", index: 1, runs: 1, passed: 1}))
	cur.Scenarios[0].Runs[0].Results = []evals.Result{
		{Kind: evals.KindStatus, Assertion: "status: done", OK: true, Message: "status done"},
		{Kind: evals.KindFile, Assertion: `file: README.md matches "will receive"`, Line: 14, Message: `README.md does not match "will receive"; it starts ` + hostile},
	}
	cur.Passed, cur.Failed = 1, 1
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
		for _, want := range []string{`file: README.md matches "will receive"`, "suite line 14", "does not match", "onerror=alert(1)"} {
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
		if len(r.Tables) == 0 || len(r.Tables[0].Rows) != 2 || len(r.Tables[0].Rows[0]) != len(r.Tables[0].Head) {
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
