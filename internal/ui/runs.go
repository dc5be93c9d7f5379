package ui

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
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

// runs is the runs page's index of the history as opened now (made on
// the first request after each opening); call it inside WithDB.
func (s *Server) runs(ctx context.Context, db *query.DB) (*runIndex, error) {
	v, err := s.perDB("runs", func() (any, error) { return loadRunIndex(ctx, db) })
	if err != nil {
		return nil, err
	}
	return v.(*runIndex), nil
}

// textRows is the rows of x whose session has a user or assistant message
// containing text, case aside (as `sessions --text`: query.MessageTextSQL
// and DuckDB's lower, for the texts and the text searched alike): from
// the text index, or by SQL over the events when the messages are past
// its bound. Call it inside WithDB.
func (s *Server) textRows(ctx context.Context, db *query.DB, x *runIndex, text string) ([]int32, error) {
	v, err := s.perDB("runs-text", func() (any, error) { return loadTextIndex(ctx, db, x) })
	if err != nil {
		return nil, err
	}
	if ti := v.(*textIndex); ti != nil {
		res, err := db.Query(ctx, "SELECT lower("+sqlString(text)+")")
		if err != nil {
			return nil, fmt.Errorf("ui: search the messages for %q: %w", text, err)
		}
		return ti.search([]byte(query.Text(res.Rows[0][0]))), nil
	}
	res, err := db.Query(ctx, "SELECT DISTINCT session_id FROM ("+query.MessageTextSQL+") WHERE contains(text, lower("+sqlString(text)+"))")
	if err != nil {
		return nil, fmt.Errorf("ui: search the messages for %q: %w", text, err)
	}
	var rows []int32
	for _, r := range res.Rows {
		if row, ok := x.rowOf(query.Text(r[0])); ok {
			rows = append(rows, row)
		}
	}
	slices.Sort(rows)
	return rows, nil
}

// selectRuns answers the filter f with the page pg of it, from the index
// of the history as it is now.
func (s *Server) selectRuns(ctx context.Context, f runsFilter, pg runsPageReq) (*runIndex, runsSel, error) {
	var x *runIndex
	var sel runsSel
	err := s.WithDB(ctx, func(db *query.DB) error {
		var err error
		if x, err = s.runs(ctx, db); err != nil {
			return err
		}
		sel, err = x.selectRows(f, pg, func() ([]int32, error) { return s.textRows(ctx, db, x, f.Text) })
		return err
	})
	return x, sel, err
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

// cutTag reads a tag filter: k=v (a session with that tag), or k alone
// (a session with the key).
func cutTag(t string) (k, v string, pair bool) { return strings.Cut(t, "=") }

// parseCost reads the cost filter, a number of dollars.
func parseCost(s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, badRequest("cost above %q: want a number of dollars, e.g. 0.05", s)
	}
	return x, nil
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
	NoUsage                                                    bool // tokens and cost not recorded by the source
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
// a time, from the runs index (selectRuns). Exported, it lists every
// selected session on one page (no server to page).
func runsPage(c *Ctx) error {
	f, err := parseRunsFilter(c.R.URL.Query())
	if err != nil {
		return err
	}
	pg := runsPageReq{limit: runsPerPage}
	if c.Static {
		pg.limit = 0
	}
	newer := false
	switch {
	case f.After != "":
		k, err := parseCursor(f.After)
		if err != nil {
			return err
		}
		pg.after = &k
	case f.Before != "":
		k, err := parseCursor(f.Before)
		if err != nil {
			return err
		}
		pg.before, newer = &k, true
	}
	x, sel, err := c.S.selectRuns(c.R.Context(), f, pg)
	if err != nil {
		return err
	}
	d := runsData{F: f, Statuses: runStatuses, Origins: runOrigins, Total: int64(sel.Total)}
	for _, r := range sel.Rows {
		row := x.row(r)
		row.Href = c.Link("/sessions/"+row.SessionID, nil)
		d.Rows = append(d.Rows, row)
	}
	more := sel.more
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

// splitTags reads the tag filters: each tag= value holds one or more
// k=v (or k) separated by spaces, as the form's one field takes them.
func splitTags(vs []string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, strings.Fields(v)...)
	}
	return out
}
