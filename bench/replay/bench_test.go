package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/agentctl/agentctl/bench/internal/benchgen"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
)

// The rows of bench/run for replay verify from disk (issue 23's goal: at
// least 1M events/s for one 100k-event session and for 1,000 x 100,
// linear within 10% from 10k to 100k). Each verifies real logs exactly as
// `agentctl replay verify` does (replaycheck.VerifyLogs, GC at 400%), and
// reports events per second and ns per event. The logs are written once
// per benchmark, before the timer.

func BenchmarkVerifyLong(b *testing.B)    { benchVerify(b, 1, 100_000) }
func BenchmarkVerifyLong10k(b *testing.B) { benchVerify(b, 1, 10_000) }
func BenchmarkVerifyMany(b *testing.B)    { benchVerify(b, 1000, 100) }

func benchVerify(b *testing.B, sessions, events int) {
	// bench/run runs each benchmark as its own process several times; it
	// names a folder where the logs, being deterministic, are written once.
	root := b.TempDir()
	if d := os.Getenv("AGENTCTL_BENCH_CACHE"); d != "" {
		root = filepath.Join(d, fmt.Sprintf("replay-%dx%d", sessions, events))
	}
	st := recorder.Store{Root: root}
	var ids []string
	for i := range sessions {
		ids = append(ids, fmt.Sprintf("s%015d", i))
	}
	done := filepath.Join(root, "complete")
	if _, err := os.Stat(done); err != nil {
		os.RemoveAll(root)
		evs := benchgen.Replay(events, 10)
		for _, id := range ids {
			if err := benchgen.WriteLog(st, id, evs); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // as cli verifyMany
	var n int64
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		for _, rep := range replaycheck.VerifyLogs(ids, st.LogPath) {
			if rep.Status != replaycheck.StatusOK {
				b.Fatal(rep.Text())
			}
			n += rep.Events
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "Mevents/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
	// CPU time (all threads): what the verify costs when no core is free
	// for its second goroutine.
	b.ReportMetric(float64(n)/(cpuTime()-c0).Seconds()/1e6, "Mevents/cpu-s")
}
