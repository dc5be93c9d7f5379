package tools

import (
	"fmt"
	"sync"
)

// capBuffer is an io.Writer that keeps at most max bytes: the first half of
// what was written and the last half, in a ring. It is safe for concurrent
// writers.
type capBuffer struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // ring of capacity tcap once full
	hcap  int
	tcap  int
	pos   int // next write position in tail once full
	total int64
}

func newCapBuffer(max int) *capBuffer {
	if max < 2 {
		max = 2
	}
	h := max / 2
	return &capBuffer{hcap: h, tcap: max - h}
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.hcap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) >= b.tcap {
		b.tail = append(b.tail[:0], p[len(p)-b.tcap:]...)
		b.pos = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(b.tail) < b.tcap {
			k := min(b.tcap-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(b.tail[b.pos:], p)
		b.pos = (b.pos + k) % b.tcap
		p = p[k:]
	}
	return n, nil
}

// Result returns what was kept and whether anything was cut.
func (b *capBuffer) Result() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := make([]byte, 0, len(b.tail))
	tail = append(tail, b.tail[b.pos:]...)
	tail = append(tail, b.tail[:b.pos]...)
	kept := int64(len(b.head) + len(tail))
	if kept == b.total {
		return string(b.head) + string(tail), false
	}
	return fmt.Sprintf("%s\n[... %d bytes elided ...]\n%s", b.head, b.total-kept, tail), true
}

// truncated reports whether anything written was not kept.
func (b *capBuffer) truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int64(len(b.head)+len(b.tail)) < b.total
}
