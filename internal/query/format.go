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
					rec[i] = text(v)
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
				enc, err := marshal(v)
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
			s := termsafe.String(strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(text(v)))
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
