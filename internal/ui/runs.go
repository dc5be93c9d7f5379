package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/session"
)

func init() {
	register(route{pattern: "GET /{$}", handle: func(c *Ctx) error {
		http.Redirect(c.W, c.R, "/runs", http.StatusSeeOther)
		return nil
	}})
	register(route{pattern: "GET /runs", nav: "Runs", navPath: "/runs", order: 10, handle: runsPage})
}

// runsPerPage is how many sessions one page of the list shows.
const runsPerPage = 50

// runsTable is the runs page's copy of the sessions view, made once per
// opening of the database (Server.onceDB). The sessions view folds every
// event of every session on each query (seconds at 100,000 sessions);
// the page filters and pages this table instead, in milliseconds, and
// reads the events only for a text search. sort_us and session_id order
// the list (newest first; a session with no start last) and are the
// paging cursor; ord is that order as one number, which the page sorts by
// (half the CPU of sorting by the pair at 100,000 rows).
const runsTableSQL = `CREATE OR REPLACE TEMP TABLE ui_runs AS
SELECT *, row_number() OVER (ORDER BY sort_us DESC, session_id) AS ord FROM (
SELECT session_id, coalesce(name, '') AS name, coalesce(status, '') AS status, coalesce(reason, '') AS reason,
  origin, coalesce(model, '') AS model, turns::BIGINT AS turns, tool_calls::BIGINT AS tool_calls, tokens::BIGINT AS tokens,
  cost_usd::DOUBLE AS cost_usd, coalesce(duration_ms, 0)::BIGINT AS duration_ms,
  started, coalesce(epoch_us(started), 0) AS sort_us, tags,
  array_to_string(list_sort(list_transform(map_entries(tags), lambda e: e.key || '=' || e.value)), ' ') AS tag_text,
  coalesce(user_id, '') AS user_id
FROM sessions) ORDER BY ord`

// runsTable makes ui_runs, once per opening of db; call it inside WithDB.
func (s *Server) runsTable(ctx context.Context, db *query.DB) error {
	return s.onceDB("ui_runs", func() error {
		_, err := db.Query(ctx, runsTableSQL)
		return err
	})
}

// maxTextTable bounds the message text the text search keeps in memory.
const maxTextTable = 128 << 20

// textTable makes ui_text, the messages the text search reads (session_id,
// lower(text)), on the first search after db was opened: a table when the
// messages' text is at most maxTextTable bytes (a search then takes
// milliseconds, not the scan of every event), else a view over the events
// (the same answer, slower, and no memory spent). Call it inside WithDB.
func (s *Server) textTable(ctx context.Context, db *query.DB) error {
	return s.onceDB("ui_text", func() error {
		msgs := query.MessageTextSQL
		res, err := db.Query(ctx, `SELECT coalesce(sum(strlen(text)), 0)::BIGINT FROM events WHERE kind IN ('user_message', 'assistant_message')`)
		if err != nil {
			return err
		}
		kind := "VIEW"
		if len(res.Rows) == 1 && query.Int(res.Rows[0][0]) <= maxTextTable {
			kind = "TABLE"
		}
		_, err = db.Query(ctx, "DROP VIEW IF EXISTS ui_text; DROP TABLE IF EXISTS ui_text; CREATE TEMP "+kind+" ui_text AS "+msgs)
		return err
	})
}

// runsFilter is the runs page's query string: every filter the URL keeps,
// so a filtered list can be pasted.
type runsFilter struct {
	Status, Origin, Model, Agent, User, Text string
	Since, Until                             string
	CostAbove                                string
	Tags                                     []string // k=v, or k alone: has the tag
	IDs                                      []string // only these sessions (the export's selection)
	// After and Before are paging cursors (sortKey): the page after
	// (older than) or before (newer than) a row.
	After, Before string
}

// maxFilter bounds a filter value: the page's own fields are short, and a
// longer one is not a filter anyone typed.
const maxFilter = 500

func parseRunsFilter(q url.Values) (runsFilter, error) {
	f := runsFilter{
		Status: q.Get("status"), Origin: q.Get("origin"), Model: q.Get("model"), Agent: q.Get("agent"),
		User: q.Get("user"), Text: q.Get("q"), Since: q.Get("since"), Until: q.Get("until"),
		CostAbove: q.Get("cost"), Tags: splitTags(q["tag"]), IDs: nonEmpty(q["id"]),
		After: q.Get("after"), Before: q.Get("before"),
	}
	all := append([]string{f.Status, f.Origin, f.Model, f.Agent, f.User, f.Text, f.Since, f.Until, f.CostAbove, f.After, f.Before}, f.Tags...)
	for _, v := range append(all, f.IDs...) {
		if len(v) > maxFilter {
			return f, badRequest("a filter value is %d bytes; at most %d", len(v), maxFilter)
		}
	}
	if len(f.Tags) > 20 || len(f.IDs) > 10000 {
		return f, badRequest("too many tag or id filters (%d, %d)", len(f.Tags), len(f.IDs))
	}
	return f, nil
}

