package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

func TestModelBudgetReservation(t *testing.T) {
	msgs := []session.Message{{Role: session.RoleUser, Content: strings.Repeat("x", 392)}} // ~101 tokens
	// $1 per 1M input tokens, $10 per 1M output tokens.
	priced := &spec.Price{Input: 1, Output: 10}
	tests := []struct {
		name     string
		budget   spec.Budget
		price    *spec.Price
		spent    int64
		cost     float64
		wantOut  int64
		wantOver string
	}{
		{"no limit: the spec's max output", spec.Budget{}, nil, 0, 0, 4096, ""},
		{"plenty left", spec.Budget{MaxTokens: 100000}, nil, 1000, 0, 4096, ""},
		{"max output shrinks to what is left", spec.Budget{MaxTokens: 1000}, nil, 500, 0, 399, ""},
		{"input alone does not fit", spec.Budget{MaxTokens: 1000}, nil, 950, 0, 0, "max_tokens 1000"},
		{"cost spent", spec.Budget{MaxCostUSD: 1}, priced, 0, 1.5, 0, "max_cost_usd"},
		// $0.001 left: 101 input tokens cost $0.000101, leaving $0.000899
		// for output at $10/1M: 89 tokens.
		{"max output shrinks to the cost left", spec.Budget{MaxCostUSD: 0.002}, priced, 0, 0.001, 89, ""},
		{"plenty of money: the spec's max output", spec.Budget{MaxCostUSD: 10}, priced, 0, 0, 4096, ""},
		{"the input alone costs more than is left", spec.Budget{MaxCostUSD: 0.001}, priced, 0, 0.00095, 0, "max_cost_usd 0.0010: $0.0009 spent and the next call's 101 input tokens"},
		{"no price: over, never unbounded", spec.Budget{MaxCostUSD: 1}, nil, 0, 0, 0, "max_cost_usd 1.0000: model m has no price"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &run{cfg: Config{Spec: &spec.Spec{Model: spec.Model{ID: "m", MaxTokens: 4096, Price: tt.price}}}, st: newState("")}
			r.st.Budget, r.st.Model = tt.budget.Session(), "m"
			r.st.InputTokens, r.st.CostUSD = tt.spent, tt.cost
			out, over := r.modelBudget(provider.Request{Messages: msgs})
			if out != tt.wantOut || !strings.HasPrefix(over, tt.wantOver) || (tt.wantOver == "") != (over == "") {
				t.Errorf("modelBudget = %d, %q; want %d, %q", out, over, tt.wantOut, tt.wantOver)
			}
		})
	}
}

func TestWallBudgetSpansInvocations(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour + 30*time.Second)
	st := newState("")
	for _, e := range []session.Event{
		{Seq: 1, TS: t0, Kind: session.KindSessionStarted},
		{Seq: 2, TS: t0.Add(40 * time.Second), Kind: session.KindSessionFinished, Status: "awaiting_approval"},
		// an hour waiting for a human does not count
		{Seq: 3, TS: t0.Add(time.Hour), Kind: session.KindApprovalGranted},
	} {
		st.add(e)
	}
	st.Budget = session.Budget{MaxWall: time.Minute}
	r := &run{cfg: Config{Spec: &spec.Spec{}, Clock: func() time.Time { return now }}, st: st}
	if got := r.wall(); got != 70*time.Second {
		t.Fatalf("wall = %s, want 70s (40s before the wait, 30s after)", got)
	}
	if over := r.toolBudget(); !strings.HasPrefix(over, "max_wall 1m0s") {
		t.Errorf("toolBudget = %q", over)
	}
}
