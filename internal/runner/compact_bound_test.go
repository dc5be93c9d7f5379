package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/tools"
)

// watched is a Provider that notes every request the runner sends (its
// messages' estimate, as the threshold and the window count them, and when it was sent) before the
// wrapped model answers it.
type watched struct {
	provider.Provider
	mu    sync.Mutex
	turns []watchedCall
	summ  []watchedCall
}

type watchedCall struct {
	tokens int64
	at     time.Time
}

var _ provider.Provider = (*watched)(nil)

func (w *watched) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	c := watchedCall{tokens: session.EstimateTokens(req.Messages), at: time.Now()}
	w.mu.Lock()
	if req.Purpose == provider.PurposeCompaction {
		w.summ = append(w.summ, c)
	} else {
		w.turns = append(w.turns, c)
	}
	w.mu.Unlock()
	return w.Provider.Complete(ctx, req, onText)
}

// longRun is a spec and script of n turns, each reading a ~300-byte file,
// with a small window: the context passes the threshold every few turns.
func longRun(tb testing.TB, n int, window int64) (*spec.Spec, provider.Script, *tools.Registry) {
	src := tb.TempDir()
	notes := strings.Repeat("notes line about the refactoring so far\n", 8)
	if err := os.WriteFile(filepath.Join(src, "NOTES.md"), []byte(notes), 0o644); err != nil {
		tb.Fatal(err)
	}
	script := provider.Script{}
	for i := 1; i < n; i++ {
		script.Turns = append(script.Turns, provider.ScriptTurn{Text: fmt.Sprintf("Step %d: reading the notes again.", i),
			ToolCalls: []provider.ScriptCall{{Name: "read_file", Args: json.RawMessage(`{"path":"NOTES.md"}`)}}})
	}
	script.Turns = append(script.Turns, provider.ScriptTurn{Text: "Done."})
	reg, err := tools.Builtins("write", []string{"read_file"})
	if err != nil {
		tb.Fatal(err)
	}
	sp := &spec.Spec{Name: "long", Model: spec.Model{Provider: "scripted", ID: "scripted-1", MaxTokens: 256},
		System: "You are a careful agent.", Prompt: "Keep reading NOTES.md. Constraint: never edit anything under vendor/.",
		Mode: "write", MaxTurns: n + 1, Workspace: spec.Workspace{From: src},
		Compaction: spec.Compaction{Window: window, Threshold: 0.75}}
	return sp, script, reg
}

// TestCompactionBoundedOver2000Turns runs 2,000 turns of the real loop
// with a 900-token window and holds every request the model receives, a
// turn's or a summary's, to the window however many compactions came
// before, at a rate of one compaction every few turns, not one a turn.
// Before summaries were bounded, each compaction's summary was kept beside
// the earlier ones: 1,956 compactions in 2,000 turns and a last request of
// 36,515 tokens.
func TestCompactionBoundedOver2000Turns(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 turns")
	}
	const n, window = 2000, 900
	sp, script, reg := longRun(t, n, window)
	w := &watched{Provider: provider.NewScripted(script, "scripted-1")}
	store := recorder.Store{Root: t.TempDir()}
	res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: w, Tools: reg})
	if err != nil || res.Status != session.StatusDone || res.Turns != n {
		t.Fatalf("Start = %+v, %v", res, err)
	}
	var most int64
	for i, c := range w.turns {
		most = max(most, c.tokens)
		if c.tokens > window {
			t.Errorf("turn %d: request of %d tokens, over the %d-token window", i+1, c.tokens, window)
		}
	}
	for i, c := range w.summ {
		if c.tokens > window {
			t.Errorf("summary request %d: %d tokens, over the %d-token window", i+1, c.tokens, window)
		}
	}
	evs, _, err := store.Load(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var compactions int
	for _, e := range evs {
		if e.Kind == session.KindCompaction {
			compactions++
		}
	}
	t.Logf("%d turns, %d compactions, %d summary requests, largest turn request %d tokens", n, compactions, len(w.summ), most)
	if compactions == 0 || compactions > n/3 {
		t.Errorf("%d compactions in %d turns: want some, at most one every three turns", compactions, n)
	}
	// The model still reads the goal verbatim at the end.
	last := session.Project(evs, sp.System)
	if !strings.Contains(fmt.Sprint(last), "never edit anything under vendor/") {
		t.Errorf("the pinned prompt is gone from the last projection")
	}
}

