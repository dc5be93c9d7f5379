package query_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/transcript"
)

// viewSession is one session of the runs-page fixture: its header attrs
// and the events after the header.
type viewSession struct {
	id    string
	attrs string
	evs   []session.Event
	seal  bool
}

// viewHome records sessions of every origin (run, proxy, collect,
// import), some sealed into the history and some read from their logs,
// so that each column is read from Parquet and from a log alike.
func viewHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync = true
	ts := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	call := func(in, out int64, cost float64, fr string) session.Event {
		return session.Event{Kind: session.KindModelCall, Provider: "anthropic", Model: "claude", InputTokens: in, OutputTokens: out, CostUSD: cost, FinishReason: fr, LatencyMS: 100}
	}
	msg := func(text string) session.Event { return session.Event{Kind: session.KindAssistantMessage, Text: text} }
	sessions := []viewSession{
		{id: "a000000000000001", attrs: `{"tools":["bash"],"tags":{"env":"ci","team":"infra"},"user_id":"alice"}`, seal: true, evs: []session.Event{
			call(100, 10, 0.25, "tool_use"), msg("one"), call(200, 20, 0.5, "end_turn"), msg("two"),
			{Kind: session.KindSessionFinished, Status: "done"},
		}},
		{id: "a000000000000002", attrs: `{"tags":{"env":"dev"}}`, evs: []session.Event{
			call(50, 5, 0.1, "end_turn"),
			{Kind: session.KindModelCall, Provider: "anthropic", Model: "claude", Error: "overloaded", ErrorType: "overloaded_error", Attempt: 1},
			{Kind: session.KindSessionFinished, Status: "failed", Reason: "provider_error: overloaded"},
		}},
		{id: "a000000000000003", attrs: `{"recorded_by":"proxy","api":"messages"}`, seal: true, evs: []session.Event{call(7, 3, 0.01, "stop"), msg("p")}},
		{id: "a000000000000004", attrs: `{"imported_from":"otlp","recorded_by":"otlp","otlp_source":"collect","user_id":"bob","tags":{"tag.release":""}}`, evs: []session.Event{call(1, 1, 0, "stop")}},
		{id: "a000000000000005", attrs: `{"imported_from":"claude-code","source_status":"done"}`, seal: true, evs: []session.Event{msg("i")}},
	}
	for i, s := range sessions {
		hdr := session.Event{TS: ts.Add(time.Duration(i) * time.Minute), Kind: session.KindSessionStarted, SessionID: s.id, Name: "agent" + s.id[15:], Provider: "anthropic", Model: "claude", Attrs: json.RawMessage(s.attrs)}
		evs := []session.Event{hdr}
		for j, e := range s.evs {
			e.TS = hdr.TS.Add(time.Duration(j+1) * time.Second)
			evs = append(evs, e)
		}
		if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
			t.Fatal(err)
		}
		if s.seal {
			if _, err := h.Seal(s.id); err != nil {
				t.Fatal(err)
			}
		}
	}
	return home
}

