package replay

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/runner/spec"
	"github.com/agentctl/agentctl/session"
)

// TestImportCorpusIntact checks the copies against the git blob ids of
// SOURCES.md, so an edit of a third-party file is noticed.
func TestImportCorpusIntact(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "claude-code", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|.*\\| `([0-9a-f]{12})` \\|").FindAllStringSubmatch(string(src), -1)
	if len(rows) != 2 {
		t.Fatalf("SOURCES.md has %d rows, want 2", len(rows))
	}
	for _, r := range rows {
		b, err := os.ReadFile(filepath.Join("testdata", "claude-code", r[1]))
		if err != nil {
			t.Fatal(err)
		}
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(b))
		h.Write(b)
		if got := hex.EncodeToString(h.Sum(nil))[:12]; got != r[2] {
			t.Errorf("%s: git blob %s, SOURCES.md says %s", r[1], got, r[2])
		}
	}
}

func importFile(t *testing.T, name, id string) []session.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "claude-code", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := ImportClaudeCode(f, id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestImportClaudeCode imports real Claude Code sessions: one response
// split over several lines is one turn, tool results pair with their calls,
// the /compact summary is a compaction; verify says there are no digests
// and finds the structure sound.
func TestImportClaudeCode(t *testing.T) {
	tests := []struct {
		file                       string
		turns, results, compaction int
		firstUser                  string
	}{
		// 12 distinct message ids, 10 tool_use blocks (FORMATS.md 2.1).
		{"fasthooks-sample_main_transcript.jsonl", 12, 10, 1, "can you run a command ls -la "},
		{"codemie-4c2ddfdc.jsonl", -1, -1, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			evs := importFile(t, tt.file, "1c0de00000000001")
			counts := map[session.Kind]int{}
			for _, e := range evs {
				counts[e.Kind]++
			}
			if tt.turns >= 0 && counts[session.KindAssistantMessage] != tt.turns {
				t.Errorf("assistant messages = %d, want %d", counts[session.KindAssistantMessage], tt.turns)
			}
			if tt.results >= 0 && counts[session.KindToolResult] != tt.results {
				t.Errorf("tool results = %d, want %d", counts[session.KindToolResult], tt.results)
			}
			if counts[session.KindCompaction] != tt.compaction {
				t.Errorf("compactions = %d, want %d", counts[session.KindCompaction], tt.compaction)
			}
			if tt.firstUser != "" && evs[1].Text != tt.firstUser {
				t.Errorf("first event = %+v, want the user message %q", evs[1], tt.firstUser)
			}
			rep := Verify("1c0de00000000001", evs, VerifyOptions{})
			if rep.Status != StatusStructureOnly || rep.ImportedFrom != ImportedClaudeCode || len(rep.Problems) > 0 {
				t.Fatalf("Verify = %s", rep.Text())
			}
			if !strings.Contains(rep.Text(), "imported from claude-code: the log records no request digests") {
				t.Errorf("Verify text does not say the session is imported:\n%s", rep.Text())
			}
		})
	}
}

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
	evs := record(t, home, "fix-typo", "0000000000000c01")
	sp, err := spec.FromHeader(evs[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	scratch := recorder.Store{Root: t.TempDir()}
	rep, err := Run(context.Background(), RunConfig{Store: scratch, SessionID: "0000000000000c01", Events: evs, Spec: sp, Tools: testTools(t, sp)})
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
	if v := Verify(rep.ReplaySessionID, replayed, VerifyOptions{}); v.Status != StatusOK {
		t.Errorf("the replay's own log does not verify: %s", v.Text())
	}

	// The environment changed: the README already has the fix.
	changed := t.TempDir()
	if err := os.WriteFile(filepath.Join(changed, "README.md"), []byte("# Mailer\n\nThis service will receive mail.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp2 := *sp
	sp2.Workspace.From = changed
	rep, err = Run(context.Background(), RunConfig{Store: scratch, SessionID: "0000000000000c01", Events: evs, Spec: &sp2, Tools: testTools(t, &sp2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) < 2 || rep.Differences[0].Code != CodeResultDiffers || rep.Differences[0].CallID != "call_1_0" {
		t.Fatalf("Run on a changed workspace = %+v, want differences from call_1_0 on", rep)
	}
	rep, err = Run(context.Background(), RunConfig{Store: scratch, SessionID: "0000000000000c01", Events: evs, Spec: &sp2, Tools: testTools(t, &sp2), Strict: true})
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
	evs := record(t, home, "fix-typo", "0000000000000f01")
	sp, _ := spec.FromHeader(evs[0].Spec)
	fsp := *sp
	fsp.Model = spec.Model{Provider: "scripted", ID: "scripted-2"}
	script := provider.Script{Turns: []provider.ScriptTurn{{Text: "I would rather leave the typo alone."}}}
	// Fork after the first tool result (seq 6): the edit never happens.
	rep, err := Fork(context.Background(), ForkConfig{Store: st, SessionID: "0000000000000f01", Events: evs, From: 6,
		Spec: &fsp, Provider: provider.NewScripted(script, "scripted-2"), Tools: testTools(t, &fsp), ForkID: "0000000000000f02"})
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
	d := Diff("0000000000000f01", evs, "0000000000000f02", fevs)
	if d.FirstDiff != 2 || d.Same || d.B.Status != session.StatusFailed {
		t.Fatalf("Diff = first %d same %v status %s, want turn 2 to differ", d.FirstDiff, d.Same, d.B.Status)
	}
	if got := strings.Join(d.Rows[1].Differ, ","); !strings.Contains(got, "calls") {
		t.Errorf("turn 2 differs in %s, want calls", got)
	}

	// A fork at the end of the edit, same model: the workspace is rebuilt
	// with the edit re-applied, the pinned script goes on at turn 3.
	sprov := scripted(t, sp)
	rep, err = Fork(context.Background(), ForkConfig{Store: st, SessionID: "0000000000000f01", Events: evs, From: 10,
		Spec: sp, Provider: sprov, Tools: testTools(t, sp), ForkID: "0000000000000f03"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ModelChanged || rep.Reapplied != 1 || rep.Result.Status != session.StatusDone {
		t.Fatalf("same-model Fork = %+v, want done with one edit re-applied", rep)
	}
	if _, err := Fork(context.Background(), ForkConfig{Store: st, SessionID: "0000000000000f01", Events: evs, From: 3, Spec: sp,
		Provider: sprov, Tools: testTools(t, sp)}); err == nil || !strings.Contains(err.Error(), "use --from 4") {
		t.Errorf("fork between an assistant message and its model_call: err = %v", err)
	}
}

// TestImportClaudeCodeUsage: an imported turn counts usage as the live
// provider does (cache reads and writes in input_tokens, the breakdown
// kept, each part priced) from the transcript's first response,
// msg_012yp674…: input 9, cache write 5,061, cache read 12,834, output 8
// on claude-haiku-4-5.
func TestImportClaudeCodeUsage(t *testing.T) {
	evs := importFile(t, "fasthooks-sample_main_transcript.jsonl", "1c0de00000000002")
	var mc *session.Event
	for i := range evs {
		if evs[i].Kind == session.KindModelCall {
			mc = &evs[i]
			break
		}
	}
	if mc == nil {
		t.Fatal("no model_call imported")
	}
	if mc.ResponseID != "msg_012yp674BDbdduJCYtTe3GMH" || mc.InputTokens != 9+5061+12834 || mc.CacheReadInputTokens != 12834 ||
		mc.CacheCreationInputTokens != 5061 || mc.OutputTokens != 8 {
		t.Fatalf("model_call = %+v", *mc)
	}
	// $1/M input, $0.10/M cache reads, $1.25/M five-minute writes, $5/M output.
	want := (9*1.0 + 12834*0.10 + 5061*1.25 + 8*5.0) / 1e6
	if d := mc.CostUSD - want; d > 1e-12 || d < -1e-12 {
		t.Errorf("cost_usd = %v, want %v", mc.CostUSD, want)
	}
}
