package collect

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/recorder"
)

// BenchmarkIngester: the Ingester alone, in process, on BenchmarkIngest's
// batches (4 concurrent callers handing over the protobuf bytes, as the
// HTTP receiver does): what acknowledging costs without HTTP (the traces
// are written into sessions after the timer stops).
func BenchmarkIngester(b *testing.B) {
	const n = 10_000
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		bodies := batches(n, uint64(i+1))
		in, err := otelsession.NewIngester(recorder.Store{Root: b.TempDir()}, otelsession.Options{Source: "bench", Settle: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		next := make(chan []byte, len(bodies))
		for _, body := range bodies {
			next <- body
		}
		close(next)
		b.StartTimer()
		var wg sync.WaitGroup
		for range exporters {
			wg.Go(func() {
				for body := range next {
					if _, err := in.TracesWire(context.Background(), body); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		if err := in.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}
