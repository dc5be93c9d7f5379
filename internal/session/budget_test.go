package session

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestBudgetInForceFromTheFold: the budget in force is the header's spec
// budget with each budget_changed laid over it (a key present sets, 0
// lifts, a key absent keeps), and it survives a checkpoint's round trip.
func TestBudgetInForceFromTheFold(t *testing.T) {
	hdrSpec, _ := json.Marshal(map[string]any{"name": "x", "budget": map[string]any{"max_wall": "2s", "max_tool_calls": 3, "max_tokens": 900}})
	evs := []Event{
		{Seq: 1, Kind: KindSessionStarted, Spec: hdrSpec},
		{Seq: 2, Kind: KindBudgetChanged, Attrs: json.RawMessage(`{"max_wall":"1m0s"}`)},
		{Seq: 3, Kind: KindBudgetChanged, Attrs: json.RawMessage(`{"max_tool_calls":0,"max_cost_usd":0.5}`)},
		{Seq: 4, Kind: KindBudgetChanged, Attrs: json.RawMessage(`{"max_turns":7}`)}, // not the runner's: changes nothing
	}
	want := Budget{MaxWall: time.Minute, MaxCostUSD: 0.5, MaxTokens: 900}
	st := Fold(evs)
	if st.Budget != want {
		t.Fatalf("budget = %+v, want %+v", st.Budget, want)
	}
	b, _ := json.Marshal(st)
	var back State
	if err := json.Unmarshal(b, &back); err != nil || back.Budget != want {
		t.Errorf("serialized and read back: %+v (%v)", back.Budget, err)
	}
}

func TestBudgetSet(t *testing.T) {
	tests := []struct {
		setting string
		want    Budget
		err     string
	}{
		{"max_wall=10m", Budget{MaxWall: 10 * time.Minute}, ""},
		{"max_tokens=5000", Budget{MaxTokens: 5000}, ""},
		{"max_tool_calls=0", Budget{}, ""},
		{"max_cost_usd=$0.50", Budget{MaxCostUSD: 0.5}, ""},
		{" max_cost_usd = 1.25 ", Budget{MaxCostUSD: 1.25}, ""},
		{"max_wall=-1s", Budget{}, "want a duration"},
		{"max_tokens=lots", Budget{}, "want a whole number of tokens"},
		{"max_turns=3", Budget{}, `unknown key "max_turns"`},
		{"max_wall", Budget{}, "want KEY=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			var b Budget
			err := b.Set(tt.setting)
			if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Set(%q) = %v, want error %q", tt.setting, err, tt.err)
			}
			if err == nil && b != tt.want {
				t.Errorf("Set(%q) = %+v, want %+v", tt.setting, b, tt.want)
			}
		})
	}
}

// TestBudgetChangeRoundTrips: the attrs BudgetChange records, laid over
// the old budget, give the new one, and name only the keys that changed.
func TestBudgetChangeRoundTrips(t *testing.T) {
	old := Budget{MaxTokens: 100, MaxWall: 2 * time.Second}
	nw := Budget{MaxTokens: 100, MaxCostUSD: 0.25}
	attrs, keys := BudgetChange(old, nw)
	if strings.Join(keys, ",") != "max_cost_usd,max_wall" || string(attrs) != `{"max_cost_usd":0.25,"max_wall":"0s"}` {
		t.Fatalf("BudgetChange = %s %v", attrs, keys)
	}
	got := old
	if err := got.Apply(attrs); err != nil || got != nw {
		t.Errorf("old + attrs = %+v (%v), want %+v", got, err, nw)
	}
	if d := DescribeChange(old, nw); d != "max_cost_usd no limit → 0.25, max_wall 2s → no limit" {
		t.Errorf("DescribeChange = %q", d)
	}
	if _, keys := BudgetChange(old, old); len(keys) != 0 {
		t.Errorf("no change named %v", keys)
	}
}
