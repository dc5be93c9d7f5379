package benchgen

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/history"
)

// CacheEnv names the folder generated histories are kept in between runs
// (default: the system's temp folder).
const CacheEnv = "AGENTCTL_BENCH_CACHE"

// SealedHistory is a home of n sessions of eventsPerSession events each,
// sealed and compacted as a CI runner's history is, generated once into
// the cache and reused by every benchmark that asks for the same n (the
// ui runs page's and the mcp server's rows measure the same data).
func SealedHistory(tb testing.TB, n, eventsPerSession int) string {
	tb.Helper()
	root := os.Getenv(CacheEnv)
	if root == "" {
		root = filepath.Join(os.TempDir(), "agentctl-bench-ui")
	}
	h := filepath.Join(root, fmt.Sprintf("ui-%d", n))
	if eventsPerSession != 20 {
		h += fmt.Sprintf("-%d", eventsPerSession)
	}
	done := filepath.Join(h, "generated")
	if _, err := os.Stat(done); err == nil {
		return h
	}
	os.RemoveAll(h)
	if err := os.MkdirAll(h, 0o755); err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	jsonl := filepath.Join(h, "events.jsonl")
	if err := History(h, jsonl, n, eventsPerSession); err != nil {
		tb.Fatal(err)
	}
	os.Remove(jsonl)
	hist := history.New(h)
	hist.AutoCompactFiles = -1
	ids, err := hist.Store.IDs()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := hist.Seal(ids...); err != nil {
		tb.Fatal(err)
	}
	if _, err := hist.Compact(history.CompactOptions{}); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("generated, sealed and compacted %d sessions in %s", n, time.Since(t0).Round(time.Second))
	return h
}
