package replay

import (
	"context"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// TestRunImported replays imported sessions offline with no spec: the
// recorded turns stand in for the model and the recorded results for the
// tools, and the user's later prompts are given back once the turns
// before them are served, so every recorded turn is replayed and every
// result is the same.
func TestRunImported(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	for _, tt := range []struct {
		rel            string
		turns, results int
		status         string
	}{
		// 7 prompts, 12 responses, 10 calls (one failing: its error is
		// given back too); the prompt after the last turn is left out.
		{"claude-code/oneryalcin__fasthooks/sample_main_transcript.jsonl", 12, 10, "done"},
		// 5 steps, each one call; the run stopped after the last result
		// (submit), so the replay ends with the recording.
		{"swe-agent/SWE-agent__SWE-agent/6e44b9__sweagenttestrepo-1c2844.traj", 5, 5, StatusEndOfRecording},
	} {
		t.Run(tt.rel, func(t *testing.T) {
			evs := replaytest.ImportFile(t, tt.rel)
			rep, err := Run(context.Background(), RunConfig{Store: recorder.Store{Root: t.TempDir()}, SessionID: evs[0].SessionID,
				Events: evs, Spec: ImportedSpec(evs), Tools: RecordedTools(evs)})
			if err != nil {
				t.Fatal(err)
			}
			if rep.ReplayStatus != tt.status || rep.Turns != tt.turns || rep.RecordedTurns != tt.turns || rep.ToolResults != tt.results ||
				rep.Same != tt.results || len(rep.Differences) != 0 || rep.LogStatus != string(session.StatusImported) {
				t.Fatalf("Run = %+v", rep)
			}
		})
	}
}

// TestUnavailableTools: a fork of an imported session offers the tools
// its messages called, and each says it cannot run here.
func TestUnavailableTools(t *testing.T) {
	evs := replaytest.ImportFile(t, "claude-code/oneryalcin__fasthooks/sample_main_transcript.jsonl")
	reg := UnavailableTools(evs)
	if got := reg.Names(); len(got) != 3 || got[0] != "Bash" || got[1] != "Read" || got[2] != "Write" {
		t.Fatalf("tools = %v, want Bash, Read, Write", got)
	}
	b, _ := reg.Get("Bash")
	if r := b.Run(context.Background(), toolsCall()); r.Status != session.ResultError || b.SideEffects() {
		t.Errorf("Bash = %+v, side effects %v; want an error and none (a fork never re-applies it)", r, b.SideEffects())
	}
}

func toolsCall() tools.Call { return tools.Call{Args: []byte(`{"command":"ls"}`)} }
