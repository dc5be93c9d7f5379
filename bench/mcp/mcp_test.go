// Package mcp_test measures agentctl mcp's tools over a long session: time
// per call and the heap one answer holds (go test -run '^$' -bench . ./bench/mcp).
package mcp_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctl/agentctl/bench/internal/benchgen"
	"github.com/agentctl/agentctl/internal/heappeak"
	"github.com/agentctl/agentctl/internal/mcpserver"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

var (
	once sync.Once
	home string
)

// longHome is a home holding one session of about a million events
// (benchgen.ReplayEach, a compaction every 10 turns, as the 1M-event read rows of bench/suite), made once.
func longHome(b *testing.B) string {
	once.Do(func() {
		home = filepath.Join(b.TempDir(), "home")
		err := benchgen.WriteEach(recorder.Store{Root: home}, "long", func(fn func(session.Event)) { benchgen.ReplayEach(1_000_000, 10, fn) })
		if err != nil {
			b.Fatal(err)
		}
	})
	return home
}

func client(b *testing.B, home string) *mcp.ClientSession {
	srv := mcpserver.New(mcpserver.Options{Store: recorder.Store{Root: home}, Version: "bench"})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func bench(b *testing.B, tool string, args map[string]any) {
	cs := client(b, longHome(b))
	b.ResetTimer()
	var worst uint64
	var size int
	for b.Loop() {
		var res *mcp.CallToolResult
		base, peak := heappeak.During(func() {
			var err error
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				b.Fatal(err)
			}
		})
		if res.IsError {
			b.Fatalf("%s: %v", tool, res.Content)
		}
		size = len(res.Content[0].(*mcp.TextContent).Text)
		worst = max(worst, peak-min(base, peak))
	}
	b.ReportMetric(float64(worst)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(size), "answer-bytes")
	runtime.KeepAlive(cs)
}

// BenchmarkShowSessionFirstPage: the first 64 KiB of a 1M-event session.
func BenchmarkShowSessionFirstPage(b *testing.B) {
	bench(b, "show_session", map[string]any{"session": "long"})
}

// BenchmarkShowSessionLastPage: a page near the end, the log read through.
func BenchmarkShowSessionLastPage(b *testing.B) {
	bench(b, "show_session", map[string]any{"session": "long", "from_seq": 999000})
}
