package ui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
)

func init() {
	register(route{pattern: "GET /cost", nav: "Cost", navPath: "/cost", order: 50, handle: costPage})
}

// The cost page's figures are these queries' rows, run as `agentctl
// query` runs them (the page shows each one, so a reader can run it):
// whatever the page says, the views say. Tokens and cost are those of
// model_call events, as the sessions view sums them.
const (
	costByModelSQL = `SELECT coalesce(nullif(model, ''), '(unknown)') AS model, count(*) AS calls,
  CAST(sum(input_tokens) AS BIGINT) AS input_tokens, CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
  sum(cost_usd) AS cost_usd
FROM events WHERE kind = 'model_call' GROUP BY 1 ORDER BY cost_usd DESC, model`
	// costByAgentSQL is the sessions view's name and model_call sums
	// (its definitions) per session, from the events: the view itself
	// also pairs every tool call, seconds of work at a million events
	// that this page does not need.
	costByAgentSQL = `WITH s AS (SELECT session_id, arg_min(name, seq) FILTER (WHERE kind = 'session_started') AS name,
    coalesce(sum(input_tokens) FILTER (WHERE kind = 'model_call'), 0) AS input_tokens,
    coalesce(sum(output_tokens) FILTER (WHERE kind = 'model_call'), 0) AS output_tokens,
    coalesce(sum(cost_usd) FILTER (WHERE kind = 'model_call'), 0) AS cost_usd
  FROM events GROUP BY session_id)
SELECT coalesce(nullif(name, ''), '(unnamed)') AS agent, count(*) AS sessions,
  CAST(sum(input_tokens) AS BIGINT) AS input_tokens, CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
  sum(cost_usd) AS cost_usd
FROM s GROUP BY 1 ORDER BY cost_usd DESC, agent`
	costByDaySQL = `SELECT strftime(ts, '%Y-%m-%d') AS day, count(*) AS calls,
  CAST(sum(input_tokens) AS BIGINT) AS input_tokens, CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
  sum(cost_usd) AS cost_usd
FROM events WHERE kind = 'model_call' GROUP BY 1 ORDER BY day DESC LIMIT 90`
	// costRunningSQL asks the sessions view (which says what running
	// is) about the sessions that may be running ($IDS: those read from
	// their logs whose lease a process holds now); with none, the page
	// does not ask.
	costRunningSQL = `SELECT session_id, name, model, started, tokens, cost_usd,
  greatest(date_diff('second', started, now()), 1) AS seconds
FROM sessions WHERE status = 'running' AND session_id IN ($IDS) ORDER BY started`
)

// costRow is one line of a breakdown: a model, an agent or a day.
type costRow struct {
	Key                       string
	N                         int64 // calls or sessions
	InputTokens, OutputTokens int64
	CostUSD                   float64
}

// burnRow is a running session and what it spends per hour so far.
type burnRow struct {
	SessionID, Name, Model string
	Href                   string
	Started                time.Time
	Tokens                 int64
	CostUSD                float64
	Seconds                int64
	CostPerHour            float64
	TokensPerMinute        float64
}

type costSection struct {
	ID, Title, Key, N string
	SQL               string
	Rows              []costRow
	Cost, Tokens      *chart
}

type costData struct {
	Sections []costSection
	Running  []burnRow
	// Burn is the running sessions' cost per hour together.
	Burn, BurnTokens float64
	RunningSQL       string
	BurnChart        *chart
	TotalCost        float64
	TotalTokens      int64
}

