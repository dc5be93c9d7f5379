package cli

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestLongUnsealedSessionFigures: on one unsealed session longer than the
// batches its log is read in, with a torn tail, 'sessions', 'show --tree'
// and 'query' over the sessions view report the same figures. The first
// two read the log a record at a time (recorder.StreamFile); they once
// held it whole.
func TestLongUnsealedSessionFigures(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	const id = "10e0000000000001"
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, err := st.Create(session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "long", Provider: "p", Model: "m"}, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var evs []session.Event
	for i := 1; i < 10_000; i++ {
		at := ts.Add(time.Duration(i) * time.Millisecond)
		call := "c" + strconv.Itoa(i/4)
		switch i % 4 {
		case 0:
			evs = append(evs, session.Event{TS: at, Kind: session.KindModelCall, Provider: "p", Model: "m", InputTokens: int64(i), OutputTokens: 7, CostUSD: 0.25})
		case 1:
			evs = append(evs, session.Event{TS: at, Kind: session.KindAssistantMessage, ToolCalls: []session.ToolCall{{ID: call, Name: "bash", Args: []byte(`{}`)}}})
		case 2:
			evs = append(evs, session.Event{TS: at, Kind: session.KindToolIntent, CallID: call, Tool: "bash", Args: []byte(`{}`)})
		case 3:
			status := session.ResultOK
			if i%12 == 3 {
				status = "error"
			}
			evs = append(evs, session.Event{TS: at, Kind: session.KindToolResult, CallID: call, Tool: "bash", Status: status})
		}
	}
	if _, err := s.Append(evs...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A torn tail: half a frame header after the last good record.
	f, err := os.OpenFile(st.LogPath(id), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0x40, 0, 0})
	f.Close()

	run := func(args ...string) string {
		t.Helper()
		var out, errb strings.Builder
		if code := Main(context.Background(), append([]string{"--home", home}, args...), Streams{Out: &out, Err: &errb}); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	var listed []recorder.Summary
	if err := json.Unmarshal([]byte(run("sessions", "--json")), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("sessions --json = %v, %v", listed, err)
	}
	var tree treeNode
	if err := json.Unmarshal([]byte(run("show", "--tree", "--json", id)), &tree); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	q := "SELECT status, events, input_tokens, output_tokens, cost_usd, tool_calls, errors FROM sessions"
	if err := json.Unmarshal([]byte(run("query", "--format", "json", q)), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("query --format json = %v, %v", rows, err)
	}
	figures := func(s recorder.Summary) string {
		return strings.Join([]string{string(s.Status), strconv.FormatInt(s.Events, 10), strconv.FormatInt(s.InputTokens, 10),
			strconv.FormatInt(s.OutputTokens, 10), strconv.FormatFloat(s.CostUSD, 'f', 4, 64), strconv.FormatInt(s.ToolCalls, 10),
			strconv.FormatInt(s.Errors, 10)}, " ")
	}
	r := rows[0]
	num := func(k string) int64 { v, _ := r[k].(float64); return int64(v) }
	cost, _ := r["cost_usd"].(float64)
	fromQuery := recorder.Summary{Status: session.Status(r["status"].(string)), Events: num("events"), InputTokens: num("input_tokens"),
		OutputTokens: num("output_tokens"), CostUSD: cost, ToolCalls: num("tool_calls"), Errors: num("errors")}
	want := figures(tree.Summary)
	if got := figures(listed[0]); got != want {
		t.Errorf("sessions: %s; show --tree: %s", got, want)
	}
	if got := figures(fromQuery); got != want {
		t.Errorf("query: %s; show --tree: %s", got, want)
	}
	if tree.Events != 10_000 || !listed[0].Torn || !tree.Torn || tree.Status != session.StatusCrashed {
		t.Errorf("show --tree: %+v, want 10000 events, torn, crashed", tree.Summary)
	}
}
