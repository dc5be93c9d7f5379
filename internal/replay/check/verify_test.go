package check

import (
	"testing"

	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/session"
)

// TestVerifyRecordedRuns records every fixture agent with today's runner
// and verifies it: today's projection must reproduce every digest.
func TestVerifyRecordedRuns(t *testing.T) {
	home := t.TempDir()
	for i, agent := range []string{"fix-typo", "long-refactor", "retry-eval", "review-readonly", "loop-forever"} {
		t.Run(agent, func(t *testing.T) {
			id := "00000000000000a" + string(rune('0'+i))
			evs := replaytest.Record(t, home, agent, id)
			rep := Verify(id, evs, VerifyOptions{})
			if rep.Status != StatusOK || rep.Checked == 0 {
				t.Fatalf("Verify = %+v, want ok with calls checked", rep)
			}
			if rep.Divergence != nil {
				t.Fatalf("divergence: %s", rep.Divergence.Text())
			}
		})
	}
}

// TestIncrementalDigestMatches checks the digester against session.Digest
// over the batch projection at every event boundary of real recordings.
func TestIncrementalDigestMatches(t *testing.T) {
	home := t.TempDir()
	for i, agent := range []string{"long-refactor", "fix-typo"} {
		evs := replaytest.Record(t, home, agent, "00000000000000b"+string(rune('0'+i)))
		d := session.NewDigester()
		p := session.NewProjector(evs[0].System)
		tools := []string{"a", "b"}
		for k, e := range evs {
			p.Add(e)
			got := d.Digest(p.Messages(), tools)
			want := session.Digest(session.Project(evs[:k+1], evs[0].System), tools)
			if got != want {
				t.Fatalf("%s: digest after seq %d = %s, want %s", agent, e.Seq, got, want)
			}
		}
	}
}