func costPage(c *Ctx) error {
	d := &costData{RunningSQL: costRunningSQL}
	secs := []costSection{
		{ID: "model", Title: "By model", Key: "Model", N: "Calls", SQL: costByModelSQL},
		{ID: "agent", Title: "By agent", Key: "Agent", N: "Sessions", SQL: costByAgentSQL},
		{ID: "day", Title: "By day", Key: "Day", N: "Calls", SQL: costByDaySQL},
	}
	err := c.S.WithDB(c.R.Context(), func(db *query.DB) error {
		for i := range secs {
			rows, err := costRows(c.R.Context(), db, secs[i].SQL)
			if err != nil {
				return err
			}
			secs[i].Rows = rows
		}
		var live []string
		for id := range db.Logs() {
			if recorder.Live(c.S.opts.Store.SessionDir(id)) {
				live = append(live, sqlLit(id))
			}
		}
		if len(live) == 0 {
			return nil
		}
		sort.Strings(live)
		d.RunningSQL = strings.Replace(costRunningSQL, "$IDS", strings.Join(live, ", "), 1)
		res, err := db.Query(c.R.Context(), d.RunningSQL)
		if err != nil {
			return fmt.Errorf("ui: cost: running sessions: %w", err)
		}
		for _, r := range res.Rows {
			b := burnRow{SessionID: query.Text(r[0]), Name: query.Text(r[1]), Model: query.Text(r[2])}
			b.Href = c.Link("/sessions/"+b.SessionID, nil)
			b.Started, _ = r[3].(time.Time)
			tok, _ := query.Number(r[4])
			b.CostUSD, _ = query.Number(r[5])
			s, _ := query.Number(r[6])
			b.Tokens, b.Seconds = int64(tok), int64(s)
			b.CostPerHour = b.CostUSD / s * 3600
			b.TokensPerMinute = tok / s * 60
			d.Burn += b.CostPerHour
			d.BurnTokens += b.TokensPerMinute
			d.Running = append(d.Running, b)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(d.Running) > 0 {
		pts := make([]chartPoint, len(d.Running))
		for i, b := range d.Running {
			label := b.SessionID
			if b.Name != "" {
				label = b.Name + " " + b.SessionID[:min(8, len(b.SessionID))]
			}
			pts[i] = chartPoint{label, b.CostPerHour}
		}
		d.BurnChart = barChart("chart-burn", "Cost per hour of each running session", pts, func(f float64) string { return formatCost(f) + "/h" })
	}
	for _, r := range secs[1].Rows {
		d.TotalCost += r.CostUSD
		d.TotalTokens += r.InputTokens + r.OutputTokens
	}
	for i := range secs {
		s := &secs[i]
		cost := make([]chartPoint, len(s.Rows))
		tok := make([]chartPoint, len(s.Rows))
		for j, r := range s.Rows {
			cost[j] = chartPoint{r.Key, r.CostUSD}
			tok[j] = chartPoint{r.Key, float64(r.InputTokens + r.OutputTokens)}
		}
		fc := func(f float64) string { return formatCost(f) }
		ft := func(f float64) string { return formatTokens(int64(f)) }
		if s.ID == "day" {
			// Newest first in the table, oldest first along the axis.
			for l, r := 0, len(cost)-1; l < r; l, r = l+1, r-1 {
				cost[l], cost[r] = cost[r], cost[l]
				tok[l], tok[r] = tok[r], tok[l]
			}
			s.Cost = columnChart("chart-day-cost", "Cost per day", cost, fc)
			s.Tokens = columnChart("chart-day-tokens", "Tokens per day", tok, ft)
			continue
		}
		s.Cost = barChart("chart-"+s.ID+"-cost", "Cost "+lower(s.Title), cost, fc)
		s.Tokens = barChart("chart-"+s.ID+"-tokens", "Tokens "+lower(s.Title), tok, ft)
	}
	d.Sections = secs
	return c.Render("cost.html", "Cost", d)
}

func lower(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
}

// costRows runs a breakdown query (key, n, input, output, cost).
func costRows(ctx context.Context, db *query.DB, q string) ([]costRow, error) {
	res, err := db.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("ui: cost: %w", err)
	}
	out := make([]costRow, 0, len(res.Rows))
	for _, r := range res.Rows {
		n, _ := query.Number(r[1])
		in, _ := query.Number(r[2])
		o, _ := query.Number(r[3])
		cost, _ := query.Number(r[4])
		out = append(out, costRow{Key: query.Text(r[0]), N: int64(n), InputTokens: int64(in), OutputTokens: int64(o), CostUSD: cost})
	}
	return out, nil
}
