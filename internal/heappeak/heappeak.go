// Package heappeak measures the most heap a piece of work holds at once,
// for the tests and benchmarks that bound memory (a listing of a 1M-event
// session, a proxied 256 MiB stream, a view of a long session): one
// sampler, so each bound is measured the same way and without a race.
package heappeak

import (
	"runtime"
	"runtime/metrics"
	"time"
)

const objects = "/memory/classes/heap/objects:bytes"

// During runs fn and returns the heap in live objects before it (after a
// GC) and the most seen while it ran, sampled every 2 ms: a sampler can
// miss a shorter peak, so bounds built on it must be loose.
func During(fn func()) (base, peak uint64) {
	read := func(s []metrics.Sample) uint64 { metrics.Read(s); return s[0].Value.Uint64() }
	runtime.GC()
	base = read([]metrics.Sample{{Name: objects}})
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: objects}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, read(s))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(done)
	<-stopped // the sampler's last write to peak happens before this
	return base, max(peak, read([]metrics.Sample{{Name: objects}}))
}
