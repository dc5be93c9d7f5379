package query_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

func record(t *testing.T, st recorder.Store, id string, finish bool) {
	t.Helper()
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, err := st.Create(session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "n", Provider: "p", Model: "m"}, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs := []session.Event{
		{TS: ts.Add(time.Second), Kind: session.KindModelCall, InputTokens: 10, OutputTokens: 5, CostUSD: 0.5},
		{TS: ts.Add(2 * time.Second), Kind: session.KindToolIntent, CallID: "c1", Tool: "bash"},
		{TS: ts.Add(3 * time.Second), Kind: session.KindToolResult, CallID: "c1", Tool: "bash", Status: "error", LatencyMS: 7},
	}
	if finish {
		evs = append(evs, session.Event{TS: ts.Add(4 * time.Second), Kind: session.KindSessionFinished, Status: "done"})
	}
	if _, err := s.Append(evs...); err != nil {
		t.Fatal(err)
	}
}

func scalar(t *testing.T, db *query.DB, q string) string {
	t.Helper()
	res, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return fmt.Sprint(res.Rows[0]...)
}

func TestViewsOverSealedAndLiveSessions(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync = true
	for i := range 4 {
		record(t, st, fmt.Sprintf("e00000000000000%d", i), i < 3)
	}
	if _, err := h.Seal("e000000000000000", "e000000000000001", "e000000000000002"); err != nil {
		t.Fatal(err)
	}
	db, err := query.Open(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := scalar(t, db, "SELECT count(*) FROM events"); got != "19" {
		t.Errorf("events = %s, want 19 (3 sealed x 5 + 1 live x 4)", got)
	}
	// The fourth log has no end and no process holds its lease: crashed.
	if got := scalar(t, db, "SELECT string_agg(status, ',' ORDER BY session_id) FROM sessions"); got != "done,done,done,crashed" {
		t.Errorf("statuses = %s", got)
	}
	// While a process has it open, it is running.
	w, _, err := st.Open("e000000000000003", recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	db2, err := query.Open(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := scalar(t, db2, "SELECT status FROM sessions WHERE session_id = 'e000000000000003'"); got != "running" {
		t.Errorf("status with the lease held = %s, want running", got)
	}
	db2.Close()
	w.Close()
	if got := scalar(t, db, "SELECT sum(tokens), sum(cost_usd), sum(errors), sum(tool_calls) FROM sessions"); got != "60 2 4 4" {
		t.Errorf("totals = %s, want 60 2 4 4", got)
	}
	if got := scalar(t, db, "SELECT count(*), min(status), min(latency_ms) FROM tool_calls"); got != "4error7" {
		t.Errorf("tool_calls = %s", got)
	}
	// DuckDB's own read_parquet sees the same rows and types as the history.
	m, _ := h.Manifest()
	files := m.LiveFiles(h.Dir)
	q := fmt.Sprintf("SELECT count(*), typeof(any_value(ts)), typeof(any_value(cost_usd)), typeof(any_value(input_tokens)) FROM read_parquet(['%s'])", strings.Join(files, "','"))
	if got := scalar(t, db, q); got != "15TIMESTAMP WITH TIME ZONEDOUBLEBIGINT" {
		t.Errorf("read_parquet = %s", got)
	}
	sums, err := db.Sessions(context.Background(), query.Filter{})
	if err != nil || len(sums) != 4 {
		t.Fatalf("Sessions = %v, %v", sums, err)
	}
	for _, s := range sums {
		evs, tail, _ := st.Load(s.SessionID)
		want := recorder.Summarize(s.SessionID, evs, tail)
		if want.Status == session.StatusRunning {
			want.Status = session.StatusCrashed // no lease held
		}
		if s.Status != want.Status || s.Events != want.Events || s.InputTokens != want.InputTokens || s.Errors != want.Errors || !s.Started.Equal(want.Started) {
			t.Errorf("Sessions %s = %+v, want %+v", s.SessionID, s, want)
		}
	}
}

// A damaged history file whose session's log is gone: with the checksum
// the manifest records, no query answers without it, and the error names
// it; under a manifest of version 2 (no checksums) the file DuckDB cannot
// read is skipped with a warning naming it, and the rest answers.
func TestCorruptFileReportedByName(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		home := t.TempDir()
		st := recorder.Store{Root: home}
		h := history.New(home)
		h.NoSync = true
		for i := range 3 {
			record(t, st, fmt.Sprintf("f00000000000000%d", i), true)
		}
		if _, err := h.Seal("f000000000000000", "f000000000000001", "f000000000000002"); err != nil {
			t.Fatal(err)
		}
		m, _ := h.Manifest()
		bad := filepath.Join(h.Dir, filepath.FromSlash(m.Sessions["f000000000000001"].File))
		b, _ := os.ReadFile(bad)
		os.WriteFile(bad, b[:len(b)-30], 0o644)
		os.RemoveAll(st.SessionDir("f000000000000001")) // the log is gone too: only the rest can answer
		if v2 {
			mp := filepath.Join(h.Dir, history.ManifestFile)
			mb, _ := os.ReadFile(mp)
			lines := strings.Split(string(mb), "\n")
			lines[0] = "agentctl history manifest 2"
			for i, l := range lines {
				if strings.HasPrefix(l, "F\t") {
					lines[i] = l[:strings.LastIndexByte(l, '\t')]
				}
			}
			os.WriteFile(mp, []byte(strings.Join(lines, "\n")), 0o644)
		}
		var warn bytes.Buffer
		db, err := query.Open(context.Background(), home, &warn)
		if !v2 {
			if !errors.Is(err, history.ErrCorruptFile) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "f000000000000001") {
				t.Errorf("checksummed: Open = %v, want a corrupt file error naming %s and its session", err, bad)
			}
			if err == nil {
				db.Close()
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := scalar(t, db, "SELECT count(*), count(DISTINCT session_id) FROM events"); got != "10 2" {
			t.Errorf("v2: events = %s, want 10 rows of 2 sessions", got)
		}
		if !strings.Contains(warn.String(), bad) {
			t.Errorf("v2: warnings %q do not name %s", warn.String(), bad)
		}
		db.Close()
	}
}

func TestSQLErrorListsViews(t *testing.T) {
	db, err := query.Open(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Query(context.Background(), "SELECT nope FROM events")
	if err == nil || !strings.Contains(err.Error(), "Binder Error") || !strings.Contains(err.Error(), "events, sessions, tool_calls") {
		t.Errorf("err = %v", err)
	}
}

// The sessions, tool_calls and model_calls views are made on first use; every way of
// reaching them must still find them.
func TestDerivedViewsMadeOnUse(t *testing.T) {
	home := t.TempDir()
	record(t, recorder.Store{Root: home}, "d000000000000001", true)
	for _, tt := range []struct{ q, want string }{
		{"SELECT count(*) FROM events", "5"},
		{"SELECT count(*) FROM Sessions", "1"},
		{"SELECT status FROM TOOL_CALLS", "error"},
		{"SELECT tokens FROM Model_Calls", "15"},
		{"SELECT count(*) FROM information_schema.tables WHERE table_name IN ('sessions', 'tool_calls')", "2"},
		{"SELECT count(*) FROM duckdb_views() WHERE view_name = 'tool_calls'", "1"},
		{"SELECT count(*) FROM Eval_Runs", "0"},
		{"SELECT count(*) FROM eval_results WHERE passed", "0"},
	} {
		db, err := query.Open(context.Background(), home, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := scalar(t, db, tt.q); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.q, got, tt.want)
		}
		db.Close()
	}
	db, err := query.Open(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Query(context.Background(), "SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Rows) != "[[eval_results] [eval_runs] [events] [model_calls] [sessions] [tool_calls]]" {
		t.Errorf("SHOW TABLES = %v, want the six views", res.Rows)
	}
	if ss, err := db.Sessions(context.Background(), query.Filter{}); err != nil || len(ss) != 1 {
		t.Errorf("Sessions() = %v, %v", ss, err)
	}
}
