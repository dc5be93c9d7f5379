package bundle

import (
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// frameWriter compresses a stream on several goroutines: the input is cut
// into chunks of size bytes, each chunk becomes an independent zstd frame
// (zstd.Encoder.EncodeAll), and the frames are written to w in input order.
// A sequence of frames is one valid zstd stream. Memory is bounded by bufs
// chunk buffers and the encoder's concurrency; Write blocks while every
// buffer is in use.
//
// Write and Close must not be called concurrently. After an error from w,
// Write and Close return it and the rest of the input is dropped.
type frameWriter struct {
	w     io.Writer
	enc   *zstd.Encoder
	size  int
	cur   *frameJob
	free  chan *frameJob
	work  chan *frameJob
	order chan *frameJob
	done  sync.WaitGroup
	mu    sync.Mutex
	err   error
}

type frameJob struct {
	in, out []byte
	ready   chan struct{}
}

// newFrameWriter starts workers goroutines that compress with enc (whose
// concurrency should be at least workers) and one that writes to w.
func newFrameWriter(w io.Writer, enc *zstd.Encoder, workers, size int) *frameWriter {
	bufs := workers + 1
	f := &frameWriter{w: w, enc: enc, size: size, free: make(chan *frameJob, bufs),
		work: make(chan *frameJob, bufs), order: make(chan *frameJob, bufs)}
	for range bufs {
		// Output buffers start at a quarter of a chunk (source text
		// compresses 4-6x) and grow when a chunk needs more.
		f.free <- &frameJob{in: make([]byte, 0, size), out: make([]byte, 0, size/4), ready: make(chan struct{}, 1)}
	}
	for range workers {
		go func() {
			for j := range f.work {
				j.out = f.enc.EncodeAll(j.in, j.out[:0])
				j.ready <- struct{}{}
			}
		}()
	}
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		for j := range f.order {
			<-j.ready
			if f.error() == nil {
				if _, err := f.w.Write(j.out); err != nil {
					f.mu.Lock()
					f.err = err
					f.mu.Unlock()
				}
			}
			j.in = j.in[:0]
			f.free <- j
		}
	}()
	return f
}

func (f *frameWriter) error() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *frameWriter) Write(p []byte) (int, error) {
	if err := f.error(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		if f.cur == nil {
			f.cur = <-f.free
		}
		k := min(f.size-len(f.cur.in), len(p))
		f.cur.in = append(f.cur.in, p[:k]...)
		p = p[k:]
		if len(f.cur.in) == f.size {
			f.dispatch()
		}
	}
	return n, nil
}

func (f *frameWriter) dispatch() {
	f.order <- f.cur
	f.work <- f.cur
	f.cur = nil
}

// Close compresses what is buffered, waits until every frame is written,
// and stops the goroutines.
func (f *frameWriter) Close() error {
	if f.cur != nil && len(f.cur.in) > 0 {
		f.dispatch()
	}
	close(f.work)
	close(f.order)
	f.done.Wait()
	return f.error()
}