// TestLongRefactorFitsItsWindow runs fixtures/agents/long-refactor.yaml
// (window 900) and holds every request its model receives to the window.
// Before summaries were bounded, a compaction that kept every earlier
// part left nothing but the pinned prompt to compact, and a turn was sent
// with 974 tokens.
func TestLongRefactorFitsItsWindow(t *testing.T) {
	sp := testenv.LoadAgent(t, "long-refactor")
	script, err := provider.LoadScript(sp.Model.Script)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Builtins(sp.Mode, sp.Tools)
	if err != nil {
		t.Fatal(err)
	}
	w := &watched{Provider: provider.NewScripted(script, sp.Model.ID)}
	store := recorder.Store{Root: t.TempDir()}
	res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: w, Tools: reg})
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("Start = %+v, %v", res, err)
	}
	var sizes []int64
	for i, c := range append(w.turns, w.summ...) {
		sizes = append(sizes, c.tokens)
		if c.tokens > sp.Compaction.Window {
			t.Errorf("request %d: %d tokens, over the %d-token window", i+1, c.tokens, sp.Compaction.Window)
		}
	}
	t.Logf("%d turns, %d summary requests; request tokens %v", len(w.turns), len(w.summ), sizes)
	if len(w.summ) == 0 {
		t.Errorf("no compaction: the fixture's window should force some")
	}
}

// TestContextOverflowStops: when one message alone leaves no room in the
// window (the pinned first user message, or the current turn's assistant
// message, which compaction keeps verbatim), the run stops with
// context_overflow naming that message, and sends no request over the
// window. A tool's output is cut to a share of the window when captured,
// so a large one never overflows: the run goes on.
func TestContextOverflowStops(t *testing.T) {
	big := strings.Repeat("x", 4000) // ~1,000 tokens
	cases := []struct {
		name, prompt, content, file, want string
	}{
		{"pinned prompt", "Do this: " + big, "small", "small", "the first user message (seq 2), pinned verbatim"},
		{"assistant message", "Write BIG.md.", big, "small", "the assistant message at seq 7"},
		{"tool result", "Read BIG.md.", "small", big, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			if err := os.WriteFile(filepath.Join(src, "BIG.md"), []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			script := provider.Script{Turns: []provider.ScriptTurn{
				{Text: "Reading.", ToolCalls: []provider.ScriptCall{{Name: "read_file", Args: json.RawMessage(`{"path":"BIG.md"}`)}}},
				{Text: "Writing.", ToolCalls: []provider.ScriptCall{{Name: "write_file", Args: json.RawMessage(fmt.Sprintf(`{"path":"OUT.md","content":%q}`, tc.content))}}},
				{Text: "Done."}}}
			reg, err := tools.Builtins("write", []string{"read_file", "write_file"})
			if err != nil {
				t.Fatal(err)
			}
			sp := &spec.Spec{Name: "overflow", Model: spec.Model{Provider: "scripted", ID: "scripted-1", MaxTokens: 2048},
				Prompt: tc.prompt, Mode: "write", MaxTurns: 5, Workspace: spec.Workspace{From: src},
				Compaction: spec.Compaction{Window: 900, Threshold: 0.75}}
			w := &watched{Provider: provider.NewScripted(script, "scripted-1")}
			store := recorder.Store{Root: t.TempDir()}
			res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: w, Tools: reg})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range append(w.turns, w.summ...) {
				if c.tokens > sp.Compaction.Window {
					t.Errorf("a request of %d tokens was sent, over the %d-token window", c.tokens, sp.Compaction.Window)
				}
			}
			if tc.want == "" {
				evs, _, _ := store.Load(res.SessionID)
				var out string
				for _, e := range evs {
					if e.Kind == session.KindToolResult && e.Tool == "read_file" {
						out = e.Output
					}
				}
				if res.Status != session.StatusDone || len(out) >= len(big) || !strings.Contains(out, "bytes elided") {
					t.Fatalf("Start = %+v, read_file output %d bytes: want done with the output cut", res, len(out))
				}
				return
			}
			if res.Status != session.StatusFailed || !errors.Is(res.Err, ErrContextOverflow) ||
				!strings.HasPrefix(res.Reason, ReasonContextOverflow+": ") || !strings.Contains(res.Reason, tc.want) ||
				!strings.Contains(res.Reason, "raise compaction.window") {
				t.Fatalf("Start = %+v, want failed with %s naming %q", res, ReasonContextOverflow, tc.want)
			}
			t.Logf("%s", res.Reason)
		})
	}
}
