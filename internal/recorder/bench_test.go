package recorder

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// The benchmarks compare durable appends with a bare write+fsync per event:
// BenchmarkAppendConcurrent's events/s over BenchmarkBareFsyncWrite's is
// what group commit buys.

var benchEvent = session.Event{Kind: session.KindUserMessage, Text: "a user message of a typical length, some sixty bytes or so"}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkAppendSingle(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), LogFile), session.Event{}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ResetTimer()
	for range b.N {
		if _, err := w.Append(benchEvent); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

func BenchmarkAppendConcurrent(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), LogFile), session.Event{}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	// 64 appenders in all.
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := w.Append(benchEvent); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b)
}

func BenchmarkBareFsyncWrite(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), LogFile))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ev := benchEvent
	ev.Seq = 2
	p, err := encode(ev)
	if err != nil {
		b.Fatal(err)
	}
	frame := appendFrame(nil, RecordEvent, p)
	b.ResetTimer()
	for range b.N {
		if _, err := f.Write(frame); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

// BenchmarkAppendNoSync is the CPU cost of an Append without the fsync:
// encoding, framing, the write, and the calls through Options.FS.
func BenchmarkAppendNoSync(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), LogFile), session.Event{}, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ResetTimer()
	for range b.N {
		if _, err := w.Append(benchEvent); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}