func nonEmpty(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// values is the filter as a query string, without the cursors: the base
// of the pager's links.
func (f runsFilter) values() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "origin": f.Origin, "model": f.Model, "agent": f.Agent,
		"user": f.User, "q": f.Text, "since": f.Since, "until": f.Until, "cost": f.CostAbove} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for _, t := range f.Tags {
		q.Add("tag", t)
	}
	for _, id := range f.IDs {
		q.Add("id", id)
	}
	return q
}

// Active reports whether any filter narrows the list.
func (f runsFilter) Active() bool { return len(f.values()) > 0 }

// TagText is the tag filters as the form's field shows them.
func (f runsFilter) TagText() string { return strings.Join(f.Tags, " ") }

// where is the filter as a SQL condition over ui_runs. Values are SQL
// literals (sqlString): the query package takes no parameters.
func (f runsFilter) where() (string, error) {
	conds := []string{"true"}
	eq := func(col, v string) {
		if v != "" {
			conds = append(conds, col+" = "+sqlString(v))
		}
	}
	eq("status", f.Status)
	eq("origin", f.Origin)
	eq("model", f.Model)
	eq("name", f.Agent)
	eq("user_id", f.User)
	for _, t := range f.Tags {
		k, v, ok := strings.Cut(t, "=")
		if ok {
			conds = append(conds, fmt.Sprintf("tags[%s] = %s", sqlString(k), sqlString(v)))
		} else {
			conds = append(conds, fmt.Sprintf("map_contains(tags, %s)", sqlString(k)))
		}
	}
	if len(f.IDs) > 0 {
		ids := make([]string, len(f.IDs))
		for i, id := range f.IDs {
			ids[i] = sqlString(id)
		}
		conds = append(conds, "session_id IN ("+strings.Join(ids, ", ")+")")
	}
	for _, b := range []struct {
		v, op, name string
		end         bool
	}{{f.Since, ">=", "since", false}, {f.Until, "<", "until", true}} {
		if b.v == "" {
			continue
		}
		t, err := parseWhen(b.v, b.end)
		if err != nil {
			return "", badRequest("%s %q: %v", b.name, b.v, err)
		}
		conds = append(conds, fmt.Sprintf("sort_us %s %d", b.op, t.UnixMicro()))
	}
	if f.CostAbove != "" {
		x, err := strconv.ParseFloat(f.CostAbove, 64)
		if err != nil || x != x {
			return "", badRequest("cost above %q: want a number of dollars, e.g. 0.05", f.CostAbove)
		}
		conds = append(conds, fmt.Sprintf("cost_usd > %g", x))
	}
	if f.Text != "" {
		conds = append(conds, fmt.Sprintf(`session_id IN (SELECT session_id FROM ui_text WHERE contains(text, lower(%s)))`, sqlString(f.Text)))
	}
	return strings.Join(conds, " AND "), nil
}

