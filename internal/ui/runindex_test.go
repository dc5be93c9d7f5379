package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/logcheck"
)

// variedHome records n sessions that differ, at random (seeded), in every
// field the runs page filters on: agent, model, status, origin, user,
// tags (a key with '=' in it, an empty value), cost, start (many share
// one, so the order falls to the id) and the messages' text (case,
// accents, SQL wildcards, text shared by many sessions).
func variedHome(t *testing.T, seed uint64, n int) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	t.Cleanup(func() {
		if err := logcheck.Home(recorder.Store{Root: home}); err != nil {
			t.Errorf("log check: %v", err)
		}
	})
	r := rand.New(rand.NewPCG(seed, 1))
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	day := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	texts := []string{"Fix the TYPO in README", "fix the typo in main.go", "hello there", "Ünïcode ÄÖ in the text",
		"thinking about the next step", "it's 100% done", "a_b%c", "line one\nline two"}
	for i := range n {
		id := fmt.Sprintf("d%015x", i)
		attrs := map[string]any{}
		switch pick("run", "run", "proxy", "collect", "import") {
		case "proxy":
			attrs["recorded_by"] = "proxy"
		case "collect":
			attrs["otlp_source"] = "collect"
		case "import":
			attrs["imported_from"] = "codex"
		}
		tags := map[string]string{}
		for _, kv := range [][2]string{{"env", pick("ci", "dev", "")}, {"team", pick("web", "")}, {"a=b", pick("c", "")}, {"k", pick("", "v")}} {
			if r.IntN(3) == 0 {
				tags[kv[0]] = kv[1]
			}
		}
		if len(tags) > 0 {
			attrs["tags"] = tags
		}
		if u := pick("", "ana", "bo"); u != "" {
			attrs["user_id"] = u
		}
		raw, _ := json.Marshal(attrs)
		ts := day.Add(time.Duration(r.IntN(20)) * time.Hour)
		model := pick("gpt-4o-mini", "claude-sonnet-4-5", "llama-3", "")
		evs := []session.Event{{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: pick("fix-typo", "refactor", "chat", ""), Provider: "scripted", Model: model, Attrs: raw}}
		// Turns of a user message, the answer and its model call; a
		// last user message left unanswered, sometimes.
		text := func(j int) string {
			if r.IntN(3) == 0 {
				return fmt.Sprintf("unique %d-%d %s", i, j, pick(texts...))
			}
			return pick(texts...)
		}
		at := func() time.Time { return ts.Add(time.Duration(len(evs)) * time.Millisecond) }
		for j := range r.IntN(3) {
			evs = append(evs, session.Event{TS: at(), Kind: session.KindUserMessage, Text: text(2 * j)})
			evs = append(evs, session.Event{TS: at(), Kind: session.KindAssistantMessage, Text: text(2*j + 1)})
			evs = append(evs, session.Event{TS: at(), Kind: session.KindModelCall, Model: model, InputTokens: 10, OutputTokens: int64(j),
				CostUSD: []float64{0, 0.001, 0.004, 0.05, 0.3}[r.IntN(5)]})
		}
		if r.IntN(4) == 0 {
			evs = append(evs, session.Event{TS: at(), Kind: session.KindUserMessage, Text: text(9)})
		}
		switch pick("done", "failed", "open") {
		case "done":
			evs = append(evs, session.Event{TS: ts.Add(2 * time.Second), Kind: session.KindSessionFinished, Status: "done"})
		case "failed":
			evs = append(evs, session.Event{TS: ts.Add(3 * time.Second), Kind: session.KindSessionFinished, Status: "failed", Reason: pick("max_turns", "")})
		}
		if _, err := (recorder.Store{Root: home}).WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// sqlWhere is a filter as a SQL condition over the sessions view: the
// meaning each filter of the runs page has, which the index must keep.
func sqlWhere(t *testing.T, f runsFilter) string {
	conds := []string{"true"}
	eq := func(col, v string) {
		if v != "" {
			conds = append(conds, "coalesce("+col+", '') = "+sqlString(v))
		}
	}
	eq("status", f.Status)
	eq("origin", f.Origin)
	eq("model", f.Model)
	eq("name", f.Agent)
	eq("user_id", f.User)
	for _, tg := range f.Tags {
		if k, v, ok := strings.Cut(tg, "="); ok {
			conds = append(conds, fmt.Sprintf("tags[%s] = %s", sqlString(k), sqlString(v)))
		} else {
			conds = append(conds, fmt.Sprintf("map_contains(tags, %s)", sqlString(k)))
		}
	}
	if len(f.IDs) > 0 {
		var ids []string
		for _, id := range f.IDs {
			ids = append(ids, sqlString(id))
		}
		conds = append(conds, "session_id IN ("+strings.Join(ids, ", ")+")")
	}
	for _, b := range []struct {
		v, op string
		end   bool
	}{{f.Since, ">=", false}, {f.Until, "<", true}} {
		if b.v != "" {
			tm, err := parseWhen(b.v, b.end)
			if err != nil {
				t.Fatal(err)
			}
			conds = append(conds, fmt.Sprintf("coalesce(epoch_us(started), 0) %s %d", b.op, tm.UnixMicro()))
		}
	}
	if f.CostAbove != "" {
		conds = append(conds, "cost_usd > "+f.CostAbove)
	}
	if f.Text != "" {
		conds = append(conds, "session_id IN (SELECT session_id FROM ("+query.MessageTextSQL+") WHERE contains(text, lower("+sqlString(f.Text)+")))")
	}
	return strings.Join(conds, " AND ")
}

// TestRunIndexMatchesSQL: for every filter, alone and combined, the runs
// index selects exactly the sessions, in exactly the order, that the
// filter's SQL over the sessions view selects; paging through it by the
// cursors (older, then back newer) gives the same list; and the text
// search answers the same from its index and from the SQL fallback.
func TestRunIndexMatchesSQL(t *testing.T) {
	const seed = 40
	t.Logf("seed %d", seed)
	home := variedHome(t, seed, 90)
	ctx := context.Background()
	srv, err := New(Options{Store: recorder.Store{Root: home}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	db, err := query.OpenStore(ctx, recorder.Store{Root: home}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	at := func(h int) string { return time.Date(2026, 11, 2, 9+h, 0, 0, 0, time.UTC).Format(time.RFC3339) }
	var filters []url.Values
	for k, vs := range map[string][]string{
		"status": {"done", "failed", "crashed", "running"},
		"origin": {"run", "proxy", "collect", "import"},
		"model":  {"gpt-4o-mini", "llama-3", "none"},
		"agent":  {"fix-typo", "chat", "nobody"},
		"user":   {"ana", "bo", "cy"},
		"tag":    {"env=ci", "env", "env=", "a=b=c", "a=b", "k=", "k", "team=web env=ci", "nokey"},
		"since":  {at(0), at(5), at(19), at(30), "2026-11-02"},
		"until":  {at(0), at(5), at(19), "2026-11-02", "2026-11-01"},
		"cost":   {"0", "0.001", "0.004", "0.05", "-1", "0.6", "1e9"},
		"q":      {"typo", "TYPO", "the", "next step", "ünïcode äö", "ÜNÏCODE", "100%", "%", "_", "it's", "unique 1", "one\nline", "nothing at all", "e"},
		"id":     {"d000000000000003", "d000000000000000 d000000000000007 d00000000000002a dffffffffffffff0"},
	} {
		for _, v := range vs {
			q := url.Values{}
			if k == "id" {
				q[k] = strings.Fields(v)
			} else {
				q.Set(k, v)
			}
			filters = append(filters, q)
		}
	}
	filters = append(filters,
		url.Values{"status": {"done"}, "model": {"gpt-4o-mini"}},
		url.Values{"status": {"done"}, "q": {"typo"}},
		url.Values{"origin": {"run"}, "tag": {"env=ci"}, "cost": {"0.001"}},
		url.Values{"since": {at(3)}, "until": {at(12)}, "q": {"e"}},
		url.Values{"since": {at(3)}, "until": {at(12)}, "cost": {"0"}},
		url.Values{"since": {at(12)}, "until": {at(3)}},
		url.Values{"user": {"ana"}, "agent": {"chat"}, "tag": {"env"}},
		url.Values{"model": {"none"}, "q": {"nothing"}},
		url.Values{"cost": {"0.3"}, "q": {"the"}, "status": {"failed"}},
		url.Values{},
	)

	for _, q := range filters {
		f, err := parseRunsFilter(q)
		if err != nil {
			t.Fatal(err)
		}
		res, err := db.Query(ctx, "SELECT session_id, coalesce(epoch_us(started), 0) AS sort_us FROM sessions WHERE "+sqlWhere(t, f)+" ORDER BY sort_us DESC, session_id")
		if err != nil {
			t.Fatalf("%v: %v", q, err)
		}
		var want []string
		for _, r := range res.Rows {
			want = append(want, query.Text(r[0]))
		}
		x, sel, err := srv.selectRuns(ctx, f, runsPageReq{})
		if err != nil {
			t.Fatalf("%v: %v", q, err)
		}
		got := ids(x, sel.Rows)
		t.Logf("%v: %d sessions", q, len(want))
		if !slices.Equal(got, want) {
			t.Errorf("filter %v selects %v, SQL %v", q, got, want)
			continue
		}
		if sel.Total != len(want) {
			t.Errorf("filter %v counts %d, want %d", q, sel.Total, len(want))
		}
		// Pages of 7, older from the start, then newer from the end.
		var pages []string
		pg := runsPageReq{limit: 7}
		for range 30 {
			_, s, err := srv.selectRuns(ctx, f, pg)
			if err != nil {
				t.Fatal(err)
			}
			if s.Total != len(want) {
				t.Errorf("filter %v, page after %v: total %d, want %d", q, pg.after, s.Total, len(want))
			}
			pages = append(pages, ids(x, s.Rows)...)
			if !s.more {
				break
			}
			k := x.row(s.Rows[len(s.Rows)-1]).key
			pg.after = &k
		}
		if !slices.Equal(pages, want) {
			t.Errorf("filter %v paged older lists %v, want %v", q, pages, want)
		}
		pages = nil
		pg = runsPageReq{limit: 7, before: &cursor{us: -1 << 62, id: "~"}}
		for range 30 {
			_, s, err := srv.selectRuns(ctx, f, pg)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(ids(x, s.Rows), pages...)
			if !s.more {
				break
			}
			k := x.row(s.Rows[0]).key
			pg.before = &k
		}
		if !slices.Equal(pages, want) {
			t.Errorf("filter %v paged newer from the end lists %v, want %v", q, pages, want)
		}
	}

	// The text search past the index's bound: the SQL over the events.
	x, _, err := srv.selectRuns(ctx, runsFilter{}, runsPageReq{})
	if err != nil {
		t.Fatal(err)
	}
	srv.dbMu.Lock()
	srv.made["runs-text"] = (*textIndex)(nil)
	srv.dbMu.Unlock()
	for _, text := range []string{"typo", "ÜNÏCODE", "%", "e", "nothing at all"} {
		f := runsFilter{Text: text}
		_, sel, err := srv.selectRuns(ctx, f, runsPageReq{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := db.Query(ctx, "SELECT session_id, coalesce(epoch_us(started), 0) AS sort_us FROM sessions WHERE "+sqlWhere(t, f)+" ORDER BY sort_us DESC, session_id")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, r := range res.Rows {
			want = append(want, query.Text(r[0]))
		}
		if got := ids(x, sel.Rows); !slices.Equal(got, want) {
			t.Errorf("text %q without the index selects %v, SQL %v", text, got, want)
		}
	}
}

func ids(x *runIndex, rows []int32) []string {
	var out []string
	for _, r := range rows {
		out = append(out, x.id(r))
	}
	return out
}

// benchEntries is a list of n sessions shaped as bench/ui's history, with
// more to filter: three models, a third failed, a quarter tagged env=ci,
// costs of 0 to 0.004, one start a second, and (for the text index) one
// message every session shares and one of its own.
func benchEntries(n int) ([]runEntry, *textIndex) {
	epoch := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	es := make([]runEntry, n)
	tx := &textIndex{rowsAt: []int32{0}, n: n}
	shared := make([]int32, n)
	for row := range n {
		i := n - 1 - row // the list is newest first
		e := runEntry{ID: fmt.Sprintf("%016x", i+1), Name: "bench", Status: "done", Origin: "run",
			Model: []string{"gpt-4o-mini", "claude-sonnet-4-5", "llama-3"}[i%3], Cost: 0.001 * float64(i%5),
			Started: true, SortUS: epoch.Add(time.Duration(i) * time.Second).UnixMicro()}
		if i%3 == 0 {
			e.Status = "failed"
		}
		if i%4 == 0 {
			e.Tags, e.TagText = map[string]string{"env": "ci"}, "env=ci"
		}
		es[row] = e
		shared[row] = int32(row)
		tx.add(fmt.Sprintf("unique message %d", i), []int32{int32(row)})
	}
	tx.add("thinking about the next step", shared)
	return es, tx
}

// TestRunIndexWorkIsFlat: the rows a request looks at do not grow with
// the history, for each filter the bench measures (alone) and a page deep
// in the list: a filter starts from its own rows (a value's list, the
// date range, the cursor's place) instead of going through every
// session. Ten times the sessions may cost at most 1.5 times the rows.
// (Two broad conditions together cost the narrower one's rows: status and
// tag, a third and a quarter of the list, look at 25,000 rows of 100,000,
// under a millisecond.)
func TestRunIndexWorkIsFlat(t *testing.T) {
	epoch := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	filters := []url.Values{
		{},
		{"status": {"failed"}},
		{"model": {"gpt-4o-mini"}},
		{"since": {epoch.Add(5000 * time.Second).Format(time.RFC3339)}},
		{"cost": {"0.002"}},
		{"tag": {"env=ci"}},
		{"q": {"next step"}},
		{"q": {"unique message 7"}},
		{"model": {"none"}, "q": {"nothing"}},
		{"after": {fmt.Sprintf("%d_%016x", epoch.Add(5000*time.Second).UnixMicro(), 5001)}},
		{"before": {fmt.Sprintf("%d_%016x", epoch.Add(5000*time.Second).UnixMicro(), 5001)}, "status": {"done"}},
	}
	work := map[int][]int{}
	for _, n := range []int{10000, 100000} {
		es, tx := benchEntries(n)
		x := newRunIndex(es)
		for _, q := range filters {
			f, err := parseRunsFilter(q)
			if err != nil {
				t.Fatal(err)
			}
			pg := runsPageReq{limit: runsPerPage}
			if f.After != "" {
				k, _ := parseCursor(f.After)
				pg.after = &k
			}
			if f.Before != "" {
				k, _ := parseCursor(f.Before)
				pg.before = &k
			}
			sel, err := x.selectRows(f, pg, func() ([]int32, error) { return tx.search([]byte(f.Text)), nil })
			if err != nil {
				t.Fatal(err)
			}
			if len(sel.Rows) == 0 && q.Get("model") != "none" {
				t.Fatalf("%d sessions, filter %v: no rows; the test's filters should each select some", n, q)
			}
			work[n] = append(work[n], sel.examined)
		}
	}
	for i, q := range filters {
		small, big := work[10000][i], work[100000][i]
		if float64(big) > 1.5*float64(small)+runsPerPage {
			t.Errorf("filter %v looks at %d rows of 100,000 sessions, %d of 10,000: not flat", q, big, small)
		}
	}
}

// BenchmarkTextSearch is one search of the text index where no two
// messages are alike (every session's four messages its own, ~60 bytes):
// the index's worst case, a scan of all the text; bench/ui's history,
// whose sessions share their messages, is its best.
func BenchmarkTextSearch(b *testing.B) {
	for _, c := range []struct {
		n      int
		needle string
	}{{10000, "next step in pkg/f42.go"}, {100000, "next step in pkg/f42.go"}, {10000, "the next"}, {100000, "the next"}} {
		n, needle := c.n, c.needle
		b.Run(fmt.Sprintf("sessions=%d/q=%s", n, strings.ReplaceAll(needle, " ", "_")), func(b *testing.B) {
			tx := &textIndex{rowsAt: []int32{0}, n: n}
			for row := range n {
				for j := range 4 {
					tx.add(fmt.Sprintf("session %d message %d: thinking about the next step in pkg/f%d.go", row, j, row%97), []int32{int32(row)})
				}
			}
			b.ResetTimer()
			for range b.N {
				if rows := tx.search([]byte(needle)); len(rows) == 0 {
					b.Fatal("no match")
				}
			}
			b.ReportMetric(float64(len(tx.arena))/(1<<20), "text-MB")
		})
	}
}

// TestTextIndexSearch: a match is inside one text, never across two
// texts laid end to end; a text's rows are found whatever byte of the
// needle the search keys on; several matching texts merge their rows.
func TestTextIndexSearch(t *testing.T) {
	tx := &textIndex{rowsAt: []int32{0}, n: 8}
	tx.add("abc", []int32{3, 1})
	tx.add("def", []int32{2})
	tx.add("zz abc zz", []int32{1, 5})
	tx.add("x", []int32{7})
	for _, tc := range []struct {
		needle string
		want   []int32
	}{
		{"abc", []int32{1, 3, 5}},
		{"cd", nil},
		{"cde", nil},
		{"bcdef", nil},
		{"def", []int32{2}},
		{"z", []int32{1, 5}},
		{"zz abc zz", []int32{1, 5}},
		{"zz abc zzx", nil},
		{"x", []int32{7}},
		{"fz", nil},
		{"abcd", nil},
	} {
		if got := tx.search([]byte(tc.needle)); !slices.Equal(got, tc.want) {
			t.Errorf("search(%q) = %v, want %v", tc.needle, got, tc.want)
		}
	}
}

// TestRunIndexRowOf: every row is found by its id, one whose hash another
// id took through byID too, and an id not in the list is not found.
func TestRunIndexRowOf(t *testing.T) {
	es, _ := benchEntries(100)
	x := newRunIndex(es)
	id := x.id(7)
	delete(x.byHash, maphash.String(x.hashKey, id))
	x.byID[id] = 7
	for i := range int32(100) {
		if r, ok := x.rowOf(x.id(i)); !ok || r != i {
			t.Errorf("rowOf(%s) = %d, %v, want %d", x.id(i), r, ok, i)
		}
	}
	if r, ok := x.rowOf("0000000000000000"); ok {
		t.Errorf("rowOf of an id not listed = %d, true", r)
	}
}

// TestRunsConcurrentRequests: requests of the runs page at once, some
// searching text (which makes the text index on the first), each answer
// the one it gets alone. Run with -race.
func TestRunsConcurrentRequests(t *testing.T) {
	home := variedHome(t, 41, 40)
	srv, err := New(Options{Store: recorder.Store{Root: home}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	get := func(q string) string {
		req := httptest.NewRequest("GET", "/runs?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			return fmt.Sprintf("%d %s", w.Code, w.Body.String())
		}
		return w.Body.String()
	}
	queries := []string{"", "q=typo", "status=done&q=the", "model=llama-3", "tag=env", "cost=0.001&since=2026-11-02T12:00:00Z", "q=%C3%BCn%C3%AFcode"}
	var wg sync.WaitGroup
	got := make([][]string, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, q := range queries {
				got[g] = append(got[g], get(q))
			}
		}()
	}
	wg.Wait()
	for i, q := range queries {
		want := get(q)
		for g := range got {
			if got[g][i] != want {
				t.Errorf("GET /runs?%s at once with others answered differently from alone:\n%.300s\nwant\n%.300s", q, got[g][i], want)
			}
		}
	}
}

// BenchmarkRunIndexCombined is a page of filters that each keep a broad
// part of 100,000 sessions together: they cost the narrower one's rows
// (TestRunIndexWorkIsFlat measures the filters alone).
func BenchmarkRunIndexCombined(b *testing.B) {
	es, tx := benchEntries(100000)
	x := newRunIndex(es)
	since := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC).Add(5000 * time.Second).Format(time.RFC3339)
	for _, q := range []url.Values{
		{"status": {"failed"}, "model": {"llama-3"}},
		{"status": {"failed"}, "tag": {"env"}},
		{"status": {"failed"}, "q": {"next step"}},
		{"cost": {"0.0035"}, "since": {since}},
	} {
		b.Run(q.Encode(), func(b *testing.B) {
			f, err := parseRunsFilter(q)
			if err != nil {
				b.Fatal(err)
			}
			var sel runsSel
			for range b.N {
				sel, err = x.selectRows(f, runsPageReq{limit: runsPerPage}, func() ([]int32, error) { return tx.search([]byte(f.Text)), nil })
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sel.examined), "rows-looked-at")
			b.ReportMetric(float64(sel.Total), "total")
		})
	}
}

// TestListCond: a condition given as rows answers for each row whether
// it is one, as a short list (binary search) and as a long one (bitmap).
func TestListCond(t *testing.T) {
	const n = 1000
	for _, rows := range [][]int32{nil, {0}, {3, 64, 999}, {0, 1, 2, 63, 64, 65, 127, 128, 500, 998, 999, 5, 6, 7, 8, 9, 10, 11}} {
		rows = slices.Clone(rows)
		slices.Sort(rows)
		c := listCond(rows, n)
		for i := range int32(n) {
			if got, want := c.has(i), slices.Contains(rows, i); got != want {
				t.Errorf("listCond(%v).has(%d) = %v, want %v", rows, i, got, want)
			}
		}
	}
}
