package evals_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/evals"
)

// npmMarkdownEnv names the npm prefix .ci/run installs markdown-it into.
// Unset, the summary tests check the Markdown's text only; set, they
// parse it with markdown-it and must pass.
const npmMarkdownEnv = "AGENTCTL_NPM_MD"

func gateSuite(t testing.TB, name string) *evals.Suite {
	t.Helper()
	s, err := evals.Load(filepath.Join("..", "..", "fixtures", "suites", "gate", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGateScripted runs the gate fixtures for real: "the change" breaks
// one scenario, triples another's tokens, drops a third and fails a
// repeated one 5 of 5; against main's report each gets its verdict, and
// main against itself is unchanged throughout. A merged report of the
// change's shards gates as the whole, and one shard gates on its part.
func TestGateScripted(t *testing.T) {
	t.Parallel()
	main := roundTrip(t, run(t, gateSuite(t, "main"), testConfig(t, 2)))
	change := roundTrip(t, run(t, gateSuite(t, "change"), testConfig(t, 2)))
	c, err := evals.Compare(main, change, evals.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]evals.GateVerdict{"steady": evals.Unchanged, "breaks": evals.Regressed, "costly": evals.Regressed,
		"repeated": evals.Regressed, "dropped": evals.Missing}
	if got := verdicts(c); !maps.Equal(got, want) {
		t.Errorf("verdicts %v, want %v", got, want)
	}
	if c.OK || c.Regressed != 3 || c.Missing != 1 || c.Unchanged != 1 {
		t.Errorf("comparison ok %v, %s; want not ok, 3 regressed, 1 missing, 1 unchanged", c.OK, evals.CountsLine(c))
	}
	costly := verdictOf(t, c, "costly")
	if r := strings.Join(costly.Reasons, ";"); !strings.Contains(r, "tokens 330 -> 990 (+200%, beyond tolerance 10%)") {
		t.Errorf("costly reasons %q, want the 3x tokens named", r)
	}
	if d := verdictOf(t, c, "repeated"); d.Test != "fisher" || d.PWorse == nil || *d.PWorse > 0.005 || len(d.ReplaySessions()) != 5 {
		t.Errorf("repeated: test %s, p %v, %d replay sessions; want fisher, p 1/252, 5", d.Test, d.PWorse, len(d.ReplaySessions()))
	}
	if d := verdictOf(t, c, "breaks"); d.Test != "outcome" || len(d.ReplaySessions()) != 1 {
		t.Errorf("breaks: test %s, %d replay sessions; want outcome, 1", d.Test, len(d.ReplaySessions()))
	}
	allowed, _ := evals.Compare(main, change, evals.CompareOptions{AllowMissing: true})
	if allowed.OK || allowed.Missing != 1 {
		t.Errorf("--allow-missing: ok %v with %d missing; want still not ok (3 regressed), missing listed", allowed.OK, allowed.Missing)
	}
	validateJUnitCompared(t, change, c)
	checkSummary(t, change, c)

	// Against itself (another run of the same suite): nothing changes.
	// Wall time is not judged: a loaded runner made one run's a second
	// slower (CI of 2026-12-06, "1 improved"), a timing, not the gate.
	again := roundTrip(t, run(t, gateSuite(t, "main"), testConfig(t, 2)))
	noWall := evals.DefaultTolerance()
	delete(noWall, evals.MetricWall)
	same, err := evals.Compare(main, again, evals.CompareOptions{Tolerance: noWall})
	if err != nil {
		t.Fatal(err)
	}
	if !same.OK || same.Unchanged != len(main.Scenarios) {
		t.Errorf("main against main: ok %v, %s; want ok, all unchanged", same.OK, evals.CountsLine(same))
	}
	validateJUnitCompared(t, again, same)

	// Shards: the merged report gates as the whole; shard 2/2 alone
	// (indexes 1 and 3 of change.yaml: breaks, repeated) on its part.
	var parts []*evals.Report
	for i := 1; i <= 2; i++ {
		cfg := testConfig(t, 2)
		cfg.Shard = evals.Shard{Index: i, Count: 2}
		parts = append(parts, roundTrip(t, run(t, gateSuite(t, "change"), cfg)))
	}
	merged, err := evals.Merge(parts, false)
	if err != nil {
		t.Fatal(err)
	}
	mc, _ := evals.Compare(main, merged, evals.CompareOptions{})
	if got := verdicts(mc); !maps.Equal(got, want) {
		t.Errorf("merged shards: verdicts %v, want %v", got, want)
	}
	sc, _ := evals.Compare(main, parts[1], evals.CompareOptions{})
	// Shard 2/2 holds main's indexes 1 and 3 too: breaks and dropped.
	wantShard := map[string]evals.GateVerdict{"breaks": evals.Regressed, "repeated": evals.Regressed, "dropped": evals.Missing}
	if got := verdicts(sc); !maps.Equal(got, wantShard) {
		t.Errorf("shard 2/2: verdicts %v, want %v", got, wantShard)
	}
}

func verdicts(c *evals.Comparison) map[string]evals.GateVerdict {
	m := map[string]evals.GateVerdict{}
	for _, d := range c.Scenarios {
		m[d.Name] = d.Verdict
	}
	return m
}

func regexpMust(t testing.TB, re string) *regexp.Regexp {
	t.Helper()
	r, err := regexp.Compile(re)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRepeatOverride: Config.Repeat runs each scenario that many times,
// the threshold's share applies to it, and the report has the trials.
func TestRepeatOverride(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, 2)
	cfg.Repeat = 3
	cfg.Filter = regexpMust(t, "^(steady|repeated)$")
	rep := run(t, gateSuite(t, "main"), cfg)
	if rep.Repeat != 3 || rep.Runs != 6 {
		t.Fatalf("report repeat %d, %d runs; want 3, 6", rep.Repeat, rep.Runs)
	}
	for _, sc := range rep.Scenarios {
		if sc.Repeat != 3 || sc.Need != 3 || len(sc.Runs) != 3 || len(sc.Trials) != 3 || sc.Trials[2].PassHatK != 1 {
			t.Errorf("%s: repeat %d need %d runs %d trials %+v; want 3, 3, 3 and pass^3 = 1", sc.Name, sc.Repeat, sc.Need, len(sc.Runs), sc.Trials)
		}
		for _, r := range sc.Runs {
			if r.Turns != 3 {
				t.Errorf("%s #%d: %d turns, want the script's 3", sc.Name, r.Repeat, r.Turns)
			}
		}
	}
}

// validateJUnitCompared checks the JUnit of a compared report against
// both schemas, and that each scenario has its "vs baseline" testcase,
// failing exactly when it regressed or is missing, with the numbers, and
// the verdict as a suite property.
func validateJUnitCompared(t *testing.T, rep *evals.Report, c *evals.Comparison) {
	t.Helper()
	var buf bytes.Buffer
	if err := evals.WriteJUnit(&buf, rep, c); err != nil {
		t.Fatal(err)
	}
	schemaCheck(t, buf.Bytes())
	var doc struct {
		Suites []struct {
			Tests      int `xml:"tests,attr"`
			Failures   int `xml:"failures,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	ts := doc.Suites[0]
	if ts.Tests != rep.Runs+len(c.Scenarios) {
		t.Errorf("tests=%d, want %d runs + %d comparisons", ts.Tests, rep.Runs, len(c.Scenarios))
	}
	props := map[string]string{}
	for _, p := range ts.Properties {
		props[p.Name] = p.Value
	}
	for _, d := range c.Scenarios {
		if props["verdict."+d.Name] != string(d.Verdict) {
			t.Errorf("property verdict.%s = %q, want %s", d.Name, props["verdict."+d.Name], d.Verdict)
		}
		i := slices.IndexFunc(ts.Cases, func(x struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		}) bool {
			return x.Name == d.Name+" vs baseline"
		})
		if i < 0 {
			t.Errorf("no testcase %q", d.Name+" vs baseline")
			continue
		}
		f := ts.Cases[i].Failure
		fails := d.Verdict == evals.Regressed || (d.Verdict == evals.Missing && !c.AllowMissing)
		if (f != nil) != fails {
			t.Errorf("testcase %s vs baseline: failure %v, want %v", d.Name, f != nil, fails)
			continue
		}
		if f == nil {
			continue
		}
		if f.Type != string(d.Verdict) || !strings.Contains(f.Message, d.Reasons[0]) {
			t.Errorf("testcase %s vs baseline failure type %q message %q; want %s with %q", d.Name, f.Type, f.Message, d.Verdict, d.Reasons[0])
		}
		for _, id := range d.ReplaySessions() {
			if !strings.Contains(f.Text, "replay run "+id) {
				t.Errorf("testcase %s vs baseline failure text does not name replay run %s", d.Name, id)
			}
		}
	}
}

func schemaCheck(t *testing.T, xmlDoc []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Logf("xmllint not found (apt-get install libxml2-utils): schema validation skipped")
		return
	}
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(p, xmlDoc, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, xsd := range []string{"ant-junit.xsd", "jenkins-junit-10.xsd"} {
		if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit", xsd), p).CombinedOutput(); err != nil {
			t.Errorf("JUnit output does not validate against %s: %v\n%s", xsd, err, out)
		}
	}
}

// rendered is what testdata/markdown/parse.cjs finds in a document.
type rendered struct {
	Tables []struct {
		Head []string   `json:"head"`
		Rows [][]string `json:"rows"`
	} `json:"tables"`
	Headings []struct {
		Level, Text string
	} `json:"headings"`
	Code []struct {
		Info    string `json:"info"`
		Content string `json:"content"`
	} `json:"code"`
	HTML string `json:"html"`
}

// renderMarkdown parses md with markdown-it (nil when AGENTCTL_NPM_MD is
// unset: the caller checks the text only).
func renderMarkdown(t *testing.T, md []byte) *rendered {
	t.Helper()
	prefix := os.Getenv(npmMarkdownEnv)
	if prefix == "" {
		t.Logf("%s is unset (.ci/run installs markdown-it there): the Markdown is checked as text, not rendered", npmMarkdownEnv)
		return nil
	}
	cmd := exec.Command("node", filepath.Join("testdata", "markdown", "parse.cjs"), prefix)
	cmd.Stdin = bytes.NewReader(md)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("markdown-it (%s=%s) failed: %v %s", npmMarkdownEnv, prefix, err, stderrOf(err))
	}
	var r rendered
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("markdown-it output: %v", err)
	}
	return &r
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// checkSummary renders the summary and checks its comparison table: one
// row per scenario, in order, with the verdict, the pass rates and the
// tokens; the replay lines of every regressed run in code blocks.
func checkSummary(t *testing.T, rep *evals.Report, c *evals.Comparison) {
	t.Helper()
	var buf bytes.Buffer
	if err := evals.WriteSummary(&buf, rep, c); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, d := range c.Scenarios {
		for _, id := range d.ReplaySessions() {
			if d.Verdict == evals.Regressed && !strings.Contains(md, "replay run "+id) {
				t.Errorf("summary has no replay line for %s's run %s", d.Name, id)
			}
		}
	}
	r := renderMarkdown(t, buf.Bytes())
	if r == nil {
		return
	}
	if len(r.Tables) == 0 {
		t.Fatalf("markdown-it finds no table in the summary:\n%s", md)
	}
	tab := r.Tables[0]
	if want := []string{"Scenario", "Verdict", "Pass rate", "p (worse)", "Cost", "Tokens", "Turns", "Wall", "Tool calls"}; !slices.Equal(tab.Head, want) {
		t.Errorf("table header %q, want %q", tab.Head, want)
	}
	if len(tab.Rows) != len(c.Scenarios) {
		t.Fatalf("table has %d rows, want %d:\n%s", len(tab.Rows), len(c.Scenarios), md)
	}
	for i, d := range c.Scenarios {
		row := tab.Rows[i]
		if len(row) != len(tab.Head) || row[0] != d.Name || row[1] != string(d.Verdict) {
			t.Errorf("row %d = %q, want %d cells starting %s, %s", i, row, len(tab.Head), d.Name, d.Verdict)
		}
	}
	var code strings.Builder
	for _, b := range r.Code {
		code.WriteString(b.Content)
	}
	for _, d := range c.Scenarios {
		if d.Verdict != evals.Regressed {
			continue
		}
		for _, id := range d.ReplaySessions() {
			if !strings.Contains(code.String(), " replay run "+id+"\n") {
				t.Errorf("no code block holds agentctl ... replay run %s (%s)", id, d.Name)
			}
		}
	}
	if !c.OK && (len(r.Headings) == 0 || !strings.Contains(r.Headings[0].Text, "regressed against the baseline")) {
		t.Errorf("headings %+v, want the first to say the gate failed", r.Headings)
	}
}

// TestSummaryEscapes: names with Markdown in them stay one cell with
// their literal text, and the plain (no baseline) summary renders too.
func TestSummaryEscapes(t *testing.T) {
	t.Parallel()
	odd := "a|b *c* _d_ <e> [f](g) `h` #i \\j"
	base := mkReport(mkScenario(scOpt{name: odd, runs: 5, passed: 5, tokens: 100}), mkScenario(scOpt{name: "plain", index: 1, runs: 1, passed: 1}))
	cur := mkReport(mkScenario(scOpt{name: odd, runs: 5, passed: 0, tokens: 100}), mkScenario(scOpt{name: "plain", index: 1, runs: 1, passed: 1}))
	cur.Scenarios[0].Trials = evals.Trials(5, 0)
	c, err := evals.Compare(base, cur, evals.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmp := range []*evals.Comparison{c, nil} {
		var buf bytes.Buffer
		if err := evals.WriteSummary(&buf, cur, cmp); err != nil {
			t.Fatal(err)
		}
		r := renderMarkdown(t, buf.Bytes())
		if r == nil {
			if !strings.Contains(buf.String(), `a\|b \*c\* \_d\_ \<e\> \[f\](g) \`+"`h\\` \\#i \\\\j") {
				t.Errorf("summary does not escape the name:\n%s", buf.String())
			}
			continue
		}
		if len(r.Tables) < 2 {
			t.Fatalf("summary (comparison %v) has %d tables, want the scenarios and the trials:\n%s", cmp != nil, len(r.Tables), buf.String())
		}
		if got := r.Tables[0].Rows[0][0]; got != odd {
			t.Errorf("first cell %q, want the literal name %q", got, odd)
		}
		if strings.Contains(r.HTML, "<e>") || strings.Contains(r.HTML, "<em>") || strings.Contains(r.HTML, "<a ") {
			t.Errorf("the name became markup:\n%s", r.HTML)
		}
		if got := r.Tables[1].Rows[0]; got[0] != odd || got[3] != "0.00, 0.00, 0.00, 0.00, 0.00" {
			t.Errorf("trials row %q, want %s with pass@k all 0", got, odd)
		}
	}
}
