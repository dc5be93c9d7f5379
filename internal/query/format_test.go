package query_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/query"
)

// TestWriteDuckDBTypes: a DATE, TIME or INTERVAL reads in every format as
// DuckDB itself prints it (its cast to VARCHAR), not as Go prints the value
// the driver hands back (a midnight timestamp, {3 0 0}); TIMESTAMPs stay
// RFC 3339. Each row asks the real DuckDB for both.
func TestWriteDuckDBTypes(t *testing.T) {
	db, err := query.Open(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tests := []struct {
		expr string
		want string // "" : DuckDB's own VARCHAR cast
	}{
		{expr: "DATE '2026-12-06'"},
		{expr: "DATE '0001-01-01'"},
		{expr: "DATE '9999-12-31'"},
		{expr: "current_date"},
		{expr: "INTERVAL 3 MONTH"},
		{expr: "INTERVAL 3 DAY"},
		{expr: "INTERVAL 1 DAY"},
		{expr: "INTERVAL 62 SECOND"},
		{expr: "INTERVAL 14 MONTH"},
		{expr: "INTERVAL 12 MONTH"},
		{expr: "-INTERVAL 14 MONTH"},
		{expr: "INTERVAL '1 year 2 months 3 days 04:05:06.789'"},
		{expr: "INTERVAL 1500 MILLISECOND"},
		{expr: "INTERVAL 98 MICROSECOND"},
		{expr: "INTERVAL 30 HOUR"},
		{expr: "INTERVAL 250 HOUR"},
		{expr: "-INTERVAL 1 SECOND"},
		{expr: "INTERVAL '-1 day 01:00:00'"},
		{expr: "INTERVAL 0 SECOND"},
		{expr: "TIMESTAMP '2026-12-06 00:01:02' - TIMESTAMP '2026-12-06 00:00:00'"},
		{expr: "age(TIMESTAMP '2026-12-06', TIMESTAMP '2026-09-05')"},
		{expr: "DATE '0044-03-15 (BC)'"},
		{expr: "TIME '12:34:56'"},
		{expr: "TIME '00:00:00.5'"},
		{expr: "TIMESTAMP '2026-12-06 10:11:12.5'", want: "2026-12-06T10:11:12.5Z"},
		// Nested values are JSON, each interval inside as DuckDB prints it.
		{expr: "[INTERVAL 3 MONTH, INTERVAL 62 SECOND]", want: `["3 months","00:01:02"]`},
		// A MAP (the sessions view's tags) is a JSON object, not Go's
		// map[k:v]; a key that is not a string is its text.
		{expr: "MAP {'env': 'ci', 'team': 'a b'}", want: `{"env":"ci","team":"a b"}`},
		{expr: "MAP {}::MAP(VARCHAR, VARCHAR)", want: `{}`},
		{expr: "MAP {1: INTERVAL 3 MONTH}", want: `{"1":"3 months"}`},
	}
	for _, tt := range tests {
		res, err := db.Query(context.Background(), "SELECT "+tt.expr+" AS v, ("+tt.expr+")::VARCHAR AS duck")
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		want := tt.want
		if want == "" {
			want = res.Rows[0][1].(string)
		}
		res.Columns, res.Types = res.Columns[:1], res.Types[:1]
		res.Rows = [][]any{res.Rows[0][:1]}
		for _, format := range []string{"table", "csv", "jsonl"} {
			var b strings.Builder
			if err := query.Write(&b, res, format); err != nil {
				t.Fatalf("%s %s: %v", tt.expr, format, err)
			}
			var got string
			switch lines := strings.Split(b.String(), "\n"); format {
			case "table":
				got = strings.TrimSpace(lines[1])
			case "csv":
				recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
				if err != nil || len(recs) != 2 {
					t.Fatalf("%s csv: %v in %q", tt.expr, err, b.String())
				}
				got = recs[1][0]
			case "jsonl":
				var row struct{ V json.RawMessage }
				if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
					t.Fatalf("%s jsonl: %v in %s", tt.expr, err, lines[0])
				}
				got = string(row.V)
				if err := json.Unmarshal(row.V, &got); err != nil {
					got = string(row.V) // not a string: a nested value's JSON
				}
			}
			if got != want {
				t.Errorf("%s (%s) %s: got %q, want %q", tt.expr, res.Types[0], format, got, want)
			}
		}
	}
}
