// Command replay measures `agentctl replay verify` throughput: one session
// of 100,000 events and 1,000 sessions of 100 events, generated with real
// request digests and written as real logs, then verified from disk (read
// + fold + hash, replaycheck.VerifyLog and replaycheck.VerifyLogs as the CLI runs
// them) and in memory (fold + hash). Linear growth shows as the same
// ns/event at 10,000 and 100,000 events. Each from-disk figure is the best
// and median of -runs, in wall-clock and in process CPU time.
//
//	go run ./bench/replay            # the figures in bench/replay/README.md
//	go run ./bench/replay -events 1000000
//	go run ./bench/replay -memory=false -cpuprofile cpu.prof
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/bench/internal/benchgen"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
)

func main() {
	events := flag.Int("events", 100_000, "events of the long session")
	sessions := flag.Int("sessions", 1000, "number of short sessions")
	short := flag.Int("short", 100, "events per short session")
	every := flag.Int("compact-every", 10, "turns between compactions (0: never)")
	gcPercent := flag.Int("gogc", 400, "GC percent while verifying from disk (agentctl replay verify sets 400)")
	runs := flag.Int("runs", 5, "times each from-disk figure is measured (best and median are shown)")
	memory := flag.Bool("memory", true, "also measure verify in memory")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the from-disk runs to `file`")
	flag.Parse()

	dir, err := os.MkdirTemp("", "agentctl-bench-replay-")
	check(err)
	defer os.RemoveAll(dir)
	st := recorder.Store{Root: dir}

	small := gen(*events/10, *every)
	big := gen(*events, *every)
	if *memory {
		fmt.Printf("verify in memory (fold + hash), %d turns between compactions:\n", *every)
		nsSmall := inMemory("  %7d events", small)
		nsBig := inMemory("  %7d events", big)
		fmt.Printf("  growth 10x events: %.2fx ns/event (1.0 = linear)\n", nsBig/nsSmall)
	}

	write(st, "b000000000000000", big)
	// The CLI holds no generated copy: let the GC forget them.
	write(st, "a000000000000000", small)
	nBig, nSmall := len(big), len(small)
	small, big = nil, nil
	var ids []string
	for i := range *sessions {
		id := fmt.Sprintf("s%015d", i)
		write(st, id, gen(*short, *every))
		ids = append(ids, id)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}

	fi, err := os.Stat(st.LogPath("b000000000000000"))
	check(err)
	fmt.Printf("log of the long session: %.1f MB, %d bytes/event\n", float64(fi.Size())/1e6, fi.Size()/int64(nBig))
	// As `agentctl replay verify` does while it verifies (cli verifyMany).
	debug.SetGCPercent(*gcPercent)
	long := []string{"b000000000000000"}
	cpuSmall := repeat(*runs, fmt.Sprintf("verify from disk, one session of %d events, 1 goroutine", nSmall), func() int64 {
		return verifyAll(st, []string{"a000000000000000"})
	})
	cpuBig := repeat(*runs, fmt.Sprintf("verify from disk, one session of %d events, 1 goroutine", nBig), func() int64 {
		return verifyAll(st, long)
	})
	fmt.Printf("  growth 10x events from disk: %.2fx CPU ns/event (1.0 = linear)\n",
		(float64(cpuBig)/float64(nBig))/(float64(cpuSmall)/float64(nSmall)))
	repeat(*runs, fmt.Sprintf("verify from disk, one session of %d events, as the CLI (decode and verify pipelined)", nBig), func() int64 {
		return verifyCLI(st, long)
	})
	repeat(*runs, fmt.Sprintf("verify from disk, %d sessions of %d events, 1 goroutine", len(ids), *short), func() int64 {
		return verifyAll(st, ids)
	})
	repeat(*runs, fmt.Sprintf("verify from disk, %d sessions of %d events, as the CLI (%d workers)", len(ids), *short, runtime.GOMAXPROCS(0)), func() int64 {
		return verifyCLI(st, ids)
	})
	debug.SetGCPercent(100)

	pprof.StopCPUProfile()

	if *memory && *every > 0 {
		nc := gen(10_000, 0)
		inMemory("no compaction (payload grows without bound), %d events", nc)
	}
}

// repeat measures f (which returns the events it verified) n times and
// prints the best and median wall-clock time and process CPU time (user +
// system, all threads). Other work on the machine stretches wall time; the
// best run and CPU time are the steadier figures. It returns the best CPU
// time.
func repeat(n int, label string, f func() int64) time.Duration {
	var walls, cpus []time.Duration
	var events int64
	for range max(n, 1) {
		t0, c0 := time.Now(), cpuTime()
		events = f()
		walls = append(walls, time.Since(t0))
		cpus = append(cpus, cpuTime()-c0)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	rate := func(d time.Duration) float64 { return float64(events) / d.Seconds() / 1e6 }
	best, med := walls[0], walls[len(walls)/2]
	fmt.Printf("%s:\n  wall best %v (%.2f M events/s), median %v (%.2f M/s); CPU best %v (%.2f M events per CPU second), median %v\n",
		label, best.Round(time.Millisecond), rate(best), med.Round(time.Millisecond), rate(med),
		cpus[0].Round(time.Millisecond), rate(cpus[0]), cpus[len(cpus)/2].Round(time.Millisecond))
	return cpus[0]
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func inMemory(label string, evs []session.Event) float64 {
	best := time.Duration(1 << 62)
	for range 3 {
		t0 := time.Now()
		must(replaycheck.Verify("x", evs, replaycheck.VerifyOptions{}))
		best = min(best, time.Since(t0))
	}
	ns := float64(best.Nanoseconds()) / float64(len(evs))
	fmt.Printf(label+": %v, %.0f ns/event, %.2f M events/s\n", len(evs), best.Round(time.Microsecond), ns, 1e3/ns)
	return ns
}

// verifyAll verifies the sessions one after the other on one goroutine.
func verifyAll(st recorder.Store, ids []string) int64 {
	var total int64
	for _, id := range ids {
		rep := replaycheck.VerifyLog(id, st.LogPath(id), false)
		must(rep)
		total += rep.Events
	}
	return total
}

// verifyCLI verifies the sessions as `agentctl replay verify` does.
func verifyCLI(st recorder.Store, ids []string) int64 {
	var total int64
	for _, rep := range replaycheck.VerifyLogs(ids, st.LogPath) {
		must(rep)
		total += rep.Events
	}
	return total
}

func must(r replaycheck.Report) {
	if r.Status != replaycheck.StatusOK {
		fmt.Fprint(os.Stderr, r.Text())
		os.Exit(1)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func gen(n, every int) []session.Event { return benchgen.Replay(n, every) }

func write(st recorder.Store, id string, evs []session.Event) { check(benchgen.WriteLog(st, id, evs)) }
