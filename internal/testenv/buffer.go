package testenv

import (
	"bytes"
	"sync"
)

// Buffer collects what a subprocess or a goroutine writes while the test
// reads it: a bytes.Buffer whose Write and String may run at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
