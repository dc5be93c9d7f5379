package collect

import "sync"

// budget is the in-flight memory shared by every request being served:
// a request reserves what it will hold before it holds it, and is
// refused (429, back-pressure) when that does not fit now, so many large
// exports at once slow their exporters down instead of growing the
// collector.
type budget struct {
	mu    sync.Mutex
	total int64
	used  int64
}

// tryAcquire reserves n bytes if they fit now.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.total {
		return false
	}
	b.used += n
	return true
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
