package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
)

// fixtureHome holds the recorded sessions replay is tested against (and
// the README and script tests use). `go test ./internal/replay/check -run TestFixtures
// -update` records them again; fixtures/replay/README.md says how each is
// made.
var fixtureHome = testenv.Fixture("replay", "home")

// Fixture session ids.
const (
	fxClean       = "7e90000000000001" // fix-typo, recorded today
	fxOldToolName = "7e90000000000002" // its digests under the old tool_name rule
	fxOutputCap   = "7e90000000000003" // its digests under a rule no Rules entry knows
	fxCompacting  = "7e90000000000004" // long-refactor: three compactions
	fxAnchorsOK   = "7e90000000000006" // anchors-ok.jsonl
	fxDroppedGoal = "7e90000000000007" // anchors-summary-dropped-goal.jsonl
)

// redigest returns a copy of evs whose turn model_calls carry the digest
// rewrite(projection) would have had: a log recorded by a harness with a
// different projection rule. Compaction calls keep theirs.
func redigest(evs []session.Event, rewrite func([]session.Message) []session.Message) []session.Event {
	out := append([]session.Event(nil), evs...)
	tools, _ := HeaderTools(evs[0])
	for i, e := range out {
		if e.Kind != session.KindModelCall || e.RequestDigest == "" || isCompactionCall(e) {
			continue
		}
		prefix := evs[:i]
		if i > 0 && evs[i-1].Kind == session.KindAssistantMessage {
			prefix = evs[:i-1]
		}
		out[i].RequestDigest = session.Digest(rewrite(session.Project(prefix, evs[0].System)), tools)
	}
	return out
}

// ruleNamed returns the rewrite of Rules[name].
func ruleNamed(t testing.TB, name string) func([]session.Message) []session.Message {
	for _, r := range Rules {
		if r.Name == name {
			return func(m []session.Message) []session.Message { out, _ := r.Apply(m, nil); return out }
		}
	}
	t.Fatalf("no rule %q", name)
	return nil
}

// capOutputs is an "old" rule no entry of Rules knows: tool replies were
// cut to 40 bytes.
func capOutputs(msgs []session.Message) []session.Message {
	out := append([]session.Message(nil), msgs...)
	for i := range out {
		if out[i].Role == session.RoleTool && len(out[i].Content) > 40 {
			out[i].Content = out[i].Content[:40]
		}
	}
	return out
}

// writeLog records evs as session id in home (header first, seqs dense).
func writeLog(t testing.TB, home, id string, evs []session.Event) {
	t.Helper()
	st := recorder.Store{Root: home}
	_ = os.RemoveAll(st.SessionDir(id))
	hdr := evs[0]
	hdr.SessionID = id
	if _, err := st.WriteSession(append([]session.Event{hdr}, evs[1:]...), recorder.Options{}); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(st.SessionDir(id), recorder.LeaseFile))
}

// regenerate records the fixture sessions again (with -update).
func regenerate(t *testing.T) {
	tmp := t.TempDir()
	clean := replaytest.Record(t, tmp, "fix-typo", fxClean)
	writeLog(t, fixtureHome, fxClean, clean)
	writeLog(t, fixtureHome, fxOldToolName, redigest(clean, ruleNamed(t, "tool_name")))
	writeLog(t, fixtureHome, fxOutputCap, redigest(clean, capOutputs))
	writeLog(t, fixtureHome, fxCompacting, replaytest.Record(t, tmp, "long-refactor", fxCompacting))
	writeLog(t, fixtureHome, fxAnchorsOK, testenv.ReadJSONL(t, testenv.Fixture("replay", "anchors-ok.jsonl")))
	writeLog(t, fixtureHome, fxDroppedGoal, testenv.ReadJSONL(t, testenv.Fixture("replay", "anchors-summary-dropped-goal.jsonl")))
}

func loadFixture(t testing.TB, id string) []session.Event {
	t.Helper()
	evs, _, err := recorder.Store{Root: fixtureHome}.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/replay/check -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestFixtures verifies the committed recordings with today's code and
// compares the reports with the golden files: yesterday's sessions are the
// test cases of today's projection.
func TestFixtures(t *testing.T) {
	if *update {
		regenerate(t)
	}
	tests := []struct {
		id, name string
		status   string
		rule     string
	}{
		{fxClean, "clean", StatusOK, ""},
		{fxOldToolName, "old-tool-name-rule", StatusDiverged, "tool_name"},
		{fxOutputCap, "unknown-rule", StatusDiverged, ""},
		{fxCompacting, "compacting", StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Verify(tt.id, loadFixture(t, tt.id), VerifyOptions{})
			if rep.Status != tt.status {
				t.Fatalf("Verify(%s).Status = %s, want %s\n%s", tt.id, rep.Status, tt.status, rep.Text())
			}
			if tt.status == StatusDiverged && rep.Divergence.Rule != tt.rule {
				t.Errorf("Divergence.Rule = %q, want %q", rep.Divergence.Rule, tt.rule)
			}
			golden(t, filepath.Join("verify", tt.name+".golden"), rep.Text())
			js, _ := json.MarshalIndent(rep, "", "  ")
			golden(t, filepath.Join("verify", tt.name+".golden.json"), string(js)+"\n")
		})
	}
}

// TestVerifyChecksCompactionCalls: a compaction call's request digest is
// recomputed from the originals; a summary made from different events (a
// changed request) is a divergence at that call.
func TestVerifyChecksCompactionCalls(t *testing.T) {
	evs := loadFixture(t, fxCompacting)
	rep := Verify(fxCompacting, evs, VerifyOptions{})
	if rep.Status != StatusOK || rep.Skipped != 0 || rep.Checked != rep.ModelCalls {
		t.Fatalf("Verify = %s, %d checked, %d skipped of %d calls", rep.Status, rep.Checked, rep.Skipped, rep.ModelCalls)
	}
	for i, e := range evs {
		if e.Kind == session.KindModelCall && isCompactionCall(e) {
			bad := append([]session.Event(nil), evs...)
			bad[i].RequestDigest = "sha256:" + strings.Repeat("0", 64)
			rep := Verify(fxCompacting, bad, VerifyOptions{})
			if rep.Status != StatusDiverged || rep.Divergence == nil || rep.Divergence.Seq != e.Seq {
				t.Fatalf("a wrong compaction digest at seq %d: %s %+v", e.Seq, rep.Status, rep.Divergence)
			}
			return
		}
	}
	t.Fatal("the fixture has no compaction call")
}
