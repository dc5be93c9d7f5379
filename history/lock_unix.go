//go:build unix

package history

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lock takes the history's writer lock (an exclusive flock on LOCK),
// waiting for another writer to finish. Readers never take it.
func lock(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("history: lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("history: lock: %w", err)
	}
	return func() { f.Close() }, nil
}
