package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// TestRunOffline re-runs a recording with no provider built and no key:
// the recorded turns stand in for the model. The tools run in a fresh
// copy of the workspace, so results match; a changed workspace shows as a
// difference, and --strict stops there.
func TestRunOffline(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1") // any network call would fail
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	home := t.TempDir()
	evs := replaytest.Record(t, home, "fix-typo", "0000000000000c01")
	sp, err := spec.FromHeader(evs[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	scratch := recorder.Store{Root: t.TempDir()}
	rep, err := Run(context.Background(), RunConfig{Store: scratch, SessionID: "0000000000000c01", Events: evs, Spec: sp, Tools: replaytest.Tools(t, sp)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ReplayStatus != "done" || len(rep.Differences) != 0 || rep.Same != 2 || rep.Turns != 3 {
		t.Fatalf("Run = %+v, want done with 2 identical results", rep)
	}
	replayed, _, _ := scratch.Load(rep.ReplaySessionID)
	if replayed[0].Provider != "recorded" {
		t.Errorf("replay header provider = %q, want recorded", replayed[0].Provider)
	}
	if v := replaycheck.Verify(rep.ReplaySessionID, replayed, replaycheck.VerifyOptions{}); v.Status != replaycheck.StatusOK {
		t.Errorf("the replay's own log does not verify: %s", v.Text())
	}

	// The environment changed: the README already has the fix.
	changed := t.TempDir()
	if err := os.WriteFile(filepath.Join(changed, "README.md"), []byte("# Mailer\n\nThis service will receive mail.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp2 := *sp
	sp2.Workspace.From = changed
	rep, err = Run(context.Background(), RunConfig{Store: scratch, SessionID: "0000000000000c01", Events: evs, Spec: &sp2, Tools: replaytest.Tools(t, &sp2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) < 2 || rep.Differences[0].Code != CodeResultDiffers || rep.Differences[0].CallID != "call_1_0" {
		t.Fatalf("Run on a changed workspace = %+v, want differences from call_1_0 on", rep)
	}
	rep, err = Run(context.Background(), RunConfig{Store: scratch, SessionID: "0000000000000c01", Events: evs, Spec: &sp2, Tools: replaytest.Tools(t, &sp2), Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Stopped || len(rep.Differences) != 1 || rep.ReplayStatus != "interrupted" {
		t.Fatalf("strict Run = %+v, want a stop at the first difference", rep)
	}
}

// TestForkToScriptedModel forks a finished run before its last turn to
// another scripted model that ends differently, and diffs the two.
func TestForkToScriptedModel(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	evs := replaytest.Record(t, home, "fix-typo", "0000000000000f01")
	sp, _ := spec.FromHeader(evs[0].Spec)
	fsp := *sp
	fsp.Model = spec.Model{Provider: "scripted", ID: "scripted-2"}
	script := provider.Script{Turns: []provider.ScriptTurn{{Text: "I would rather leave the typo alone."}}}
	// Fork after the first tool result (seq 6): the edit never happens.
	rep, err := Fork(context.Background(), ForkConfig{Store: st, SessionID: "0000000000000f01", Events: evs, From: 6,
		Spec: &fsp, Provider: provider.NewScripted(script, "scripted-2"), Tools: replaytest.Tools(t, &fsp), ForkID: "0000000000000f02"})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.ModelChanged || rep.Result.Status != session.StatusFailed || rep.Reapplied != 0 {
		t.Fatalf("Fork = %+v, want a model change and an evaluation failure", rep)
	}
	fevs, _, _ := st.Load("0000000000000f02")
	h := fevs[0]
	if h.ParentSessionID != "0000000000000f01" || h.ForkedFrom != 6 {
		t.Errorf("fork header parent=%q forked_from=%d", h.ParentSessionID, h.ForkedFrom)
	}
	if fevs[7].Kind != session.KindModelChanged || fevs[7].Model != "scripted-2" || !strings.Contains(fevs[7].Reason, "fork --model scripted/scripted-2") {
		t.Errorf("seq 8 = %+v, want model_changed to scripted-2", fevs[7])
	}
	for i := 1; i < 6; i++ {
		a, b := evs[i], fevs[i]
		if a.Kind != b.Kind || a.Seq != b.Seq || a.Text != b.Text || a.Output != b.Output {
			t.Errorf("copied event %d = %+v, want %+v", i+1, b, a)
		}
	}
	d := replaycheck.Diff("0000000000000f01", evs, "0000000000000f02", fevs)
	if d.FirstDiff != 2 || d.Same || d.B.Status != session.StatusFailed {
		t.Fatalf("Diff = first %d same %v status %s, want turn 2 to differ", d.FirstDiff, d.Same, d.B.Status)
	}
	if got := strings.Join(d.Rows[1].Differ, ","); !strings.Contains(got, "calls") {
		t.Errorf("turn 2 differs in %s, want calls", got)
	}

	// A fork at the end of the edit, same model: the workspace is rebuilt
	// with the edit re-applied, the pinned script goes on at turn 3.
	sprov := replaytest.Scripted(t, sp)
	rep, err = Fork(context.Background(), ForkConfig{Store: st, SessionID: "0000000000000f01", Events: evs, From: 10,
		Spec: sp, Provider: sprov, Tools: replaytest.Tools(t, sp), ForkID: "0000000000000f03"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ModelChanged || rep.Reapplied != 1 || rep.Result.Status != session.StatusDone {
		t.Fatalf("same-model Fork = %+v, want done with one edit re-applied", rep)
	}
	if _, err := Fork(context.Background(), ForkConfig{Store: st, SessionID: "0000000000000f01", Events: evs, From: 3, Spec: sp,
		Provider: sprov, Tools: replaytest.Tools(t, sp)}); err == nil || !strings.Contains(err.Error(), "use --from 4") {
		t.Errorf("fork between an assistant message and its model_call: err = %v", err)
	}
}