// parseWhen reads a date (the form's date field, local time) or an
// RFC 3339 time. A date as an end bound means the end of that day.
func parseWhen(s string, end bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.ParseInLocation("2006-01-02", s, time.Local)
	if err != nil {
		return t, fmt.Errorf("want a date (2026-12-06) or an RFC 3339 time")
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// sqlString is s as a DuckDB string literal: quotes doubled, nothing else
// is special in one.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// cursor is a row's place in the list's order: its sort_us and id.
type cursor struct {
	us int64
	id string
}

func (k cursor) String() string { return fmt.Sprintf("%d_%s", k.us, k.id) }

func parseCursor(s string) (cursor, error) {
	us, id, ok := strings.Cut(s, "_")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" {
		return cursor{}, badRequest("page cursor %q is not one this page made; start again from the first page", s)
	}
	return cursor{n, id}, nil
}

// runRow is one session in the list.
type runRow struct {
	SessionID, Name, Status, Reason, Origin, Model, Tags, User string
	Turns, ToolCalls, Tokens                                   int64
	Cost                                                       float64
	Duration                                                   time.Duration
	Started                                                    time.Time
	Href                                                       string
	key                                                        cursor
}

// runsData is the runs page.
type runsData struct {
	F        runsFilter
	Rows     []runRow
	Total    int64
	Statuses []string
	Origins  []string
	// Newer and Older are the pager's links; empty at either end.
	Newer, Older, First string
}

var (
	runStatuses = []string{string(session.StatusDone), string(session.StatusFailed), string(session.StatusRunning),
		string(session.StatusAwaitingApproval), string(session.StatusNeedsHuman), string(session.StatusBudgetExceeded),
		string(session.StatusInterrupted), string(session.StatusCrashed), string(session.StatusCorrupt), string(session.StatusImported)}
	runOrigins = []string{"run", "proxy", "collect", "import"}
)

// runsPage lists the sessions the filter selects, newest first, a page at
// a time: one SQL statement filters, counts and cuts the page. Exported,
// it lists every selected session on one page (no server to page).
func runsPage(c *Ctx) error {
	f, err := parseRunsFilter(c.R.URL.Query())
	if err != nil {
		return err
	}
	where, err := f.where()
	if err != nil {
		return err
	}
	page, order, newer := "true", "ord", false
	switch {
	case f.After != "":
		k, err := parseCursor(f.After)
		if err != nil {
			return err
		}
		page = fmt.Sprintf("(sort_us < %d OR (sort_us = %d AND session_id > %s))", k.us, k.us, sqlString(k.id))
	case f.Before != "":
		k, err := parseCursor(f.Before)
		if err != nil {
			return err
		}
		page = fmt.Sprintf("(sort_us > %d OR (sort_us = %d AND session_id < %s))", k.us, k.us, sqlString(k.id))
		order, newer = "ord DESC", true
	}
	limit := fmt.Sprintf("LIMIT %d", runsPerPage+1)
	if c.Static {
		limit = ""
	}
	cols := `session_id, name, status, reason, origin, model, turns, tool_calls, tokens, cost_usd, duration_ms, started, tag_text, user_id, sort_us`
	q := fmt.Sprintf(`SELECT %s, (SELECT count(*) FROM ui_runs WHERE %s) AS total
FROM ui_runs WHERE (%s) AND %s ORDER BY %s %s`, cols, where, where, page, order, limit)
	if f.Text != "" {
		// The text search is the costly condition: evaluated once, into
		// the narrow list of the matching rows' keys.
		q = fmt.Sprintf(`WITH f AS MATERIALIZED (SELECT session_id, sort_us, ord FROM ui_runs WHERE %s)
SELECT %s, (SELECT count(*) FROM f) AS total FROM ui_runs
WHERE session_id IN (SELECT session_id FROM f WHERE %s ORDER BY %s %s) ORDER BY %s`, where, cols, page, order, limit, order)
	}
	var res *query.Result
	err = c.S.WithDB(c.R.Context(), func(db *query.DB) error {
		if err := c.S.runsTable(c.R.Context(), db); err != nil {
			return err
		}
		if f.Text != "" {
			if err := c.S.textTable(c.R.Context(), db); err != nil {
				return err
			}
		}
		res, err = db.Query(c.R.Context(), q)
		return err
	})
	if err != nil {
		return err
	}
	d := runsData{F: f, Statuses: runStatuses, Origins: runOrigins}
	for _, r := range res.Rows {
		row := runRow{
			SessionID: query.Text(r[0]), Name: query.Text(r[1]), Status: query.Text(r[2]), Reason: query.Text(r[3]), Origin: query.Text(r[4]), Model: query.Text(r[5]),
			Turns: query.Int(r[6]), ToolCalls: query.Int(r[7]), Tokens: query.Int(r[8]), Cost: flt(r[9]),
			Duration: time.Duration(query.Int(r[10])) * time.Millisecond, Tags: query.Text(r[12]), User: query.Text(r[13]),
		}
		if t, ok := r[11].(time.Time); ok {
			row.Started = t
		}
		row.key = cursor{query.Int(r[14]), row.SessionID}
		row.Href = c.Link("/sessions/"+row.SessionID, nil)
		d.Total = query.Int(r[15])
		d.Rows = append(d.Rows, row)
	}
	more := len(d.Rows) > runsPerPage && !c.Static
	if more {
		d.Rows = d.Rows[:runsPerPage]
	}
	if newer {
		for i, j := 0, len(d.Rows)-1; i < j; i, j = i+1, j-1 {
			d.Rows[i], d.Rows[j] = d.Rows[j], d.Rows[i]
		}
	}
	if len(d.Rows) > 0 && !c.Static {
		base := f.values()
		link := func(k, v string) string {
			q := url.Values{}
			for k, vs := range base {
				q[k] = vs
			}
			q.Set(k, v)
			return c.Link("/runs", q)
		}
		// Older rows exist when a page going older was cut, or when a
		// page going newer came from an older one; newer rows likewise.
		if (!newer && more) || newer {
			d.Older = link("after", d.Rows[len(d.Rows)-1].key.String())
		}
		if (newer && more) || f.After != "" {
			d.Newer = link("before", d.Rows[0].key.String())
		}
		if d.Newer != "" {
			d.First = c.Link("/runs", base)
		}
	}
	return c.Render("runs.html", "Runs", d)
}

func flt(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	}
	return 0
}

// splitTags reads the tag filters: each tag= value holds one or more
// k=v (or k) separated by spaces, as the form's one field takes them.
func splitTags(vs []string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, strings.Fields(v)...)
	}
	return out
}
