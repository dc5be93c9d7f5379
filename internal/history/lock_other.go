//go:build !unix

package history

import (
	"fmt"
	"os"
)

// LockDir is a no-op where flock is missing: only one writer may then run
// at a time (the manifest swap itself stays atomic).
func LockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() {}, nil
}
