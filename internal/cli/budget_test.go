package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// budgetRun writes a spec and its script into a folder, runs it in a fresh
// home and returns the home, the session's events, the exit code, the
// output and how long the run took.
func budgetRun(t *testing.T, spec, script string) (string, []session.Event, int, string, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"agent.yaml": spec, "model.yaml": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	began := time.Now()
	code, out, errOut := agentctl(t, home, "run", filepath.Join(dir, "agent.yaml"), "-q", "--session-id", "b0d6e70000000001")
	took := time.Since(began)
	evs, _, err := recorder.Store{Root: home}.Load("b0d6e70000000001")
	if err != nil && code != 1 {
		t.Fatalf("load the session: %v (run said %s%s)", err, out, errOut)
	}
	return home, evs, code, out + errOut, took
}

func kinds(evs []session.Event, k session.Kind) []session.Event {
	var out []session.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// TestWallDeadlineCancelsTheCall: with max_wall 2s, a call that would run
// for 30 s is cancelled at the deadline, not after it: a real bash
// subprocess in the sandbox (its process tree killed, nothing left alive)
// and a model call (a scripted turn that streams half its text and then
// waits). The run ends budget_exceeded within about the budget, the call
// recorded as cut at the deadline.
func TestWallDeadlineCancelsTheCall(t *testing.T) {
	tests := []struct {
		name, script string
		check        func(t *testing.T, evs []session.Event)
	}{
		{"tool call: bash sleep", `turns:
  - text: "Sleeping."
    tool_calls:
      - {name: bash, args: {command: "echo started > started.txt; sleep 30.2717; echo late > late.txt"}}
  - text: "Woke up."
`, func(t *testing.T, evs []session.Event) {
			res := kinds(evs, session.KindToolResult)
			if len(res) != 1 || res[0].Status != session.ResultCancelled || !strings.Contains(res[0].Error, "cancelled at the max_wall deadline (2s)") {
				t.Fatalf("tool results = %+v, want one cancelled at the max_wall deadline", res)
			}
			if res[0].LatencyMS > 3500 {
				t.Errorf("the call ran %d ms, past the 2 s deadline", res[0].LatencyMS)
			}
			if left := livePidsWith("30.2717"); len(left) > 0 {
				t.Errorf("the sleep outlived the deadline: pids %v", left)
			}
		}},
		{"model call: a turn that waits", `turns:
  - text: "Thinking about this for a long while."
    delay: 30s
  - text: "Done."
`, func(t *testing.T, evs []session.Event) {
			calls := kinds(evs, session.KindModelCall)
			if len(calls) != 1 || calls[0].Error != "cancelled at the max_wall deadline" || calls[0].Text != "Thinking about thi" {
				t.Fatalf("model calls = %+v, want one cut at the deadline with the text it had streamed", calls)
			}
			if n := len(kinds(evs, session.KindAssistantMessage)); n != 0 {
				t.Errorf("%d assistant messages: a cut call is not an answer", n)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, evs, code, out, took := budgetRun(t, `name: wall
model: {provider: scripted, id: scripted-1, script: model.yaml}
prompt: "Wait."
mode: write
tools: [bash]
budget: {max_wall: 2s}
`, tt.script)
			if code != 4 {
				t.Fatalf("exit %d, want 4 (budget_exceeded): %s", code, out)
			}
			if took > 4*time.Second {
				t.Errorf("the run took %s with max_wall 2s", took.Round(time.Millisecond))
			}
			over := kinds(evs, session.KindBudgetExceeded)
			if len(over) != 1 || !strings.HasPrefix(over[0].Reason, "max_wall 2s: ") || !strings.Contains(over[0].Reason, "cancelled at the deadline") {
				t.Fatalf("budget_exceeded = %+v", over)
			}
			if st := session.Fold(evs); st.Status() != session.StatusBudgetExceeded || st.WallSpent > 3500*time.Millisecond {
				t.Errorf("status %s, wall %s", st.Status(), st.WallSpent)
			}
			tt.check(t, evs)
		})
	}
}

// TestCostReservedAtDispatch: a run with max_cost_usd never spends more:
// each call is reserved from its worst case (its input, and its max
// output, at the model's price) and its max output shrinks to what is
// left, so the last call is cut short rather than overspent. A model with
// no price and a cost budget is refused before anything is recorded.
func TestCostReservedAtDispatch(t *testing.T) {
	long := strings.Repeat("a long answer that costs real money ", 12)
	var script strings.Builder
	script.WriteString("turns:\n")
	for range 8 {
		script.WriteString("  - text: \"" + long + "\"\n    tool_calls:\n      - {name: read_file, args: {path: a.txt}}\n")
	}
	script.WriteString("  - text: \"Done.\"\n")
	// $1 and $40 per million tokens: a turn's answer (113 tokens) costs
	// $0.0045, so with max_cost_usd 0.012 the third has about 74 tokens
	// of money left: its max output shrinks to that and cuts it.
	spec := `name: cost
model: {provider: scripted, id: scripted-1, script: model.yaml, price: {input: 1, output: 40}}
prompt: "Spend."
mode: write
tools: [read_file]
budget: {max_cost_usd: 0.012}
`
	home, evs, code, out, _ := budgetRun(t, spec, script.String())
	if code != 4 {
		t.Fatalf("exit %d, want 4 (budget_exceeded): %s", code, out)
	}
	st := session.Fold(evs)
	if st.CostUSD > 0.012 || st.CostUSD < 0.011 {
		t.Errorf("spent $%.5f with max_cost_usd 0.012", st.CostUSD)
	}
	calls := kinds(evs, session.KindModelCall)
	last := calls[len(calls)-1]
	if len(calls) != 3 || last.MaxTokens >= 113 || last.OutputTokens != last.MaxTokens || last.FinishReason != "length" {
		t.Errorf("%d calls, the last with max_tokens %d, output %d, finish %q: want the third cut at a cap shrunk to the money left",
			len(calls), last.MaxTokens, last.OutputTokens, last.FinishReason)
	}
	if r := st.Reason(); !strings.HasPrefix(r, "max_cost_usd 0.0120: the answer was cut at the ") {
		t.Errorf("reason %q", r)
	}
	for _, c := range calls {
		if c.CostUSD <= 0 {
			t.Errorf("model_call %d cost $%v: the spec's price bills it", c.Seq, c.CostUSD)
		}
	}
	if code, out, _ := agentctl(t, home, "replay", "verify", "b0d6e70000000001"); code != 0 {
		t.Errorf("replay verify: exit %d: %s", code, out)
	}

	// No price: refused, nothing recorded.
	noPrice := strings.Replace(spec, ", price: {input: 1, output: 40}", "", 1)
	home, _, code, out, _ = budgetRun(t, noPrice, script.String())
	if code != 1 || !strings.Contains(out, "model scripted-1 has no price") || !strings.Contains(out, "model: {price:") {
		t.Errorf("no price: exit %d: %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(home, "sessions", "b0d6e70000000001")); err == nil {
		t.Error("a refused run left a session")
	}
}