// The sessions view has what the runs page shows: origin, turns, the end
// reason, the last model call's finish reason, the header's tags (a MAP
// that filters with tags['k']) and user.
func TestSessionsViewRunsPageColumns(t *testing.T) {
	db, err := query.Open(context.Background(), viewHome(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct{ q, want string }{
		{"SELECT string_agg(session_id[16:] || ':' || origin, ',' ORDER BY session_id) FROM sessions", "1:run,2:run,3:proxy,4:collect,5:import"},
		{"SELECT string_agg(session_id[16:] || ':' || turns, ',' ORDER BY session_id) FROM sessions", "1:2,2:0,3:1,4:0,5:1"},
		// The last model call failed: it has no finish reason, and an
		// earlier call's is not reported as the session's.
		{"SELECT string_agg(session_id[16:] || ':' || coalesce(finish_reason, '-'), ',' ORDER BY session_id) FROM sessions", "1:end_turn,2:-,3:stop,4:stop,5:-"},
		{"SELECT string_agg(session_id[16:] || ':' || coalesce(reason, '-'), ',' ORDER BY session_id) FROM sessions", "1:-,2:provider_error: overloaded,3:-,4:-,5:-"},
		{"SELECT string_agg(session_id[16:] || ':' || coalesce(user_id, '-'), ',' ORDER BY session_id) FROM sessions", "1:alice,2:-,3:-,4:bob,5:-"},
		{"SELECT typeof(tags) FROM sessions LIMIT 1", "MAP(VARCHAR, VARCHAR)"},
		{"SELECT string_agg(session_id[16:], ',' ORDER BY session_id) FROM sessions WHERE tags['env'] = 'ci'", "1"},
		{"SELECT string_agg(session_id[16:], ',' ORDER BY session_id) FROM sessions WHERE map_contains(tags, 'env')", "1,2"},
		{"SELECT string_agg(session_id[16:], ',' ORDER BY session_id) FROM sessions WHERE map_contains(tags, 'tag.release')", "4"},
		{"SELECT string_agg(session_id[16:] || ':' || cardinality(tags), ',' ORDER BY session_id) FROM sessions", "1:2,2:1,3:0,4:1,5:0"},
		{"SELECT string_agg(session_id[16:] || ':' || name || ':' || model || ':' || tokens || ':' || cost_usd, ',' ORDER BY session_id) FROM sessions WHERE session_id[16:] IN ('1', '2')",
			"1:agent1:claude:330:0.75,2:agent2:claude:55:0.1"},
	} {
		if got := scalar(t, db, tc.q); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.q, got, tc.want)
		}
	}
}

