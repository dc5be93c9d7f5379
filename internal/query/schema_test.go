package query_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// firstRow is history.Row as the first release wrote it, before the
// columns added for issue 16 (refusal … attempt).
type firstRow struct {
	SessionID       string    `parquet:"session_id,dict"`
	Seq             int64     `parquet:"seq"`
	TS              time.Time `parquet:"ts,timestamp(microsecond:utc)"`
	Kind            string    `parquet:"kind,dict"`
	Name            string    `parquet:"name,optional,dict"`
	Provider        string    `parquet:"provider,optional,dict"`
	Model           string    `parquet:"model,optional,dict"`
	System          string    `parquet:"system,optional"`
	Spec            string    `parquet:"spec,optional"`
	SpecPath        string    `parquet:"spec_path,optional"`
	SpecHash        string    `parquet:"spec_hash,optional"`
	AgentctlVersion string    `parquet:"agentctl_version,optional"`
	HarnessCommit   string    `parquet:"harness_commit,optional"`
	Workspace       string    `parquet:"workspace,optional"`
	ParentSessionID string    `parquet:"parent_session_id,optional"`
	ForkedFrom      int64     `parquet:"forked_from,optional"`
	Text            string    `parquet:"text,optional"`
	ToolCalls       string    `parquet:"tool_calls,optional"`
	RequestDigest   string    `parquet:"request_digest,optional"`
	LatencyMS       int64     `parquet:"latency_ms,optional"`
	InputTokens     int64     `parquet:"input_tokens,optional"`
	OutputTokens    int64     `parquet:"output_tokens,optional"`
	CostUSD         float64   `parquet:"cost_usd,optional"`
	FinishReason    string    `parquet:"finish_reason,optional,dict"`
	CallID          string    `parquet:"call_id,optional"`
	Tool            string    `parquet:"tool,optional,dict"`
	Args            string    `parquet:"args,optional"`
	IdempotencyKey  string    `parquet:"idempotency_key,optional"`
	Output          string    `parquet:"output,optional"`
	Artifact        string    `parquet:"artifact,optional"`
	Scope           string    `parquet:"scope,optional,dict"`
	Through         int64     `parquet:"through,optional"`
	Summary         string    `parquet:"summary,optional"`
	SourceSeqs      string    `parquet:"source_seqs,optional"`
	Status          string    `parquet:"status,optional,dict"`
	Outcome         string    `parquet:"outcome,optional,dict"`
	Reason          string    `parquet:"reason,optional"`
	Evidence        string    `parquet:"evidence,optional"`
	Error           string    `parquet:"error,optional"`
	ChildSessionID  string    `parquet:"child_session_id,optional"`
	Attrs           string    `parquet:"attrs,optional"`
	Raw             string    `parquet:"raw,optional"`
}

// rewriteFirstRelease rewrites a sealed history file as the first release
// wrote it: the same rows without the columns added since.
func rewriteFirstRelease(t *testing.T, path string) {
	t.Helper()
	rows, err := history.ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	old := make([]firstRow, len(rows))
	for i, r := range rows {
		old[i] = firstRow{SessionID: r.SessionID, Seq: r.Seq, TS: r.TS, Kind: r.Kind, Name: r.Name, Provider: r.Provider,
			Model: r.Model, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD, CallID: r.CallID,
			Tool: r.Tool, Status: r.Status, LatencyMS: r.LatencyMS}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[firstRow](f)
	if _, err := w.Write(old); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, err := history.ReadRows(path); err != nil || len(got) != len(rows) {
		t.Fatalf("history reads the first-release file: %d rows, %v", len(got), err)
	}
}

// A home sealed by the first release, then used by this one: the views
// read the old file beside new ones and the live log, with the new
// columns NULL for the old rows.
func TestViewsReadFilesWithoutNewColumns(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync = true
	record(t, st, "f000000000000001", true)
	if _, err := h.Seal("f000000000000001"); err != nil {
		t.Fatal(err)
	}
	m, err := h.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	rewriteFirstRelease(t, filepath.Join(h.Dir, filepath.FromSlash(m.Sessions["f000000000000001"].File)))

	ts := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for i, id := range []string{"f000000000000002", "f000000000000003"} {
		if _, err := st.WriteSession([]session.Event{
			{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "n", Provider: "anthropic", Model: "m"},
			{Kind: session.KindAssistantMessage, Refusal: "I can't help with that."},
			{Kind: session.KindModelCall, InputTokens: 55377, CacheReadInputTokens: 55096, OutputTokens: 91, Attempt: 2, ErrorType: ""},
			{Kind: session.KindSessionFinished, Status: "failed", Reason: "refused: I can't help with that."},
		}, recorder.Options{NoSync: true}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := h.Seal(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	db, err := query.Open(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := scalar(t, db, "SELECT count(*), count(*) FILTER (WHERE refusal <> ''), sum(cache_read_input_tokens) FROM events"); got != "13 2 110192" {
		t.Errorf("events = %s, want 13 rows, 2 refusals, 110192 cache reads", got)
	}
	if got := scalar(t, db, "SELECT string_agg(session_id || ':' || refusals || ':' || retries || ':' || cache_read_input_tokens, ',' ORDER BY session_id) FROM sessions"); got !=
		"f000000000000001:0:0:0,f000000000000002:1:1:55096,f000000000000003:1:1:55096" {
		t.Errorf("sessions = %s", got)
	}
	// The runs page's columns (issue 40) over a file without attrs or
	// finish reasons: no tags (an empty map), no user, origin run.
	if got := scalar(t, db, "SELECT string_agg(session_id || ':' || origin || ':' || cardinality(tags) || ':' || coalesce(user_id, '-') || ':' || coalesce(finish_reason, '-') || ':' || turns, ',' ORDER BY session_id) FROM sessions"); got !=
		"f000000000000001:run:0:-:-:0,f000000000000002:run:0:-:-:1,f000000000000003:run:0:-:-:1" {
		t.Errorf("sessions = %s", got)
	}
	if got := scalar(t, db, "SELECT count(*), sum(tokens) FROM model_calls"); got != "3 110951" { // 10+5, and 55377+91 twice
		t.Errorf("model_calls = %s, want 3 calls", got)
	}
}
