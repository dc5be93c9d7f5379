package ui

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/query"
)

func init() {
	register(route{pattern: "GET /sql", nav: "SQL", navPath: "/sql", order: 60, serverOnly: true, handle: sqlPage})
}

const (
	// sqlMaxRows caps the rows a query shows (the page says so).
	sqlMaxRows = 1000
	// sqlMaxQuery bounds the query text.
	sqlMaxQuery = 64 << 10
	// sqlMaxCell cuts a cell's text (a tool's output may be megabytes).
	sqlMaxCell = 2000
	// sqlTimeout stops a query that runs away.
	sqlTimeout = 30 * time.Second
)

// sqlSlots bounds the queries that run at once: each opens its own
// database.
var sqlSlots = make(chan struct{}, 2)

type sqlData struct {
	Q       string
	Columns []string
	Rows    [][]sqlCell
	// Capped: the query returned more than sqlMaxRows rows.
	Capped  bool
	Max     int
	Error   string
	Ran     bool
	Chart   *chart
	Elapsed time.Duration
	// Examples are queries to start from.
	Examples []sqlExample
}

type sqlCell struct {
	Text string
	Null bool
	Num  bool
}

type sqlExample struct{ Title, Q string }

var sqlExamples = []sqlExample{
	{"Sessions by status", "SELECT status, count(*) AS n FROM sessions GROUP BY status ORDER BY n DESC"},
	{"Cost by model", "SELECT model, sum(cost_usd) AS cost_usd FROM sessions GROUP BY model ORDER BY cost_usd DESC"},
	{"Slowest tools", "SELECT tool, avg(latency_ms) AS avg_ms FROM tool_calls GROUP BY tool ORDER BY avg_ms DESC LIMIT 10"},
	{"Failed tool calls", "SELECT session_id, tool, status, error FROM tool_calls WHERE status <> 'ok' LIMIT 50"},
	{"Views and columns", "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' ORDER BY table_name"},
}

func sqlPage(c *Ctx) error {
	q := strings.TrimSpace(c.R.URL.Query().Get("q"))
	d := &sqlData{Q: q, Max: sqlMaxRows, Examples: sqlExamples}
	if q == "" {
		return c.Render("sql.html", "SQL", d)
	}
	d.Ran = true
	if len(q) > sqlMaxQuery {
		d.Error = fmt.Sprintf("the query is %d bytes, more than the %d the page takes", len(q), sqlMaxQuery)
		return c.Render("sql.html", "SQL", d)
	}
	start := time.Now()
	res, err := c.S.runUserSQL(c.R.Context(), q)
	d.Elapsed = time.Since(start).Round(time.Millisecond)
	if err != nil {
		d.Error = err.Error()
		return c.Render("sql.html", "SQL", d)
	}
	fill(d, res)
	return c.Render("sql.html", "SQL", d)
}

// runUserSQL runs q, a single SELECT, on a confined database of its own,
// at most sqlMaxRows+1 rows of it.
//
// The SQL page runs the user's SQL on a database of its own, opened for
// the query and confined (query.DB.UserSQL: Confine, as a suite's sql: is,
// and a single SELECT by DuckDB's parser). The confinement cannot be
// undone on a database, and the other pages' shared database is not
// confined (its SQL is the pages' own, and a remote's cached files lie
// outside the home), so user SQL never runs on it.
func (s *Server) runUserSQL(ctx context.Context, q string) (*query.Result, error) {
	select {
	case sqlSlots <- struct{}{}:
		defer func() { <-sqlSlots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, sqlTimeout)
	defer cancel()
	db, err := s.openDB(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	res, err := db.UserSQL(ctx, q, sqlMaxRows, "the SQL page")
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("the query ran longer than %s and was stopped", sqlTimeout)
	}
	return res, err
}

// fill puts res on the page: each cell as `agentctl query --format csv`
// prints it (query.Write), NULL marked, and a chart when the rows are a
// label and a number.
func fill(d *sqlData, res *query.Result) {
	if len(res.Rows) > sqlMaxRows {
		d.Capped, res.Rows = true, res.Rows[:sqlMaxRows]
	}
	d.Columns = res.Columns
	var buf bytes.Buffer
	if err := query.Write(&buf, res, "csv"); err != nil {
		d.Error = err.Error()
		return
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) != len(res.Rows)+1 {
		d.Error = fmt.Sprintf("ui: sql: read the rows back: %v", err)
		return
	}
	isNum := make([]bool, len(res.Columns))
	for j := range res.Columns {
		isNum[j] = true
		for _, r := range res.Rows {
			if _, ok := query.Number(r[j]); !ok && r[j] != nil {
				isNum[j] = false
				break
			}
		}
	}
	for i, r := range res.Rows {
		row := make([]sqlCell, len(r))
		for j, v := range r {
			row[j] = sqlCell{Text: clip.Runes(recs[i+1][j], sqlMaxCell), Null: v == nil, Num: isNum[j] && v != nil}
		}
		d.Rows = append(d.Rows, row)
	}
	if len(res.Columns) == 2 && isNum[1] && len(res.Rows) > 0 {
		pts := make([]chartPoint, 0, len(res.Rows))
		for i, r := range res.Rows {
			v, _ := query.Number(r[1])
			pts = append(pts, chartPoint{recs[i+1][0], v})
		}
		d.Chart = barChart("sql-chart", res.Columns[1]+" by "+res.Columns[0], pts, plainNumber)
	}
}
