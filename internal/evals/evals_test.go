package evals_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/evals"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
)

func suitePath(name string) string {
	return filepath.Join("..", "..", "fixtures", "suites", name+".yaml")
}

func loadSuite(t testing.TB, name string) *evals.Suite {
	t.Helper()
	s, err := evals.Load(suitePath(name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testConfig records in a fresh home, seals each session, and uses this test
// binary as the agentctl binary.
func testConfig(t testing.TB, parallel int) evals.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	return evals.Config{
		Store:    recorder.Store{Root: home},
		Parallel: parallel,
		Exe:      exe,
		AfterRun: func(id string, _ runner.Observer) {
			if _, err := history.New(home).Seal(id); err != nil {
				t.Errorf("seal %s: %v", id, err)
			}
		},
	}
}

func run(t testing.TB, s *evals.Suite, cfg evals.Config) *evals.Report {
	t.Helper()
	rep, err := evals.Run(context.Background(), s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestSmokePasses runs the realistic suite: every assertion kind passes,
// and each run is a session of the home like any other.
func TestSmokePasses(t *testing.T) {
	t.Parallel()
	s := loadSuite(t, "smoke")
	cfg := testConfig(t, 2)
	rep := run(t, s, cfg)
	for _, sc := range rep.Scenarios {
		for _, r := range sc.Runs {
			for _, f := range r.Failures() {
				t.Errorf("%s #%d (session %s): %s: %s", sc.Name, r.Repeat, r.SessionID, f.Assertion, f.Message)
			}
		}
	}
	if !rep.OK || rep.Failed != 0 || rep.Runs != 8 || rep.RunsOK != 8 {
		t.Fatalf("report: ok %v, %d failed, %d runs, %d ok; want ok, 0 failed, 8 runs, 8 ok", rep.OK, rep.Failed, rep.Runs, rep.RunsOK)
	}
	// Every kind was exercised, and passed.
	kinds := map[string]bool{}
	for _, sc := range rep.Scenarios {
		for _, r := range sc.Runs {
			for _, x := range r.Results {
				kinds[x.Kind] = true
			}
			if _, _, err := cfg.Store.Load(r.SessionID); err != nil {
				t.Errorf("session %s of %s is not in the home: %v", r.SessionID, sc.Name, err)
			}
		}
	}
	for _, k := range append(slices.Clone(evals.Kinds), evals.KindReplayMatches) {
		if !kinds[k] {
			t.Errorf("smoke.yaml does not exercise %s", k)
		}
	}
	// The reviewer recorded a session of its own, named after the scenario.
	rv := findResult(rep, "fix-typo", evals.KindReviewer)
	if rv.SessionID == "" || rv.Verdict != evals.VerdictPass {
		t.Errorf("reviewer result = %+v, want a session and verdict pass", rv)
	}
	evs, _, err := cfg.Store.Load(rv.SessionID)
	if err != nil || evs[0].Name != "fix-typo/reviewer" || !strings.Contains(string(evs[0].Spec), `"mode":"read-only"`) {
		t.Errorf("reviewer session header: name %q, err %v; want fix-typo/reviewer in read-only mode", evs[0].Name, err)
	}
	validateJUnit(t, rep)
}

func findResult(rep *evals.Report, scenario, kind string) evals.Result {
	for _, sc := range rep.Scenarios {
		if sc.Name != scenario {
			continue
		}
		for _, x := range sc.Runs[0].Results {
			if x.Kind == kind {
				return x
			}
		}
	}
	return evals.Result{}
}

// TestFailingEachKind: every scenario of failing.yaml fails, on the
// assertion kind its name says and on nothing else.
func TestFailingEachKind(t *testing.T) {
	t.Parallel()
	s := loadSuite(t, "failing")
	rep := run(t, s, testConfig(t, 4))
	if rep.OK || rep.Passed != 0 || rep.Failed != len(s.Scenarios) {
		t.Fatalf("report: ok %v, %d passed, %d failed; want every one of %d failed", rep.OK, rep.Passed, rep.Failed, len(s.Scenarios))
	}
	covered := map[string]bool{}
	for _, sc := range rep.Scenarios {
		want, _, _ := strings.Cut(sc.Name, "-")
		r := sc.Runs[0]
		if r.Error != "" {
			t.Errorf("%s: run error %s", sc.Name, r.Error)
		}
		var got []string
		for _, f := range r.Failures() {
			got = append(got, f.Kind)
			if f.Message == "" {
				t.Errorf("%s: failure of %s says nothing", sc.Name, f.Kind)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s failed on %v, want only %s", sc.Name, got, want)
		}
		covered[want] = true
	}
	for _, k := range append(slices.Clone(evals.Kinds), evals.KindReplayMatches) {
		if !covered[k] {
			t.Errorf("failing.yaml has no scenario failing %s", k)
		}
	}
	// The reviewer's three ways to fail.
	for name, want := range map[string]string{"reviewer-fail": "FAIL: ", "reviewer-needs-human": "NEEDS_HUMAN: ", "reviewer-no-verdict": "does not start with PASS:"} {
		if got := findResult(rep, name, evals.KindReviewer); !strings.Contains(got.Message, want) {
			t.Errorf("%s message = %q, want it to contain %q", name, got.Message, want)
		}
	}
	validateJUnit(t, rep)
}

// normalized drops what differs between two runs of the same suite:
// session ids, times, the home.
func normalized(t testing.TB, rep *evals.Report) string {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "home")
	delete(v, "started")
	delete(v, "ms")
	delete(v, "shards")
	for _, sc := range v["scenarios"].([]any) {
		for _, r := range sc.(map[string]any)["runs"].([]any) {
			rm := r.(map[string]any)
			delete(rm, "session_id")
			delete(rm, "ms")
			for _, x := range rm["results"].([]any) {
				xm := x.(map[string]any)
				delete(xm, "session_id")
				if s, ok := xm["message"].(string); ok {
					xm["message"] = sessionRE.ReplaceAllString(s, "SESSION")
				}
			}
		}
	}
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

var sessionRE = regexp.MustCompile(`\b[0-9a-f]{16}\b`)

// TestParallelSameAsSerial: --parallel changes the speed, not the report.
func TestParallelSameAsSerial(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"smoke", "failing"} {
		t.Run(name, func(t *testing.T) {
			s := loadSuite(t, name)
			serial := normalized(t, run(t, s, testConfig(t, 1)))
			parallel := normalized(t, run(t, s, testConfig(t, 4)))
			if serial != parallel {
				t.Errorf("parallel report differs from serial:\nserial:\n%s\nparallel:\n%s", serial, parallel)
			}
		})
	}
}

// TestShardsCoverOnce: shards 1/3, 2/3, 3/3 are disjoint and cover the
// suite; their merged reports equal the unsharded run; a missing or
// repeated shard is refused.
func TestShardsCoverOnce(t *testing.T) {
	t.Parallel()
	s := loadSuite(t, "failing")
	seen := map[int]int{}
	for i := 1; i <= 3; i++ {
		for _, idx := range evals.Select(s, evals.Shard{Index: i, Count: 3}, nil) {
			seen[idx]++
		}
	}
	for i := range s.Scenarios {
		if seen[i] != 1 {
			t.Errorf("scenario %d (%s) is in %d shards, want 1", i, s.Scenarios[i].Name, seen[i])
		}
	}
	if len(seen) != len(s.Scenarios) {
		t.Errorf("shards hold %d scenarios, the suite %d", len(seen), len(s.Scenarios))
	}

	full := run(t, s, testConfig(t, 4))
	var parts []*evals.Report
	for i := 1; i <= 3; i++ {
		cfg := testConfig(t, 4)
		cfg.Shard = evals.Shard{Index: i, Count: 3}
		parts = append(parts, roundTrip(t, run(t, s, cfg)))
	}
	merged, err := evals.Merge([]*evals.Report{parts[2], parts[0], parts[1]}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := normalized(t, merged), normalized(t, full); got != want {
		t.Errorf("merged shards differ from the full run:\nmerged:\n%s\nfull:\n%s", got, want)
	}
	validateJUnit(t, merged)
	if _, err := evals.Merge(parts[:2], false); !errors.Is(err, evals.ErrMergeIncomplete) {
		t.Errorf("merge of shards 1 and 2 of 3: err %v, want ErrMergeIncomplete", err)
	}
	if m, err := evals.Merge(parts[:2], true); err != nil || len(m.Shards) != 2 {
		t.Errorf("merge --partial: err %v, shards %v; want shards 1/3, 2/3", err, m.Shards)
	}
	if _, err := evals.Merge([]*evals.Report{parts[0], parts[0], parts[1], parts[2]}, false); !errors.Is(err, evals.ErrMergeOverlap) {
		t.Errorf("merge with shard 1 twice: err %v, want ErrMergeOverlap", err)
	}
	other := *parts[1]
	other.SuiteSHA256 = "0000"
	if _, err := evals.Merge([]*evals.Report{parts[0], &other, parts[2]}, false); !errors.Is(err, evals.ErrMergeMismatch) {
		t.Errorf("merge of another suite's shard: err %v, want ErrMergeMismatch", err)
	}
}

// roundTrip writes and reads the report as merge's input would be.
func roundTrip(t testing.TB, rep *evals.Report) *evals.Report {
	t.Helper()
	p := filepath.Join(t.TempDir(), "report.json")
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := evals.ReadReport(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// validateJUnit checks the JUnit XML of rep against both schemas in
// testdata/junit with xmllint (skipped, saying so, where it is missing)
// and, always, its structure: one testcase per run, failures where the
// scenario missed its threshold, the session and replay command named.
func validateJUnit(t *testing.T, rep *evals.Report) {
	t.Helper()
	var buf bytes.Buffer
	if err := evals.WriteJUnit(&buf, rep, nil); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if xmllint, err := exec.LookPath("xmllint"); err != nil {
		t.Logf("xmllint not found (apt-get install libxml2-utils): schema validation skipped, structure checked")
	} else {
		for _, xsd := range []string{"ant-junit.xsd", "jenkins-junit-10.xsd"} {
			out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit", xsd), p).CombinedOutput()
			if err != nil {
				t.Errorf("JUnit output does not validate against %s: %v\n%s", xsd, err, out)
			}
		}
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Errors   int    `xml:"errors,attr"`
			Cases    []struct {
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
		t.Fatalf("JUnit output does not parse: %v", err)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Name != rep.Suite {
		t.Fatalf("JUnit has %d testsuites, want 1 named %s", len(doc.Suites), rep.Suite)
	}
	ts := doc.Suites[0]
	if ts.Tests != rep.Runs || len(ts.Cases) != rep.Runs {
		t.Errorf("JUnit tests=%d with %d testcases, want %d (scenario x repeat)", ts.Tests, len(ts.Cases), rep.Runs)
	}
	i := 0
	failures := 0
	for _, sc := range rep.Scenarios {
		for _, r := range sc.Runs {
			c := ts.Cases[i]
			i++
			if want := sc.Name + " #" + strconv.Itoa(r.Repeat); c.Name != want {
				t.Errorf("testcase %d is %q, want %q", i, c.Name, want)
			}
			if (c.Failure != nil) != (!r.OK && !sc.OK) {
				t.Errorf("testcase %s: failure %v, want %v", c.Name, c.Failure != nil, !r.OK && !sc.OK)
			}
			if c.Failure == nil {
				continue
			}
			failures++
			first := r.Failures()[0]
			for _, want := range []string{first.Assertion, r.SessionID, "replay run " + r.SessionID} {
				if !strings.Contains(c.Failure.Message, want) {
					t.Errorf("testcase %s failure message %q does not name %q", c.Name, c.Failure.Message, want)
				}
			}
			if c.Failure.Type != first.Kind {
				t.Errorf("testcase %s failure type %q, want %q", c.Name, c.Failure.Type, first.Kind)
			}
		}
	}
	if ts.Failures != failures {
		t.Errorf("testsuite failures=%d, want %d", ts.Failures, failures)
	}
}
