package replay

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/testenv"
)

// recordDelegate runs fixtures/agents/delegate.yaml (a parent whose task
// call starts the reader subagent) into home and returns the parent's id
// and its child's.
func recordDelegate(t *testing.T, home string) (string, string) {
	t.Helper()
	sp := testenv.LoadAgent(t, "delegate")
	st := recorder.Store{Root: home}
	const id = "de1e000000000001"
	newProv := func(sp *spec.Spec) (provider.Provider, error) { return replaytest.Scripted(t, sp), nil }
	res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Provider: replaytest.Scripted(t, sp),
		Tools: replaytest.Tools(t, sp), Clock: replaytest.FixedClock(), SessionID: id, NewProvider: newProv})
	if err != nil || res.Err != nil || res.Status != session.StatusDone {
		t.Fatalf("record delegate: %v %v %s", err, res.Err, res.Status)
	}
	fold, _, err := st.Fold(id)
	if err != nil || len(fold.Children) != 1 {
		t.Fatalf("delegate has children %v (%v), want one", fold.Children, err)
	}
	return id, fold.Children[0]
}

// rewrite replaces session id's log in st with evs changed by edit.
func rewrite(t *testing.T, st recorder.Store, id string, edit func([]session.Event)) {
	t.Helper()
	evs, _, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	edit(evs)
	if err := os.Remove(st.LogPath(id)); err != nil {
		t.Fatal(err)
	}
	w, err := recorder.Create(st.LogPath(id), evs[0], recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs[1:] {
		evs[1+i].Seq = 0
	}
	if _, err := w.Append(evs[1:]...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRunServesSubagentsFromTheirRecording replays a session with a
// subagent: as recorded it has no difference; a forged child (answer, tool
// call, header) or a missing one diverges, and the difference names the
// child session and its turn.
func TestRunServesSubagentsFromTheirRecording(t *testing.T) {
	tests := []struct {
		name string
		// edit changes the child's recorded events; nil removes its log.
		edit   func(evs []session.Event)
		remove bool
		// want checks the differences (none when nil).
		want func(t *testing.T, child string, diffs []ToolDiff)
	}{
		{name: "as recorded"},
		{name: "forged final answer", edit: func(evs []session.Event) {
			for i := range evs {
				if evs[i].Kind == session.KindAssistantMessage && len(evs[i].ToolCalls) == 0 {
					evs[i].Text = "The README is fine."
				}
			}
		}, want: func(t *testing.T, child string, diffs []ToolDiff) {
			if len(diffs) != 1 {
				t.Fatalf("differences %+v, want one", diffs)
			}
			d := diffs[0]
			if d.Tool != "task" || d.Field != "output" || d.Replay != "The README is fine." || d.ChildSessionID != child || d.ChildTurn != 2 || d.Session != "" {
				t.Errorf("difference %+v, want the task output naming child %s turn 2", d, child)
			}
		}},
		{name: "forged tool call", edit: func(evs []session.Event) {
			for i := range evs {
				if evs[i].Kind == session.KindAssistantMessage && len(evs[i].ToolCalls) == 1 {
					evs[i].ToolCalls[0].Args = []byte(`{"path":"main.go"}`)
				}
			}
		}, want: func(t *testing.T, child string, diffs []ToolDiff) {
			if len(diffs) == 0 || diffs[0].Session != child || diffs[0].Turn != 1 || diffs[0].Tool != "read_file" || diffs[0].ReplaySession == "" {
				t.Errorf("differences %+v, want the child's read_file in its turn 1 first", diffs)
			}
		}},
		{name: "header naming another seq", edit: func(evs []session.Event) { evs[0].ParentSeq++ },
			want: func(t *testing.T, child string, diffs []ToolDiff) {
				if len(diffs) == 0 || diffs[0].Tool != "task" || !strings.Contains(diffs[len(diffs)-1].Replay, "it is not that call's recording") {
					t.Errorf("differences %+v, want the task call refused its forged child", diffs)
				}
			}},
		{name: "missing", remove: true, want: func(t *testing.T, child string, diffs []ToolDiff) {
			if len(diffs) == 0 || !strings.Contains(diffs[len(diffs)-1].Replay, "the recording of subagent "+child) {
				t.Errorf("differences %+v, want the missing child named", diffs)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			id, child := recordDelegate(t, home)
			src := recorder.Store{Root: home}
			switch {
			case tt.remove:
				if err := os.RemoveAll(src.SessionDir(child)); err != nil {
					t.Fatal(err)
				}
			case tt.edit != nil:
				rewrite(t, src, child, tt.edit)
			}
			evs, _, err := src.Load(id)
			if err != nil {
				t.Fatal(err)
			}
			sp := testenv.LoadAgent(t, "delegate")
			rep, err := Run(context.Background(), RunConfig{Store: recorder.Store{Root: t.TempDir()}, SessionID: id, Events: evs,
				Spec: sp, Tools: replaytest.Tools(t, sp), Recordings: &src})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if len(rep.Differences) != 0 || len(rep.Subagents) != 1 || rep.Subagents[0].SessionID != child ||
					rep.Subagents[0].ReplayStatus != "done" || rep.Subagents[0].Same != 1 {
					t.Fatalf("report %+v, want no difference and the child replayed", rep)
				}
				return
			}
			tt.want(t, child, rep.Differences)
		})
	}
}
