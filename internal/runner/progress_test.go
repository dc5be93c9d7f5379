package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/tools"
)

func isProgress(e session.Event) bool {
	var a struct {
		Progress []string `json:"progress"`
	}
	return e.Kind == session.KindUserMessage && json.Unmarshal(e.Attrs, &a) == nil && len(a.Progress) > 0
}

// TestProgressOnResume: a run stopped by its budget, then resumed: before
// the resumed run's first model call the log holds a user message showing
// the progress files as the agent left them (a missing one said to be
// missing, a large one cut, a secret from .env redacted), and the first
// invocation showed none.
func TestProgressOnResume(t *testing.T) {
	big := strings.Repeat("feature line\n", 2000) // 26 KB, past the 16 KiB cap
	g := newGitRun(t, map[string]string{"go.mod": "module m\n", ".env": "API_TOKEN=progress-secret-4f9a8b7c\n", "big.txt": big}, `turns:
  - text: "Note progress."
    tool_calls:
      - {name: write_file, args: {path: PROGRESS.md, content: "step 1 done; token progress-secret-4f9a8b7c\n"}}
  - text: "Next."
    tool_calls:
      - {name: read_file, args: {path: PROGRESS.md}}
  - text: "Done."
`, "progress: [PROGRESS.md, feature-list.json, big.txt]\nbudget: {max_tool_calls: 1}\n")
	res, err := Start(context.Background(), g.config(nil))
	if err != nil || res.Status != session.StatusBudgetExceeded {
		t.Fatalf("run: %+v, %v", res, err)
	}
	for _, e := range g.events(res.SessionID) {
		if isProgress(e) {
			t.Fatalf("the first invocation showed progress files at seq %d", e.Seq)
		}
	}
	n := len(g.events(res.SessionID))
	cfg := g.config(nil)
	cfg.Resume.Budget = []string{"max_tool_calls=10"}
	if res, err = Resume(context.Background(), cfg, res.SessionID); err != nil || res.Status != session.StatusDone {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	evs := g.events(res.SessionID)[n:]
	var shown *session.Event
	for i, e := range evs {
		if isProgress(e) {
			shown = &evs[i]
			for _, before := range evs[:i] {
				if before.Kind == session.KindModelCall {
					t.Error("a model call came before the progress files were shown")
				}
			}
			break
		}
	}
	if shown == nil {
		t.Fatal("the resumed run showed no progress files")
	}
	for _, want := range []string{ProgressHeading, "== PROGRESS.md ==\nstep 1 done", "== feature-list.json ==\n(missing", "== big.txt ==", "[cut: the file has 26000 bytes"} {
		if !strings.Contains(shown.Text, want) {
			t.Errorf("the progress message lacks %q:\n%.600s", want, shown.Text)
		}
	}
	if strings.Contains(shown.Text, "progress-secret-4f9a8b7c") {
		t.Error("the progress message holds the secret from .env")
	}
	if len(shown.Text) > progressTotalCap+4096 {
		t.Errorf("the progress message has %d bytes", len(shown.Text))
	}
}

// TestProgressAfterCompaction: in a run that compacts several times, each
// compaction is followed, before the next model call, by the progress
// files as they are then.
func TestProgressAfterCompaction(t *testing.T) {
	sp := testenv.LoadAgent(t, "long-refactor")
	sp.Progress = []string{"pkg/f1.go"}
	f := false
	sp.Workspace.Git = &f
	script, err := provider.LoadScript(sp.Model.Script)
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := tools.Builtins(sp.Mode, sp.Tools)
	store := recorder.Store{Root: t.TempDir()}
	sp.Done = nil // the done check needs the sandbox; compaction is what is tested
	res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: provider.NewScripted(script, sp.Model.ID), Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	evs, _, _ := store.Load(res.SessionID)
	compactions := 0
	for i, e := range evs {
		if e.Kind != session.KindCompaction {
			continue
		}
		compactions++
		found := false
		for _, next := range evs[i+1:] {
			if next.Kind == session.KindCompaction && found {
				break
			}
			if isProgress(next) {
				found = true
				if !strings.Contains(next.Text, "== pkg/f1.go ==\npackage pkg") {
					t.Errorf("progress after the compaction at %d: %.200s", e.Seq, next.Text)
				}
				break
			}
			if next.Kind == session.KindAssistantMessage {
				break
			}
		}
		if !found {
			t.Errorf("no progress files shown after the compaction at seq %d", e.Seq)
		}
	}
	if compactions < 2 {
		t.Fatalf("%d compactions; the fixture should compact several times", compactions)
	}
}
