package query_test

import (
	"context"
	"fmt"
	"github.com/agentctl/agentctl/internal/heappeak"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// recordLong records one unsealed (crashed: no end, no lease) session of
// n events through the recorder: turns of a user message, a model call,
// an assistant message asking for a tool, its intent and its result.
func recordLong(tb testing.TB, st recorder.Store, id string, n int) {
	tb.Helper()
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, err := st.Create(session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "long", Provider: "p", Model: "m"}, recorder.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	batch := make([]session.Event, 0, 1000)
	for i := 1; i < n; i++ {
		at := ts.Add(time.Duration(i) * time.Millisecond)
		call := "c" + strconv.Itoa(i/5)
		var e session.Event
		switch i % 5 {
		case 0:
			e = session.Event{TS: at, Kind: session.KindUserMessage, Text: "continue with step " + strconv.Itoa(i)}
		case 1:
			e = session.Event{TS: at, Kind: session.KindModelCall, Provider: "p", Model: "m", InputTokens: 1200, OutputTokens: 80, CostUSD: 0.001}
		case 2:
			e = session.Event{TS: at, Kind: session.KindAssistantMessage, Text: "running the tests", ToolCalls: []session.ToolCall{{ID: call, Name: "bash", Args: []byte(`{"cmd":"go test ./..."}`)}}}
		case 3:
			e = session.Event{TS: at, Kind: session.KindToolIntent, CallID: call, Tool: "bash", Args: []byte(`{"cmd":"go test ./..."}`)}
		case 4:
			e = session.Event{TS: at, Kind: session.KindToolResult, CallID: call, Tool: "bash", Status: "ok", LatencyMS: 12, Output: "ok  \tgithub.com/x/y\t0.012s\n"}
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.Append(batch...); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// benchHomes are made once per run: what the benchmarks read, never write.
var benchHomes sync.Map

func benchHome(b *testing.B, name string, make func(home string)) string {
	if h, ok := benchHomes.Load(name); ok {
		return h.(string)
	}
	dir, err := os.MkdirTemp("", "agentctl-sessions-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {}) // homes outlive one benchmark; removed at exit below
	home := filepath.Join(dir, "home")
	make(home)
	benchHomes.Store(name, home)
	return home
}

func TestMain(m *testing.M) {
	code := m.Run()
	benchHomes.Range(func(_, h any) bool { os.RemoveAll(filepath.Dir(h.(string))); return true })
	os.Exit(code)
}

// listSessions is what 'agentctl sessions' does.
func listSessions(b testing.TB, home string) []query.Session {
	db, err := query.Open(context.Background(), home, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	list, err := db.Sessions(context.Background(), query.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	return list
}

// peakHeap is the most live heap seen while fn runs.
func peakHeap(fn func()) uint64 {
	_, peak := heappeak.During(fn)
	return peak
}

// BenchmarkSessionsOneLongUnsealed: 'agentctl sessions' over a home whose
// one session is unsealed and has 1M events; reports the peak heap.
func BenchmarkSessionsOneLongUnsealed(b *testing.B) {
	const n = 1_000_000
	home := benchHome(b, "long", func(home string) { recordLong(b, recorder.Store{Root: home}, "long0000000000", n) })
	for b.Loop() {
		var list []query.Session
		peak := peakHeap(func() { list = listSessions(b, home) })
		if len(list) != 1 || list[0].Events != n {
			b.Fatalf("list = %+v", list)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
}

// BenchmarkSessionsManySmallUnsealed: 'agentctl sessions' over 10,000
// small unsealed sessions.
func BenchmarkSessionsManySmallUnsealed(b *testing.B) {
	const n = 10_000
	home := benchHome(b, "many", func(home string) {
		st := recorder.Store{Root: home}
		for i := range n {
			recordLong(b, st, fmt.Sprintf("m%013d", i), 12)
		}
	})
	for b.Loop() {
		if list := listSessions(b, home); len(list) != n {
			b.Fatalf("%d sessions listed, want %d", len(list), n)
		}
	}
}

// TestListingLongSessionHeap: listing a home whose one unsealed session
// has 200,000 events holds a batch of its rows, not the log: its peak heap
// stays far below the log's events and rows held whole (460 MiB before,
// as the 1M-event benchmark's 2.3 GiB, scaled).
func TestListingLongSessionHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("records 200,000 events")
	}
	const n = 200_000
	home := t.TempDir()
	recordLong(t, recorder.Store{Root: home}, "long0000000000", n)
	var list []query.Session
	peak := peakHeap(func() { list = listSessions(t, home) })
	t.Logf("peak heap %d MiB listing a session of %d events", peak>>20, n)
	if len(list) != 1 || list[0].Events != n {
		t.Fatalf("list = %+v", list)
	}
	if peak > 200<<20 {
		t.Errorf("peak heap %d MiB listing one session of %d events, want under 200", peak>>20, n)
	}
}
