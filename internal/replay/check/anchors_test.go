package check

import (
	"strings"
	"testing"
)

// TestAnchors checks the compaction fixtures: a summary that dropped the
// goal stated once (in the second user message) and was made from the
// previous summary fails; its twin passes; real runner compactions pass.
func TestAnchors(t *testing.T) {
	goal := "never drop the users table"
	ok := Anchors(fxAnchorsOK, loadFixture(t, fxAnchorsOK), []string{goal})
	if !ok.OK || len(ok.Compactions) != 2 {
		t.Fatalf("anchors-ok = %+v, want 2 compactions, ok", ok)
	}
	bad := Anchors(fxDroppedGoal, loadFixture(t, fxDroppedGoal), []string{goal})
	if bad.OK || len(bad.Compactions) != 2 || !bad.Compactions[0].OK {
		t.Fatalf("dropped-goal = %+v, want the second compaction to fail", bad)
	}
	var codes []string
	for _, f := range bad.Compactions[1].Findings {
		codes = append(codes, f.Code)
	}
	if got, want := strings.Join(codes, ","), CodeNeedleLost+","+CodeSummaryOfSummary; got != want {
		t.Errorf("findings = %s, want %s", got, want)
	}
	long := Anchors(fxCompacting, loadFixture(t, fxCompacting), []string{"never edit anything under vendor/"})
	if !long.OK || len(long.Compactions) < 2 {
		t.Fatalf("long-refactor = %+v, want ok over several compactions", long)
	}
	for _, c := range long.Compactions {
		if c.Found["never edit anything under vendor/"] != "first user message" {
			t.Errorf("compaction seq %d: constraint found in %q, want the pinned first user message", c.Seq, c.Found["never edit anything under vendor/"])
		}
	}
}
