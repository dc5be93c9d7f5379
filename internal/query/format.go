package query

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/agentctl/agentctl/internal/termsafe"
)

// Formats lists the output formats of Write.
var Formats = []string{"table", "csv", "json", "jsonl"}

// Write prints res in format: table (aligned columns, long cells cut),
// csv (with a header row), json (one array of objects) or jsonl (one
// object per line). In json and jsonl, NULL is null and timestamps are
// RFC 3339 strings; in table and csv, NULL is "NULL" and "" respectively.
func Write(w io.Writer, res *Result, format string) error {
	switch format {
	case "table", "":
		return writeTable(w, res)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(res.Columns)
		for _, row := range res.Rows {
			rec := make([]string, len(row))
			for i, v := range row {
				if v != nil {
					rec[i] = text(duckValue(v, res.typeOf(i)))
				}
			}
			cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	case "json", "jsonl":
		if format == "json" {
			if _, err := io.WriteString(w, "["); err != nil {
				return err
			}
		}
		for i, row := range res.Rows {
			var b bytes.Buffer
			b.WriteByte('{')
			for j, v := range row {
				if j > 0 {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(res.Columns[j])
				b.Write(k)
				b.WriteByte(':')
				enc, err := marshal(duckValue(v, res.typeOf(j)))
				if err != nil {
					return fmt.Errorf("query: column %s: %w", res.Columns[j], err)
				}
				b.Write(enc)
			}
			b.WriteByte('}')
			sep := "\n"
			if format == "json" {
				sep = ""
				if i > 0 {
					w.Write([]byte(",\n"))
				}
			}
			b.WriteString(sep)
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
		}
		if format == "json" {
			_, err := io.WriteString(w, "]\n")
			return err
		}
		return nil
	}
	return fmt.Errorf("query: unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

const maxCell = 60

func writeTable(w io.Writer, res *Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, termsafe.String(strings.Join(res.Columns, "\t")))
	for _, row := range res.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			if v == nil {
				cells[i] = "NULL"
				continue
			}
			s := termsafe.String(strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(text(duckValue(v, res.typeOf(i)))))
			if utf8.RuneCountInString(s) > maxCell {
				s = string([]rune(s)[:maxCell-1]) + "…"
			}
			cells[i] = s
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "(%d rows)\n", len(res.Rows))
	return err
}

// typeOf is the DuckDB type name of column i, "" when unknown.
func (r *Result) typeOf(i int) string {
	if i < len(r.Types) {
		return r.Types[i]
	}
	return ""
}

// duckValue is where a value the driver returned becomes what every format
// prints, for the types whose Go value reads differently from DuckDB's own
// text: a DATE or TIME comes back as a time.Time (a midnight timestamp, a
// timestamp in year 1) and an INTERVAL as a struct ({3 0 0}). Those are
// printed as DuckDB casts them to VARCHAR (2026-12-06, 12:34:56, 3 months,
// 00:01:02), in table, csv and json alike; an INTERVAL inside a list, map
// or struct too. A MAP becomes an object keyed by its keys' text. A DATE or TIME nested in one keeps the timestamp form:
// only a column's own type is known here.
func duckValue(v any, typ string) any {
	switch x := v.(type) {
	case time.Time:
		switch typ {
		case "DATE":
			return duckDate(x)
		case "TIME":
			return duckTime(x)
		}
	case duckdb.Interval:
		return duckInterval(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = duckValue(e, "")
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = duckValue(e, "")
		}
		return out
	case duckdb.OrderedMap:
		// A MAP is an object of its keys' text (JSON has no other keys),
		// in key order as every object here is.
		keys, vals := x.Keys(), x.Values()
		out := make(map[string]any, len(keys))
		for i, k := range keys {
			out[text(duckValue(k, ""))] = duckValue(vals[i], "")
		}
		return out
	}
	return v
}

// duckDate prints a date as DuckDB does: YYYY-MM-DD, and a year before 1
// as its year BC ("0044-03-15 (BC)").
func duckDate(t time.Time) string {
	y, m, d := t.Date()
	if y <= 0 {
		return fmt.Sprintf("%04d-%02d-%02d (BC)", 1-y, m, d)
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
}

// duckTime prints a time of day as DuckDB does: HH:MM:SS, with the
// fraction of a second when there is one, its trailing zeros cut.
func duckTime(t time.Time) string {
	return clock(int64(t.Hour())*3600e6+int64(t.Minute())*60e6+int64(t.Second())*1e6+int64(t.Nanosecond()/1000), false)
}

// duckInterval prints an interval as DuckDB's cast to VARCHAR does: years,
// months and days as words ("1 year 2 months 3 days"), then the time as
// [-]HH:MM:SS[.ffffff], "00:00:00" for an empty interval.
func duckInterval(iv duckdb.Interval) string {
	var parts []string
	word := func(n int64, unit string) {
		if n == 0 {
			return
		}
		if n != 1 && n != -1 {
			unit += "s"
		}
		parts = append(parts, strconv.FormatInt(n, 10)+" "+unit)
	}
	word(int64(iv.Months/12), "year")
	word(int64(iv.Months%12), "month")
	word(int64(iv.Days), "day")
	if iv.Micros != 0 || len(parts) == 0 {
		parts = append(parts, clock(iv.Micros, true))
	}
	return strings.Join(parts, " ")
}

// clock prints micros as [-]HH:MM:SS[.ffffff]; hours may pass 24 in an
// interval.
func clock(micros int64, signed bool) string {
	sign := ""
	u := uint64(micros)
	if signed && micros < 0 {
		sign, u = "-", uint64(-micros) // two's complement: -MinInt64 is still right as uint64
	}
	frac := u % 1e6
	sec := u / 1e6
	s := fmt.Sprintf("%s%02d:%02d:%02d", sign, sec/3600, sec/60%60, sec%60)
	if frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
	}
	return s
}

// text renders a non-NULL value as plain text.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case *big.Int:
		return x.String()
	case fmt.Stringer:
		return x.String()
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
}

func marshal(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return []byte("null"), nil
	case []byte:
		return json.Marshal(string(x))
	case time.Time:
		return json.Marshal(x.UTC().Format(time.RFC3339Nano))
	case float64, float32, int, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool, string:
		return json.Marshal(x)
	case *big.Int:
		return []byte(x.String()), nil
	case map[string]any, []any:
		return json.Marshal(x)
	}
	if b, err := json.Marshal(v); err == nil {
		return b, nil
	}
	return json.Marshal(text(v))
}
