// Package mcp_test measures agentctl mcp's tools over a long session: time
// per call and the heap one answer holds (go test -run '^$' -bench . ./bench/mcp).
package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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
	tmp  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	os.Exit(code)
}

// longHome is a home holding one session of about a million events
// (benchgen.ReplayEach, a compaction every 10 turns, as the 1M-event read rows of bench/suite), made once.
func longHome(b *testing.B) string {
	once.Do(func() {
		dir, err := os.MkdirTemp("", "agentctl-bench-mcp-")
		if err != nil {
			b.Fatal(err)
		}
		// Shared by the benchmarks (b.TempDir would go with the first);
		// TestMain removes it.
		tmp, home = dir, filepath.Join(dir, "home")
		err = benchgen.WriteEach(recorder.Store{Root: home}, "long", func(fn func(session.Event)) { benchgen.ReplayEach(1_000_000, 10, fn) })
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
			b.Fatalf("%s: %s", tool, res.Content[0].(*mcp.TextContent).Text)
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

// BenchmarkListSessions is one list_sessions call (the first page, and one
// filtered by model) over histories of 10,000 and 100,000 sealed sessions
// (the ui runs page's data, benchgen.SealedHistory), each call on a
// server that opens the history as `agentctl mcp` does for every call;
// with the process's peak RSS (VmHWM: generation, when the cache is cold,
// included).
func BenchmarkListSessions(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, f := range []struct {
			name string
			args map[string]any
		}{
			{"first-page", map[string]any{}},
			{"model", map[string]any{"model": "gpt-4o-mini"}},
		} {
			b.Run(fmt.Sprintf("sessions=%d/%s", n, f.name), func(b *testing.B) {
				cs := client(b, benchgen.SealedHistory(b, n, 20))
				b.ResetTimer()
				var size int
				var worst uint64
				for b.Loop() {
					var res *mcp.CallToolResult
					base, peak := heappeak.During(func() {
						var err error
						res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sessions", Arguments: f.args})
						if err != nil {
							b.Fatal(err)
						}
					})
					if res.IsError {
						b.Fatalf("list_sessions: %s", res.Content[0].(*mcp.TextContent).Text)
					}
					size = len(res.Content[0].(*mcp.TextContent).Text)
					worst = max(worst, peak-min(base, peak))
				}
				b.ReportMetric(float64(size), "answer-bytes")
				b.ReportMetric(float64(worst)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(vmHWM(b))/(1<<20), "peak-RSS-MiB")
			})
		}
	}
}

// vmHWM is this process's peak RSS (Linux; 0 elsewhere).
func vmHWM(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
