// Command history benchmarks the query path of issue 5: N sessions of E
// events, an aggregate query through `agentctl query` before and after
// `agentctl history compact`, and jq over the same events as JSONL.
//
//	go build -tags netgo,osusergo -o /tmp/agentctl ./cmd/agentctl
//	go run ./bench/history -agentctl /tmp/agentctl -sessions 10000 -events 100
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentctl/agentctl/bench/internal/benchgen"
	"github.com/agentctl/agentctl/internal/history"
)

const sqlQ = `SELECT model, count(*) AS calls, sum(input_tokens + output_tokens) AS tokens, sum(cost_usd) AS cost FROM events WHERE kind = 'model_call' GROUP BY model ORDER BY model`

const jqQ = `select(.kind == "model_call") | [.model, (.input_tokens + .output_tokens), .cost_usd]`

func main() {
	bin := flag.String("agentctl", "agentctl", "agentctl binary")
	n := flag.Int("sessions", 10000, "sessions")
	e := flag.Int("events", 100, "events per session")
	dir := flag.String("dir", "", "work folder (default: a temp folder, removed)")
	runs := flag.Int("runs", 5, "timed runs of each query (after one warm-up)")
	flag.Parse()
	home := *dir
	if home == "" {
		home, _ = os.MkdirTemp("", "agentctl-bench-")
		defer os.RemoveAll(home)
	} else {
		must(os.MkdirAll(home, 0o755))
	}
	jsonl := filepath.Join(home, "events.jsonl")
	t0 := time.Now()
	must(generate(home, jsonl, *n, *e))
	fmt.Printf("generated %d sessions x %d events in %s\n", *n, *e, time.Since(t0).Round(time.Millisecond))

	h := history.New(home)
	h.AutoCompactFiles = -1
	ids, _ := h.Store.IDs()
	t0 = time.Now()
	_, err := h.Seal(ids...)
	must(err)
	fmt.Printf("sealed %d sessions in %s\n", len(ids), time.Since(t0).Round(time.Millisecond))

	// Each run is a new agentctl process; the first one warms the page
	// cache. Best and median of the next *runs.
	q := func() (best, median time.Duration) {
		run(*bin, "--home", home, "query", sqlQ) // warm up
		var ds []time.Duration
		for range *runs {
			t := time.Now()
			run(*bin, "--home", home, "query", sqlQ)
			ds = append(ds, time.Since(t))
		}
		slices.Sort(ds)
		return ds[0], ds[len(ds)/2]
	}
	floor, _ := timeRuns(*runs, *bin, "version")
	before, beforeMed := q()
	t0 = time.Now()
	run(*bin, "--home", home, "history", "compact")
	compact := time.Since(t0)
	after, afterMed := q()
	t0 = time.Now()
	out, err := exec.Command("jq", "-c", jqQ, jsonl).Output()
	must(err)
	jq := time.Since(t0)
	_ = out
	fmt.Printf("agentctl version (process floor, best):    %s\n", floor.Round(time.Millisecond))
	fmt.Printf("query before compaction (warm, best/median of %d): %s / %s\n", *runs, before.Round(time.Millisecond), beforeMed.Round(time.Millisecond))
	fmt.Printf("history compact:                           %s\n", compact.Round(time.Millisecond))
	fmt.Printf("query after compaction (warm, best/median of %d):  %s / %s\n", *runs, after.Round(time.Millisecond), afterMed.Round(time.Millisecond))
	fmt.Printf("jq over JSONL:                             %s\n", jq.Round(time.Millisecond))
	fmt.Printf("ratios: jq / after = %.1fx, before / after = %.1fx\n", float64(jq)/float64(after), float64(before)/float64(after))
}

func generate(home, jsonl string, n, e int) error { return benchgen.History(home, jsonl, n, e) }

// timeRuns runs bin args n times and returns the best and median times.
func timeRuns(n int, bin string, args ...string) (best, median time.Duration) {
	var ds []time.Duration
	for range n {
		t := time.Now()
		run(bin, args...)
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds[0], ds[len(ds)/2]
}

func run(bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		must(fmt.Errorf("%s %v: %w", bin, args, err))
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
