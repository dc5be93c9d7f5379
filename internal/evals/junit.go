package evals

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
)

// JUnit XML. The shape satisfies both widely used schemas, checked by the
// tests with xmllint: the Apache Ant one (windyroad/JUnit-Schema, the
// strict one: properties, system-out and system-err on every testsuite, at
// most one failure|error|skipped per testcase, a timestamp without zone)
// and Jenkins' (jenkinsci/xunit-plugin junit-10.xsd). GitHub Actions
// reporters, GitLab and Jenkins read it.
//
// One <testsuites> holding one <testsuite> named after the suite; one
// <testcase> per scenario x repeat, classname "<suite>.<scenario>", name
// "<scenario> #<repeat>". A run that failed an assertion in a scenario that
// missed its threshold has a <failure> whose message names the first
// failed assertion and the session, and whose text lists every failed
// assertion with its suite line and how to look at the session and replay
// it. A run that could not be made has an <error> instead. A scenario
// not run on this machine (ScenarioResult.NotRunReason) is one testcase
// "<scenario>" with a <skipped> that says why. A failed run of
// a scenario that still met its threshold has no <failure> (the build does
// not fail for it); the suite's <system-out> lists it as tolerated.
//
// Against a baseline (a Comparison), each compared scenario also has a
// testcase "<scenario> vs baseline" (classname "<suite>.<scenario>"): a
// regression, or a missing scenario the gate does not allow, is a
// <failure> of type "regressed" or "missing" whose message gives the
// numbers (pass rates, the Fisher p-value, each metric beyond its
// tolerance) and whose text lists the failed runs' replay commands. The
// verdict itself is the suite property "verdict.<scenario>" (and
// "baseline.*" name the baseline): neither schema allows properties on a
// testcase, so they sit on the testsuite, the one place both accept.

