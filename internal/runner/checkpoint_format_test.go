package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// checkpointV1 is the checkpoint format written before the runner's fold
// became session.State (no "format" key), kept here to prove that such a
// line is rejected cleanly rather than restored into a wrong state.
type checkpointV1 struct {
	Seq        int64                  `json:"seq"`
	TS         time.Time              `json:"ts"`
	Projection session.ProjectorState `json:"projection"`

	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	ToolCalls    int64   `json:"tool_calls"`
	Turns        int     `json:"turns"`
	EvalFailures int     `json:"eval_failures"`
	Prompted     bool    `json:"prompted"`
	WallSpentMS  int64   `json:"wall_spent_ms"`
	SegStart     time.Time
	Provider     string `json:"provider"`
	Model        string `json:"model"`
	Sum          string `json:"sum,omitempty"`
}

func (cp checkpointV1) sum() string {
	cp.Sum = ""
	b, _ := json.Marshal(cp)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestOldCheckpointFormatRefolds: a checkpoints.jsonl whose newest line is
// an intact checkpoint of the previous format (its own sum right, its seq
// and timestamp those of the log) is not restored: resume folds the whole
// log, and gets what a full fold gets.
func TestOldCheckpointFormatRefolds(t *testing.T) {
	store, id := runFixture(t, "fix-typo")
	dir := store.SessionDir(id)
	evs, _, err := store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	old := checkpointV1{Seq: last.Seq, TS: last.TS, InputTokens: 1, Turns: 99, Prompted: true, Provider: "scripted", Model: "scripted-1"}
	old.Sum = old.sum()
	line, _ := json.Marshal(old)
	path := filepath.Join(dir, recorder.CheckpointsFile)
	// Only old lines: nothing is restored.
	if err := os.WriteFile(path, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if cp, ok := latestCheckpoint(dir, evs); ok {
		t.Fatalf("latestCheckpoint restored an old-format line at seq %d", cp.Seq)
	}
	s, from := foldLog(dir, evs)
	if from != 0 {
		t.Fatalf("foldLog started from seq %d, want a full fold", from)
	}
	full := newState(evs[0].System)
	for _, e := range evs {
		full.add(e)
	}
	gb, _ := json.Marshal(s.State)
	wb, _ := json.Marshal(full.State)
	if string(gb) != string(wb) || s.Turns == 99 {
		t.Fatalf("fold with an old checkpoint = %+v\nwant %+v", s.State, full.State)
	}
}

// TestRestoredStateEqualsFold: a checkpoint decoded from its JSON line
// restores a session.State equal to folding the log up to it, and
// the fold goes on from there alike (the call index is rebuilt).
func TestRestoredStateEqualsFold(t *testing.T) {
	store, id := runFixture(t, "charge-order")
	evs, _, err := store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut <= len(evs); cut++ {
		part := newState(evs[0].System)
		for _, e := range evs[:cut] {
			part.add(e)
		}
		b, err := json.Marshal(part.checkpoint(""))
		if err != nil {
			t.Fatal(err)
		}
		var cp Checkpoint
		if err := json.Unmarshal(b, &cp); err != nil {
			t.Fatal(err)
		}
		s := restore(cp)
		for _, e := range evs[cut:] {
			s.add(e)
		}
		// Compared as stored: time zones and empty-vs-nil slices are
		// not state.
		gb, _ := json.Marshal(s.State)
		wb, _ := json.Marshal(session.Fold(evs))
		if string(gb) != string(wb) {
			t.Fatalf("restored at seq %d then folded:\n%s\nwant\n%s", cut, gb, wb)
		}
	}
}
