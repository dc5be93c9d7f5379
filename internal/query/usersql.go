package query

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// RefusedError is SQL that UserSQL does not run, with why.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string { return e.Why }

// UserSQL runs q, a single SELECT, on d, which it confines first (Confine,
// as a suite's sql: is), and returns at most maxRows+1 rows of it (one
// more than maxRows says the answer was capped). who names the caller in a
// refusal ("the SQL page", "the query tool").
//
// It is for SQL that is not the user's own at their own prompt: the UI's
// SQL page and the MCP server's query tool, where the text comes from a
// browser or a model. The confinement cannot be undone on a database, so d
// must be a database of the caller's own, opened for this. On top, only a
// single SELECT passes (DuckDB's own parser says which statement it is:
// json_serialize_sql serializes SELECTs only), so COPY, ATTACH, INSTALL,
// LOAD, SET, CREATE and PRAGMA are refused by name before anything runs,
// and a query may not write even into the folders the confinement allows.
func (d *DB) UserSQL(ctx context.Context, q string, maxRows int, who string) (*Result, error) {
	if err := d.Confine(ctx); err != nil {
		return nil, err
	}
	if err := d.selectOnly(ctx, q, who); err != nil {
		return nil, err
	}
	body := strings.TrimRight(q, "; \t\r\n")
	return d.Query(ctx, fmt.Sprintf("SELECT * FROM (\n%s\n) LIMIT %d", body, maxRows+1))
}

// selectOnly refuses anything but one SELECT (WITH, FROM-first,
// DESCRIBE, SHOW and SUMMARIZE are SELECTs to DuckDB), by DuckDB's parser.
func (d *DB) selectOnly(ctx context.Context, q, who string) error {
	res, err := d.Query(ctx, "SELECT json_serialize_sql("+quote(q)+")")
	if err != nil {
		return err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return fmt.Errorf("query: the parser gave no answer")
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
			return fmt.Errorf("query: read the parser's answer: %w", err)
		}
		raw = string(b)
	}
	if err := json.Unmarshal([]byte(raw), &parsed); err != nil {
		return fmt.Errorf("query: read the parser's answer: %w", err)
	}
	switch {
	// json_serialize_sql serializes SELECTs only. A syntax error is the
	// parser's (error type "parser") and is shown as DuckDB words it;
	// every other error is a statement it parsed and would not serialize
	// (COPY, ATTACH, PRAGMA, EXPLAIN, ...): refused as not a SELECT, so an
	// error type a later DuckDB adds fails closed, by name.
	case parsed.Error && parsed.ErrorType != "parser":
		return &RefusedError{fmt.Sprintf("refused: %s runs one SELECT over the views, read-only; %q is not a SELECT (COPY, ATTACH, INSTALL, LOAD, SET, CREATE, PRAGMA and other statements are not run here; use agentctl query at your own prompt)", who, firstWord(q))}
	case parsed.Error:
		return &RefusedError{fmt.Sprintf("%s error: %s", parsed.ErrorType, parsed.ErrorMessage)}
	case len(parsed.Statements) != 1:
		return &RefusedError{fmt.Sprintf("refused: give one SELECT, not %d statements", len(parsed.Statements))}
	}
	return nil
}

func firstWord(q string) string {
	f := strings.Fields(q)
	if len(f) == 0 {
		return ""
	}
	w := f[0]
	if len(w) > 20 {
		w = w[:20]
	}
	return strings.ToUpper(w)
}
