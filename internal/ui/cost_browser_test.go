package ui_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/browser"
	"github.com/agentctl/agentctl/internal/testenv/testcli"
	"github.com/agentctl/agentctl/internal/ui"
)

// queryRows runs `agentctl query SQL --format json` in home.
func queryRows(t *testing.T, home, sql string) []map[string]any {
	t.Helper()
	r := testcli.Must(t, home, "query", sql, "--format", "json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		t.Fatalf("query %s: %v\n%s", sql, err, r.Stdout)
	}
	return rows
}

// startRunning records a session that is running (its lease held until
// the test ends) with one model call of known tokens and cost.
func startRunning(t *testing.T, home string) string {
	t.Helper()
	st := recorder.Store{Root: home}
	s, err := st.Create(session.Event{Kind: session.KindSessionStarted, SessionID: "a110000000000001", Name: "still-going", Provider: "scripted", Model: "scripted-live"}, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Append(session.Event{Kind: session.KindSessionFinished, Status: "done"})
		s.Close()
	})
	if _, err := s.Append(session.Event{Kind: session.KindUserMessage, Text: "go"},
		session.Event{Kind: session.KindModelCall, Provider: "scripted", Model: "scripted-live", InputTokens: 3000, OutputTokens: 1000, CostUSD: 2}); err != nil {
		t.Fatal(err)
	}
	return "a110000000000001"
}

func f64(t *testing.T, v any) float64 {
	t.Helper()
	switch x := v.(type) {
	case float64:
		return x
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			t.Fatalf("not a number: %q", x)
		}
		return f
	case nil:
		return 0
	}
	t.Fatalf("not a number: %#v", v)
	return 0
}

// TestCostPage: every figure of the cost page (per model, agent and day,
// the totals, a running session's spend) equals what `agentctl query`
// answers over the same views, the charts draw the same numbers, and the
// hostile session's model name stays text.
func TestCostPage(t *testing.T) {
	b := browser.New(t)
	home := newHome(t)
	runDefault(t, home)
	runDefault(t, home)
	writeHostile(t, home)
	live := startRunning(t, home)
	s := serve(t, home)
	tab := s.open(t, b, "/cost", nil)

	type row struct {
		Key              string
		N, Input, Output float64
		Cost             float64
	}
	read := func(sel string) map[string]row {
		var rows []row
		tab.Eval(`Array.from(document.querySelectorAll('`+sel+` tbody tr')).map(r => ({Key: r.dataset.key,
			N: +r.dataset.n, Input: +r.dataset.input, Output: +r.dataset.output, Cost: +r.dataset.cost}))`, &rows)
		m := map[string]row{}
		for _, r := range rows {
			m[r.Key] = r
		}
		return m
	}
	for _, tt := range []struct {
		table, sql string
	}{
		{"#cost-model", `SELECT model AS key, count(*) AS n, sum(input_tokens) AS i, sum(output_tokens) AS o, sum(cost_usd) AS c
			FROM events WHERE kind = 'model_call' GROUP BY model`},
		{"#cost-agent", `SELECT name AS key, count(*) AS n, sum(input_tokens) AS i, sum(output_tokens) AS o, sum(cost_usd) AS c
			FROM sessions GROUP BY name`},
		{"#cost-day", `SELECT strftime(ts, '%Y-%m-%d') AS key, count(*) AS n, sum(input_tokens) AS i, sum(output_tokens) AS o, sum(cost_usd) AS c
			FROM events WHERE kind = 'model_call' GROUP BY key`},
	} {
		page := read(tt.table)
		want := queryRows(t, home, tt.sql)
		if len(page) != len(want) || len(want) == 0 {
			t.Errorf("%s: %d rows on the page, %d from agentctl query", tt.table, len(page), len(want))
		}
		for _, w := range want {
			key := ui.Shown(fmt.Sprint(w["key"])) // as the page shows recorded text
			got, ok := page[key]
			if !ok {
				t.Errorf("%s: no row %q", tt.table, key)
				continue
			}
			if got.N != f64(t, w["n"]) || got.Input != f64(t, w["i"]) || got.Output != f64(t, w["o"]) || got.Cost != f64(t, w["c"]) {
				t.Errorf("%s %q: page %+v, agentctl query %v", tt.table, key, got, w)
			}
		}
	}
	// The charts draw the table's numbers.
	var bars []struct {
		Label string
		Value float64
	}
	tab.Eval(`Array.from(document.querySelectorAll('#chart-model-cost g.bar')).map(g => ({Label: g.dataset.label, Value: +g.dataset.value}))`, &bars)
	if m := read("#cost-model"); len(bars) != len(m) {
		t.Errorf("the model cost chart has %d bars, the table %d rows", len(bars), len(m))
	} else {
		for _, b := range bars {
			if r, ok := m[b.Label]; ok && r.Cost != b.Value {
				t.Errorf("bar %q is %v, the table says %v", b.Label, b.Value, r.Cost)
			}
		}
	}
	tot := queryRows(t, home, `SELECT sum(cost_usd) AS c, sum(tokens) AS n FROM sessions`)[0]
	var cards struct{ Cost, Tokens float64 }
	tab.Eval(`({Cost: +document.getElementById('total-cost').dataset.value, Tokens: +document.getElementById('total-tokens').dataset.value})`, &cards)
	if cards.Cost != f64(t, tot["c"]) || cards.Tokens != f64(t, tot["n"]) {
		t.Errorf("totals %+v, agentctl query %v", cards, tot)
	}
	run := queryRows(t, home, `SELECT session_id, cost_usd, tokens FROM sessions WHERE status = 'running'`)
	var burn []struct {
		ID           string
		Cost, Tokens float64
	}
	tab.Eval(`Array.from(document.querySelectorAll('#burn-rate tbody tr')).map(r => ({ID: r.dataset.session, Cost: +r.dataset.cost, Tokens: +r.dataset.tokens}))`, &burn)
	if len(run) != 1 || len(burn) != 1 || burn[0].ID != live || burn[0].Cost != f64(t, run[0]["cost_usd"]) || burn[0].Tokens != f64(t, run[0]["tokens"]) {
		t.Errorf("running sessions on the page %+v, agentctl query %v", burn, run)
	}
	if n := tab.Count("#chart-burn g.bar"); n != 1 {
		t.Errorf("the burn rate chart has %d bars, want 1", n)
	}
	if got := tab.Text("#burn"); got == "$0/h" {
		t.Errorf("burn rate %q with a running session that spent $2", got)
	}
	assertPageInert(t, tab, true)
	tab.Screenshot(shots, "cost")
	tab.Clean(s.ownOnly)
}
