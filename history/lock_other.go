//go:build !unix

package history

import (
	"fmt"
	"os"
)

// lock is a no-op where flock is missing: only one writer may then run at
// a time (the manifest swap itself stays atomic).
func lock(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("history: lock: %w", err)
	}
	return func() {}, nil
}
