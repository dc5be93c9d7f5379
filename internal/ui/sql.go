package ui

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"time"

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

// sqlRefused is SQL the page does not run, with why.
type sqlRefused struct{ why string }

func (e *sqlRefused) Error() string { return e.why }

// runUserSQL runs q, a single SELECT, on a confined database of its own,
// at most sqlMaxRows+1 rows of it.
//
// The SQL page runs the user's SQL on a database of its own, opened for
// the query and confined (query.DB.Confine, as a suite's sql: is): reads
// of the views' files only, no external access, configuration locked.
// The confinement cannot be undone on a database, and the other pages'
// shared database is not confined (its SQL is the pages' own, and a
// remote's cached files lie outside the home), so user SQL never runs on
// it. On top, only a single SELECT passes (DuckDB's own parser says which
// statement it is: json_serialize_sql serializes SELECTs only), so COPY,
// ATTACH, INSTALL, LOAD, SET, CREATE and PRAGMA are refused by name
// before anything runs, and a query may not write even into the folders
// the confinement allows.
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
	if err := db.Confine(ctx); err != nil {
		return nil, err
	}
	if err := selectOnly(ctx, db, q); err != nil {
		return nil, err
	}
	body := strings.TrimRight(q, "; \t\r\n")
	res, err := db.Query(ctx, fmt.Sprintf("SELECT * FROM (\n%s\n) LIMIT %d", body, sqlMaxRows+1))
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("the query ran longer than %s and was stopped", sqlTimeout)
	}
	return res, err
}

// selectOnly refuses anything but one SELECT (WITH, FROM-first,
// DESCRIBE, SHOW and SUMMARIZE are SELECTs to DuckDB), by DuckDB's parser.
func selectOnly(ctx context.Context, db *query.DB, q string) error {
	res, err := db.Query(ctx, "SELECT json_serialize_sql('"+strings.ReplaceAll(q, "'", "''")+"')")
	if err != nil {
		return err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return fmt.Errorf("ui: sql: the parser gave no answer")
	}
	var parsed struct {
		Error        bool              `json:"error"`
		ErrorType    string            `json:"error_type"`
		ErrorMessage string            `json:"error_message"`
		Statements   []json.RawMessage `json:"statements"`
	}
	// The JSON type arrives decoded (a map) or as text, by driver version.
	raw, ok := res.Rows[0][0].(string)
	if !ok {
		b, err := json.Marshal(res.Rows[0][0])
		if err != nil {
			return fmt.Errorf("ui: sql: read the parser's answer: %w", err)
		}
		raw = string(b)
	}
	if err := json.Unmarshal([]byte(raw), &parsed); err != nil {
		return fmt.Errorf("ui: sql: read the parser's answer: %w", err)
	}
	switch {
	case parsed.Error && parsed.ErrorType == "not implemented":
		return &sqlRefused{fmt.Sprintf("refused: the SQL page runs one SELECT over the views, read-only; %q is not a SELECT (COPY, ATTACH, INSTALL, LOAD, SET, CREATE, PRAGMA and other statements are not run here; use agentctl query at your own prompt)", firstWord(q))}
	case parsed.Error:
		return &sqlRefused{fmt.Sprintf("%s error: %s", parsed.ErrorType, parsed.ErrorMessage)}
	case len(parsed.Statements) != 1:
		return &sqlRefused{fmt.Sprintf("refused: give one SELECT, not %d statements", len(parsed.Statements))}
	}
	return nil
}

func firstWord(q string) string {
	f := strings.Fields(q)
	if len(f) == 0 {
		return ""
	}
	return strings.ToUpper(clip(f[0], 20))
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
			row[j] = sqlCell{Text: clip(recs[i+1][j], sqlMaxCell), Null: v == nil, Num: isNum[j] && v != nil}
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
