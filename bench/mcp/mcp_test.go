// Package mcp_test measures agentctl mcp's tools over a long session and
// a long history: time per call, the heap one answer holds and the
// process's peak RSS (go test -run '^$' -bench . ./bench/mcp; bench/run's
// MCP server rows).
package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctl/agentctl/bench/internal/benchgen"
	"github.com/agentctl/agentctl/internal/heappeak"
	"github.com/agentctl/agentctl/internal/mcpserver"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// longEvents is the length of the long session.
const longEvents = 1_000_000

// longHome is a home holding one session of about a million events
// (benchgen.ReplayEach, a compaction every 10 turns, as the 1M-event read
// rows of bench/suite), generated once into the cache
// ($AGENTCTL_BENCH_CACHE, as benchgen.SealedHistory's histories, so the
// bench/run rows, each a process of its own, generate it once) and read
// as "latest".
func longHome(b *testing.B) string {
	b.Helper()
	root := os.Getenv(benchgen.CacheEnv)
	if root == "" {
		root = filepath.Join(os.TempDir(), "agentctl-bench-ui")
	}
	home := filepath.Join(root, fmt.Sprintf("mcp-long-%d", longEvents))
	done := filepath.Join(home, "generated")
	if _, err := os.Stat(done); err == nil {
		return home
	}
	os.RemoveAll(home)
	err := benchgen.WriteEach(recorder.Store{Root: home}, "long", func(fn func(session.Event)) { benchgen.ReplayEach(longEvents, 10, fn) })
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
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

// call is one call of tool on cs, timed by the benchmark, with the heap
// it held; it returns the answer's size.
func call(b *testing.B, cs *mcp.ClientSession, tool string, args map[string]any) (size int, heap uint64) {
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
	return len(res.Content[0].(*mcp.TextContent).Text), peak - min(base, peak)
}

// BenchmarkShowSession is one show_session call of the 1M-event session:
// the first page; a page from seq 999,000 on a server that read the log
// before (the steady state of a client paging: the server's seq index
// seeks near the page); and that page on a fresh server each call (the
// first read of a late page reads the log up to it). With the heap one
// answer holds and the process's peak RSS (VmHWM; generation included
// when the cache is cold).
func BenchmarkShowSession(b *testing.B) {
	for _, tt := range []struct {
		name  string
		from  int64
		fresh bool
	}{{"first", 0, false}, {"last", longEvents - 1000, false}, {"last-cold", longEvents - 1000, true}} {
		b.Run("page="+tt.name, func(b *testing.B) {
			home := longHome(b)
			args := map[string]any{"session": "latest", "from_seq": tt.from}
			cs := client(b, home)
			if !tt.fresh {
				call(b, cs, "show_session", args) // the index, learnt once
			}
			b.ResetTimer()
			var worst uint64
			var size int
			for b.Loop() {
				if tt.fresh {
					b.StopTimer()
					cs.Close()
					cs = client(b, home)
					b.StartTimer()
				}
				var heap uint64
				size, heap = call(b, cs, "show_session", args)
				worst = max(worst, heap)
			}
			b.ReportMetric(float64(worst)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(size), "answer-bytes")
			b.ReportMetric(float64(vmHWM(b))/(1<<20), "peak-RSS-MiB")
			runtime.KeepAlive(cs)
		})
	}
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
