package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/tools"
)

// runFixture runs fixtures/agents/<name>.yaml (built-in tools only) to its
// end in a fresh home and returns the store and session id.
func runFixture(t *testing.T, name string) (recorder.Store, string) {
	t.Helper()
	sp := testenv.LoadAgent(t, name)
	script, err := provider.LoadScript(sp.Model.Script)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Builtins(sp.Mode, sp.Tools)
	if err != nil {
		t.Fatal(err)
	}
	store := recorder.Store{Root: t.TempDir()}
	res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: provider.NewScripted(script, sp.Model.ID), Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	return store, res.SessionID
}

// TestCheckpointsFoldLikeTheLog: every checkpoint written during a run with
// compactions, restored and followed by the rest of the log, gives exactly
// the state a fold of the whole log gives.
func TestCheckpointsFoldLikeTheLog(t *testing.T) {
	store, id := runFixture(t, "long-refactor")
	evs, _, err := store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	full := newState(evs[0].System)
	for _, e := range evs {
		full.add(e)
	}
	want := full.checkpoint("")

	f, err := os.Open(filepath.Join(store.SessionDir(id), recorder.CheckpointsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var cp Checkpoint
		if err := json.Unmarshal(sc.Bytes(), &cp); err != nil {
			t.Fatal(err)
		}
		if cp.Sum != cp.sum() {
			t.Fatalf("checkpoint at seq %d has a bad sum", cp.Seq)
		}
		s := restore(cp)
		for _, e := range evs[cp.Seq:] {
			s.add(e)
		}
		g, w := normalize(t, s.checkpoint("")), normalize(t, want)
		for k := range w {
			if !reflect.DeepEqual(g[k], w[k]) {
				t.Errorf("restored at seq %d then folded: %s = %v, want %v", cp.Seq, k, g[k], w[k])
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		n++
	}
	if n < 10 {
		t.Fatalf("%d checkpoints, want one per turn (>= 10)", n)
	}
	if want.Projection.Through == 0 {
		t.Fatal("the fixture made no compaction; the test would not cover restoring a compacted projection")
	}
}

// normalize compares checkpoints through JSON, as they are stored.
func normalize(t *testing.T, cp Checkpoint) map[string]any {
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	if g, ok := m["session_grants"].([]any); ok && len(g) == 0 {
		delete(m, "session_grants")
	}
	return m
}

// TestLatestCheckpointIgnoresDamage: a corrupt line, a checkpoint past the
// end of the log or one whose timestamp disagrees with the log are skipped.
func TestLatestCheckpointIgnoresDamage(t *testing.T) {
	store, id := runFixture(t, "fix-typo")
	dir := store.SessionDir(id)
	evs, _, _ := store.Load(id)
	good, ok := latestCheckpoint(dir, evs)
	if !ok {
		t.Fatal("no checkpoint found after a run")
	}
	path := filepath.Join(dir, recorder.CheckpointsFile)
	b, _ := os.ReadFile(path)
	future := good
	future.Seq = int64(len(evs) + 5)
	future.Sum = future.sum()
	moved := good
	moved.TS = moved.TS.Add(1)
	moved.Sum = moved.sum()
	fb, _ := json.Marshal(future)
	mb, _ := json.Marshal(moved)
	tampered := good
	tampered.State.InputTokens += 1000 // sum no longer matches
	tb, _ := json.Marshal(tampered)
	// A newer checkpoint at a seq the log has, whose content no longer
	// matches its sum: the older intact one is used.
	newer := good
	newer.Seq, newer.TS = int64(len(evs)), evs[len(evs)-1].TS
	newer.Sum = newer.sum()
	newer.State.OutputTokens += 7
	nb, _ := json.Marshal(newer)
	b = append(append(b, nb...), '\n')
	b = append(b, []byte("{not json\n")...)
	b = append(append(b, fb...), '\n')
	b = append(append(b, mb...), '\n')
	b = append(append(b, tb...), '\n')
	os.WriteFile(path, b, 0o644)
	got, ok := latestCheckpoint(dir, evs)
	if !ok || got.Seq != good.Seq || got.State.InputTokens != good.State.InputTokens {
		t.Fatalf("latestCheckpoint = %d (%v), want the intact one at %d", got.Seq, ok, good.Seq)
	}
	os.Remove(path)
	if _, ok := latestCheckpoint(dir, evs); ok {
		t.Fatal("found a checkpoint in a deleted file")
	}
	s, from := foldLog(dir, evs)
	if from != 0 || s.LastSeq != int64(len(evs)) {
		t.Fatalf("foldLog without checkpoints = from %d to %d", from, s.LastSeq)
	}
	_ = session.KindCompaction
}

// TestCheckpointEncode: the one-pass encoding the runner writes is the
// encoding of the checkpoint with its sum set, which latestCheckpoint
// verifies.
func TestCheckpointEncode(t *testing.T) {
	store, id := runFixture(t, "long-refactor")
	evs, _, _ := store.Load(id)
	s := newState(evs[0].System)
	for _, e := range evs {
		s.add(e)
	}
	cp := s.checkpoint("")
	cp.WorkspaceGit = "0123456789abcdef0123456789abcdef01234567"
	got, err := cp.encode()
	if err != nil {
		t.Fatal(err)
	}
	cp.Sum = cp.sum()
	want, _ := json.Marshal(cp)
	if string(got) != string(want) {
		t.Fatalf("encode() differs from json.Marshal with the sum set:\n%s\n%s", got, want)
	}
}