// junitSuites carries no attributes: the Ant schema allows none there
// (the totals are on the testsuite).
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Package    string          `xml:"package,attr"`
	ID         int             `xml:"id,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// HomeFlag is the --home flag a hint needs to reach the session.
func HomeFlag(home string) string {
	if home == "" || home == ".agentctl" {
		return ""
	}
	return " --home " + home
}

// Hints are the commands that show and replay a session of the report.
func Hints(home, id string) string {
	h := HomeFlag(home)
	return fmt.Sprintf("timeline: agentctl%s show %s\nreplay:   agentctl%s replay run %s\nquery:    agentctl%s query \"SELECT seq, kind, tool, status FROM events WHERE session_id = '%s' ORDER BY seq\"",
		h, id, h, id, h, id)
}

// WriteJUnit writes the report as JUnit XML; cmp, if not nil, is the
// report's comparison with a baseline.
func WriteJUnit(w io.Writer, rep *Report, cmp *Comparison) error {
	host, err := os.Hostname()
	if err != nil || strings.TrimSpace(host) == "" {
		host = "localhost"
	}
	ts := junitSuite{Name: rep.Suite, Package: "agentctl.eval", Timestamp: rep.Started.UTC().Format("2006-01-02T15:04:05"),
		Hostname: host, Time: seconds(rep.Millis)}
	ts.Properties = []junitProperty{
		{"suite_path", rep.SuitePath}, {"suite_sha256", rep.SuiteSHA256}, {"home", rep.Home}, {"shard", shardsString(rep.Shards)},
	}
	if rep.Filter != "" {
		ts.Properties = append(ts.Properties, junitProperty{"filter", rep.Filter})
	}
	var out, tolerated strings.Builder
	for _, sc := range rep.Scenarios {
		if sc.NotRunReason != "" {
			fmt.Fprintf(&out, "%s: NOT RUN: %s\n", sc.Name, sc.NotRunReason)
			ts.Cases = append(ts.Cases, junitCase{Name: sc.Name, Classname: rep.Suite + "." + sc.Name, Time: "0.000",
				Skipped: &junitSkipped{Message: "not run: " + sc.NotRunReason}})
			ts.Tests++
			ts.Skipped++
			continue
		}
		fmt.Fprintf(&out, "%s: %d/%d runs passed (need %d) %s\n", sc.Name, sc.Passed, sc.Repeat, sc.Need, okWord(sc.OK))
		for _, r := range sc.Runs {
			tc := junitCase{Name: fmt.Sprintf("%s #%d", sc.Name, r.Repeat), Classname: rep.Suite + "." + sc.Name, Time: seconds(r.Millis)}
			ts.Tests++
			fmt.Fprintf(&out, "  #%d session %s status %s %s\n", r.Repeat, orNone(r.SessionID), orNone(r.Status), okWord(r.OK))
			if !r.OK && sc.OK {
				fmt.Fprintf(&tolerated, "%s #%d failed (%s), tolerated: %d of %d runs passed, threshold %g\n",
					sc.Name, r.Repeat, firstFailure(r).Assertion, sc.Passed, sc.Repeat, sc.Threshold)
			}
			if !r.OK && !sc.OK {
				p := &junitProblem{Text: problemText(rep, sc, r)}
				if r.Error != "" {
					p.Type, p.Message = "run_error", fmt.Sprintf("%s #%d: %s (session %s)", sc.Name, r.Repeat, clip.Bytes(r.Error, 200), orNone(r.SessionID))
					tc.Error = p
					ts.Errors++
				} else {
					ff := firstFailure(r)
					p.Type = ff.Kind
					p.Message = fmt.Sprintf("%s failed: %s (session %s; replay: agentctl%s replay run %s)", ff.Assertion, clip.Bytes(ff.Message, 200),
						r.SessionID, HomeFlag(rep.Home), r.SessionID)
					tc.Failure = p
					ts.Failures++
				}
			}
			ts.Cases = append(ts.Cases, tc)
		}
	}
	if tolerated.Len() > 0 {
		out.WriteString("\ntolerated failures (scenario met its threshold):\n" + tolerated.String())
	}
	if cmp != nil {
		junitCompared(&ts, rep, cmp, &out)
	}
	ts.SystemOut = out.String()
	doc := junitSuites{Suites: []junitSuite{ts}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

// junitCompared adds the comparison's properties and testcases.
func junitCompared(ts *junitSuite, rep *Report, cmp *Comparison, out *strings.Builder) {
	b := cmp.Baseline
	ts.Properties = append(ts.Properties, junitProperty{"baseline.suite_path", b.SuitePath}, junitProperty{"baseline.started", b.Started.UTC().Format(time.RFC3339)},
		junitProperty{"baseline.branch", b.Branch}, junitProperty{"baseline.commit", b.Commit},
		junitProperty{"baseline.alpha", strconv.FormatFloat(cmp.Alpha, 'g', -1, 64)}, junitProperty{"baseline.tolerance", cmp.Tolerance.String()},
		junitProperty{"baseline.ok", strconv.FormatBool(cmp.OK)})
	fmt.Fprintf(out, "\nagainst the baseline %s: %s\n", b.SuitePath, CountsLine(cmp))
	for _, d := range cmp.Scenarios {
		ts.Properties = append(ts.Properties, junitProperty{"verdict." + d.Name, string(d.Verdict)})
		fmt.Fprintf(out, "%s: %s: %s\n", d.Name, d.Verdict, strings.Join(d.Reasons, "; "))
		tc := junitCase{Name: d.Name + " vs baseline", Classname: rep.Suite + "." + d.Name, Time: "0.000"}
		ts.Tests++
		if d.Verdict == Regressed || (d.Verdict == Missing && !cmp.AllowMissing) {
			var text strings.Builder
			fmt.Fprintf(&text, "%s %s against the baseline %s (started %s)\n", d.Name, d.Verdict, b.SuitePath, b.Started.UTC().Format(time.RFC3339))
			for _, r := range d.Reasons {
				fmt.Fprintf(&text, "- %s\n", r)
			}
			for _, id := range d.ReplaySessions() {
				fmt.Fprintf(&text, "agentctl%s replay run %s\n", HomeFlag(rep.Home), id)
			}
			tc.Failure = &junitProblem{Type: string(d.Verdict), Message: clip.Bytes(d.Name+" "+string(d.Verdict)+": "+strings.Join(d.Reasons, "; "), 400), Text: text.String()}
			ts.Failures++
		}
		ts.Cases = append(ts.Cases, tc)
	}
}

func problemText(rep *Report, sc ScenarioResult, r RunResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s (suite line %d), run %d of %d; %d of %d runs passed, %d needed\n", sc.Name, sc.Line, r.Repeat, sc.Repeat, sc.Passed, sc.Repeat, sc.Need)
	if r.SessionID != "" {
		fmt.Fprintf(&b, "session %s ended %s", r.SessionID, r.Status)
		if r.Reason != "" {
			fmt.Fprintf(&b, " (%s)", r.Reason)
		}
		b.WriteString("\n")
	}
	for _, f := range r.Failures() {
		fmt.Fprintf(&b, "FAILED %s", f.Assertion)
		if f.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", f.Line)
		}
		fmt.Fprintf(&b, ": %s\n", f.Message)
		if f.SessionID != "" {
			fmt.Fprintf(&b, "  reviewer session %s\n", f.SessionID)
		}
	}
	if r.SessionID != "" {
		b.WriteString(Hints(rep.Home, r.SessionID) + "\n")
	}
	return b.String()
}

func firstFailure(r RunResult) Result {
	if f := r.Failures(); len(f) > 0 {
		return f[0]
	}
	return Result{Kind: KindRun, Assertion: "run", Message: r.Error}
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func shardsString(sh []Shard) string {
	if len(sh) == 0 {
		return "all"
	}
	var p []string
	for _, s := range sh {
		p = append(p, s.String())
	}
	return strings.Join(p, ",")
}
