package check

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
)

// TestCompactionRequestsFitTheWindow runs long-refactor's agent (window
// 900, threshold 0.75) through a script four times as long as its own, 65
// turns of reading and rewriting files, and holds every summary request to
// the window: each compaction call's input, as the model counted it, is
// at most the 675 tokens the chunks are fitted to, however long the run
// grows (before chunked summaries each request re-read every original and
// grew with the run: 70 → 986 → … → 2517 over the fixture's 19 turns).
// Each part reads originals no earlier part read, never a summary, and
// the log still verifies and keeps its goal pinned after every compaction.
// The summary message stays within its budget: the oldest parts are
// dropped (before, a part per compaction stayed in force).
func TestCompactionRequestsFitTheWindow(t *testing.T) {
	sp := testenv.LoadAgent(t, "long-refactor")
	var turns []provider.ScriptTurn
	for round := 1; round <= 4; round++ {
		for f := 1; f <= 8; f++ {
			path := fmt.Sprintf("pkg/f%d.go", f)
			turns = append(turns,
				provider.ScriptTurn{Text: fmt.Sprintf("Round %d: reading %s.", round, path),
					ToolCalls: []provider.ScriptCall{{Name: "read_file", Args: json.RawMessage(fmt.Sprintf(`{"path":%q}`, path))}}},
				provider.ScriptTurn{Text: fmt.Sprintf("Round %d: rewriting %s.", round, path),
					ToolCalls: []provider.ScriptCall{{Name: "write_file", Args: json.RawMessage(fmt.Sprintf(`{"path":%q,"content":"package pkg\n\n// File %d, round %d, uses Bar.\nfunc use%d() { _ = Bar{} }\n"}`, path, f, round, f))}}})
		}
	}
	turns = append(turns,
		provider.ScriptTurn{Text: "Renaming the type itself.", ToolCalls: []provider.ScriptCall{{Name: "edit_file",
			Args: json.RawMessage(`{"path":"pkg/foo.go","old":"type Foo struct","new":"type Bar struct"}`)}}},
		provider.ScriptTurn{Text: "Renamed Foo to Bar in pkg/; vendor/ untouched."})
	home := t.TempDir()
	st := recorder.Store{Root: home}
	const id = "c0a1000000000065"
	res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Provider: provider.NewScripted(provider.Script{Turns: turns}, sp.Model.ID),
		Tools: replaytest.Tools(t, sp), Clock: replaytest.FixedClock(), SessionID: id})
	if err != nil || res.Err != nil || res.Status != session.StatusDone {
		t.Fatalf("run: %+v %v", res, err)
	}
	evs, _, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}

	fit := int64(sp.Compaction.Threshold * float64(sp.Compaction.Window))
	read := map[int64]int64{} // original seq -> the compaction that read it
	var inputs []int64
	for i, e := range evs {
		if e.Kind != session.KindCompaction {
			continue
		}
		call := evs[i-1]
		inputs = append(inputs, call.InputTokens)
		if call.InputTokens > fit {
			t.Errorf("compaction at seq %d: its request had %d input tokens, more than the %d it must fit", e.Seq, call.InputTokens, fit)
		}
		from, gotFit := session.CompactionInput(e)
		if from == 0 || gotFit != fit {
			t.Errorf("compaction at seq %d: summary_from %d, fit_tokens %d", e.Seq, from, gotFit)
		}
		for _, s := range e.SourceSeqs {
			if s < from || s > e.Through {
				t.Errorf("compaction at seq %d read seq %d, outside its part %d..%d", e.Seq, s, from, e.Through)
			}
			if by, ok := read[s]; ok {
				t.Errorf("seq %d was summarised twice, at seq %d and %d", s, by, e.Seq)
			}
			read[s] = e.Seq
		}
	}
	if len(inputs) < 5 {
		t.Fatalf("%d compactions over %d turns: the window should force many", len(inputs), len(turns))
	}
	t.Logf("compaction request input tokens: %v", inputs)

	if rep := Verify(id, evs, VerifyOptions{}); rep.Status != StatusOK || rep.Checked != rep.ModelCalls {
		t.Errorf("verify: %+v", rep)
	}
	if rep := VerifyLog(id, st.LogPath(id), false); rep.Status != StatusOK || rep.Checked != rep.ModelCalls {
		t.Errorf("verify, streamed: %+v", rep)
	}
	if a := Anchors(id, evs, []string{"never edit anything under vendor/"}); !a.OK {
		t.Errorf("anchors: %+v", a)
	}
	// The summary the model reads at the end holds the newest parts, each
	// from its own originals, within its budget (a third of what the
	// threshold leaves beside the pinned messages): the older parts were
	// dropped, not kept beside them.
	p := session.ProjectionOf(evs)
	if len(p.Parts) == 0 || len(p.Parts) >= len(inputs) {
		t.Errorf("%d parts in force after %d compactions: want the oldest dropped", len(p.Parts), len(inputs))
	}
	if p.Summary == nil || len(p.Summary.Content)/4 > int(fit)/3 {
		t.Errorf("the last summary message is %v, over a third of %d tokens", p.Summary, fit)
	}
}