// importCorpus writes the sessions of real transcripts (package
// transcript, as agentctl import does) into home.
func importCorpus(t *testing.T, home string, files ...string) {
	t.Helper()
	st := recorder.Store{Root: home}
	for _, f := range files {
		ss, err := transcript.Import(transcript.FormatAuto, filepath.Join("..", "..", "testdata", "corpus", "transcripts", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range transcript.All(ss) {
			if _, err := st.WriteSession(s.Events, recorder.Options{NoSync: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The model_calls view has a row per model_call, and its sums per session
// are the sessions view's figures, for sessions agentctl recorded and
// sessions imported from other tools' real transcripts.
func TestModelCallsAgreeWithSessions(t *testing.T) {
	home := viewHome(t)
	importCorpus(t, home,
		"claude-code/codemie-ai__codemie-code/session-9eda1058.jsonl",
		"openhands/All-Hands-AI__OpenHands/basic.json",
		"swe-agent/SWE-agent__SWE-agent/6e44b9__sweagenttestrepo-1c2844.traj")
	db, err := query.Open(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct{ q, want string }{
		// Imported sessions with model calls of their own, so the
		// comparison below is not over zeros alone.
		{"SELECT count(DISTINCT session_id), sum(tokens) > 1000 FROM model_calls WHERE session_id NOT LIKE 'a0000000000000%'", "3 true"},
		{`SELECT count(*) FROM sessions s FULL JOIN (
			SELECT session_id, count(*) AS n, sum(input_tokens) AS i, sum(output_tokens) AS o, sum(tokens) AS tk, sum(cost_usd) AS c,
			  sum(cache_read_input_tokens) AS cr, sum(cache_creation_input_tokens) AS cw, count(*) FILTER (WHERE attempt > 1) AS retries
			FROM model_calls GROUP BY session_id) m USING (session_id)
		  WHERE s.session_id IS NULL OR s.input_tokens <> coalesce(m.i, 0) OR s.output_tokens <> coalesce(m.o, 0) OR s.tokens <> coalesce(m.tk, 0)
		    OR abs(s.cost_usd - coalesce(m.c, 0)) > 1e-12 OR s.cache_read_input_tokens <> coalesce(m.cr, 0)
		    OR s.cache_creation_input_tokens <> coalesce(m.cw, 0) OR s.retries <> coalesce(m.retries, 0)
		    OR s.finish_reason IS DISTINCT FROM (SELECT finish_reason FROM model_calls x WHERE x.session_id = s.session_id ORDER BY seq DESC LIMIT 1)`, "0"},
		{"SELECT count(*) FROM model_calls WHERE session_id = 'a000000000000001'", "2"},
		{"SELECT string_agg(seq || ':' || model || ':' || tokens || ':' || cost_usd || ':' || latency_ms || ':' || finish_reason || ':' || attempt, ',' ORDER BY seq) FROM model_calls WHERE session_id = 'a000000000000001'",
			"2:claude:110:0.25:100:tool_use:1,4:claude:220:0.5:100:end_turn:1"},
		// A failed call: its error, the provider's error type, no finish reason.
		{"SELECT error_type || ':' || error || ':' || coalesce(finish_reason, '-') || ':' || tokens FROM model_calls WHERE session_id = 'a000000000000002' AND seq = 3",
			"overloaded_error:overloaded:-:0"},
	} {
		if got := scalar(t, db, tc.q); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.q, got, tc.want)
		}
	}
}

// Sessions filters in SQL over the sessions view: each field of Filter
// selects what the same condition in a query selects, newest first, and
// Limit keeps the most recently started.
func TestSessionsFilter(t *testing.T) {
	db, err := query.Open(context.Background(), viewHome(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		f    query.Filter
		want string
	}{
		{"all", query.Filter{}, "5 4 3 2 1"},
		{"status", query.Filter{Status: []session.Status{session.StatusFailed, session.StatusImported}}, "5 4 2"},
		{"crashed", query.Filter{Status: []session.Status{session.StatusCrashed}}, "3"},
		{"since", query.Filter{Since: base.Add(2 * time.Minute)}, "5 4 3"},
		{"tag", query.Filter{Tags: map[string]string{"env": "ci"}}, "1"},
		{"tag with another value", query.Filter{Tags: map[string]string{"env": "prod"}}, ""},
		{"two tags", query.Filter{Tags: map[string]string{"env": "ci", "team": "infra"}}, "1"},
		{"two tags, one wrong", query.Filter{Tags: map[string]string{"env": "ci", "team": "web"}}, ""},
		{"empty tag value", query.Filter{Tags: map[string]string{"tag.release": ""}}, "4"},
		{"user", query.Filter{User: "bob"}, "4"},
		{"limit", query.Filter{Limit: 2}, "5 4"},
		{"status and limit", query.Filter{Status: []session.Status{session.StatusDone, session.StatusFailed}, Limit: 1}, "2"},
		// A value with a quote is an argument, not SQL.
		{"quote", query.Filter{User: "x' OR true --"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			list, err := db.Sessions(context.Background(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range list {
				got = append(got, s.SessionID[15:])
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("Sessions(%+v) = %v, want %s", tt.f, got, tt.want)
			}
		})
	}
	list, err := db.Sessions(context.Background(), query.Filter{Tags: map[string]string{"env": "ci"}})
	if err != nil || len(list) != 1 {
		t.Fatal(list, err)
	}
	s := list[0]
	if got := fmt.Sprintf("%s %s %d %d %.2f %s %s %v %s %d", s.Status, s.Origin, s.Turns, s.Tokens, s.CostUSD, s.FinishReason, s.UserID, s.Tags, s.Name, *s.DurationMS); got !=
		"done run 2 330 0.75 end_turn alice map[env:ci team:infra] agent1 5000" {
		t.Errorf("session = %s", got)
	}
}

// A log with no readable event has no row in the view; Sessions lists it
// (status corrupt) when the filter selects every session or names its
// status, and never for a filter on what it cannot have (a start, tags).
func TestSessionsFilterUnreadableLog(t *testing.T) {
	home := viewHome(t)
	st := recorder.Store{Root: home}
	id := "c000000000000001"
	if _, err := st.WriteSession([]session.Event{
		{TS: time.Now(), Kind: session.KindSessionStarted, SessionID: id, Name: "broken"},
		{Kind: session.KindUserMessage, Text: "hello"},
		{Kind: session.KindSessionFinished, Status: "done"},
	}, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	p := st.LogPath(id)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[40] ^= 0xff // inside the header's record: nothing before it reads
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := query.Open(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tt := range []struct {
		name string
		f    query.Filter
		want bool
	}{
		{"all", query.Filter{}, true},
		{"its status", query.Filter{Status: []session.Status{session.StatusCorrupt}}, true},
		{"another status", query.Filter{Status: []session.Status{session.StatusDone}}, false},
		{"a tag", query.Filter{Tags: map[string]string{"env": "ci"}}, false},
		{"since", query.Filter{Since: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}, false},
		{"limit past the others", query.Filter{Limit: 6}, true},
		{"limit", query.Filter{Limit: 5}, false},
	} {
		list, err := db.Sessions(context.Background(), tt.f)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range list {
			if s.SessionID == id {
				found = true
				if s.Status != session.StatusCorrupt || s.Err == "" {
					t.Errorf("%s: %+v, want corrupt with the error", tt.name, s.Summary)
				}
			}
		}
		if found != tt.want {
			t.Errorf("%s: listed %t, want %t (%d sessions)", tt.name, found, tt.want, len(list))
		}
	}
}

// TestSessionsFilterByColumn: Model, Origin and Agent each select the
// sessions whose column has that value, as the same WHERE in a query does,
// for every value the home has and one it has not.
func TestSessionsFilterByColumn(t *testing.T) {
	db, err := query.Open(context.Background(), viewHome(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, c := range []struct {
		col string
		f   func(v string) query.Filter
	}{
		{"model", func(v string) query.Filter { return query.Filter{Model: v} }},
		{"origin", func(v string) query.Filter { return query.Filter{Origin: v} }},
		{"name", func(v string) query.Filter { return query.Filter{Agent: v} }},
	} {
		res, err := db.Query(ctx, "SELECT DISTINCT "+c.col+" FROM sessions WHERE "+c.col+" IS NOT NULL ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		vals := []string{"no such value"}
		for _, r := range res.Rows {
			vals = append(vals, query.Text(r[0]))
		}
		if len(vals) < 2 {
			t.Fatalf("the home has no %s to filter by", c.col)
		}
		for _, v := range vals {
			want := scalar(t, db, "SELECT coalesce(string_agg(session_id, ' ' ORDER BY started DESC, session_id), '') FROM sessions WHERE "+c.col+" = '"+strings.ReplaceAll(v, "'", "''")+"'")
			list, err := db.Sessions(ctx, c.f(v))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range list {
				got = append(got, s.SessionID)
			}
			if g := strings.Join(got, " "); g != want {
				t.Errorf("%s = %q: Sessions lists %q, the view %q", c.col, v, g, want)
			}
		}
	}
}

// TestSessionsFilterByText: Text selects the sessions with a user or
// assistant message containing it, case aside, as the same search in a
// query does; a tool's output or the session's name does not count.
func TestSessionsFilterByText(t *testing.T) {
	db, err := query.Open(context.Background(), viewHome(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, tc := range []struct{ text, want string }{
		{"TWO", "a000000000000001"}, // assistant text "two", another case
		{"one", "a000000000000001"},
		{"p", scalar(t, db, `SELECT coalesce(string_agg(DISTINCT session_id, ' ' ORDER BY session_id DESC), '') FROM events WHERE kind IN ('user_message', 'assistant_message') AND contains(lower(text), 'p')`)},
		{"no such words", ""},
		{"' OR true --", ""},
	} {
		list, err := db.Sessions(ctx, query.Filter{Text: tc.text})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range list {
			got = append(got, s.SessionID)
		}
		slices.Sort(got)
		slices.Reverse(got)
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("text %q: Sessions lists %q, want %q", tc.text, g, tc.want)
		}
	}
}
