// Package ui measures the server time of `agentctl ui`'s runs page over a
// generated history of 10,000 and 100,000 sealed sessions, for several
// filters, against `agentctl sessions --json` of the same history as a
// process (the only other way to list it).
//
//	go test -run '^$' -bench 'Runs|SessionsJSON' -benchtime 5x ./bench/ui
//
// The histories are generated once into $AGENTCTL_BENCH_CACHE (bench/run
// sets it), else a folder of the system's temp dir that later runs reuse.
// The agentctl binary is $AGENTCTL_BENCH_AGENTCTL, else one built here.
//
// A page's time is a request answered by the server's handler in process
// (the guard, the change check, the runs index, the template; ns/op its
// wall time, cpu-ms/op the process's CPU time), after a first request that
// opened the database and made the page's index from the sessions view
// (and, for a text search, the text index), reported as open-ms: it is
// paid once per change of the home, not per page. rss-MB is the process's
// resident set after that first request (DuckDB's memory too, and what
// earlier sub-benchmarks left), heap-MB the Go heap in use then (the
// index, mostly).
//
// The text filter's history is the index's best case: every session's
// messages are the same text. internal/ui's BenchmarkTextSearch measures
// its worst, no two messages alike.
package ui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/bench/internal/benchgen"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/ui"
)

// eventsPerSession is each generated session's length: a model call,
// a tool call and an assistant message a turn.
const eventsPerSession = 20

// filters are the runs page's query strings measured: none, each kind of
// filter, a text search in the messages (the one that reads the events)
// and a page deep in the list.
var filters = []struct{ name, query string }{
	{"none", ""},
	{"status", "status=done"},
	{"model", "model=gpt-4o-mini"},
	{"since", "since=" + benchgen.Epoch.Add(5000*time.Second).Format(time.RFC3339)},
	{"cost", "cost=0.004"},
	{"tag", "tag=env%3Dci"},
	{"text", "q=next+step"},
	{"nomatch", "model=none&q=nothing"},
	{"page", "after=" + fmt.Sprint(benchgen.Epoch.Add(5000*time.Second).UnixMicro()) + "_0000000000001388"},
}

var sizes = []int{10000, 100000}

// home is a history of n sealed sessions, generated once (shared with
// bench/mcp).
func home(b *testing.B, n int) string { return benchgen.SealedHistory(b, n, eventsPerSession) }

// BenchmarkRunsPage is one request of the runs page, by size and filter.
func BenchmarkRunsPage(b *testing.B) {
	for _, n := range sizes {
		for _, f := range filters {
			b.Run(fmt.Sprintf("sessions=%d/filter=%s", n, f.name), func(b *testing.B) {
				h := home(b, n)
				srv, err := ui.New(ui.Options{Store: recorder.Store{Root: h}})
				if err != nil {
					b.Fatal(err)
				}
				defer srv.Close()
				handler := srv.Handler()
				get := func() int {
					req := httptest.NewRequest("GET", "/runs?"+f.query, nil)
					req.Header.Set("Authorization", "Bearer "+srv.Token())
					w := httptest.NewRecorder()
					handler.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("GET /runs?%s: %d %s", f.query, w.Code, w.Body.String())
					}
					return strings.Count(w.Body.String(), "<tr data-session=")
				}
				t0 := time.Now()
				rows := get()
				open := time.Since(t0)
				// The first request's garbage (the index made from the
				// view) is collected now, not charged to the requests.
				runtime.GC()
				cpu0 := cpuTime()
				b.ResetTimer()
				for range b.N {
					get()
				}
				b.StopTimer()
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(open.Milliseconds()), "open-ms")
				b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MB")
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
				b.ReportMetric(float64(rows), "rows")
			})
		}
	}
}

// BenchmarkSessionsJSON is `agentctl sessions --json` of the same
// history, a process from start to exit.
func BenchmarkSessionsJSON(b *testing.B) {
	bin := agentctl(b)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			h := home(b, n)
			run := func() {
				cmd := exec.CommandContext(context.Background(), bin, "--home", h, "sessions", "--json")
				cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
			run() // the page cache, as the page's first request
			b.ResetTimer()
			for range b.N {
				run()
			}
		})
	}
}

// cpuTime is the process's CPU time so far (user and system, every
// thread: DuckDB's too). On a shared machine the wall time of a request
// is as much the other processes' as the server's; its CPU time is not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssBytes is the process's resident set now (Linux; 0 elsewhere): the
// server's, with its index and DuckDB's memory, after the page was served.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, rss int64
	fmt.Sscan(string(b), &size, &rss)
	return rss * int64(os.Getpagesize())
}

func agentctl(b *testing.B) string {
	if p := os.Getenv("AGENTCTL_BENCH_AGENTCTL"); p != "" {
		return p
	}
	p := filepath.Join(b.TempDir(), "agentctl")
	cmd := exec.Command("go", "build", "-o", p, "./cmd/agentctl")
	cmd.Dir = testenv.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/agentctl: %v\n%s", err, out)
	}
	return p
}
