// Package leanmem sets the Go collector for work whose live heap is small
// but whose garbage is large: reading a long session a record at a time
// (`view`, `diagnose ID`) and serving such reads (`agentctl ui`). One
// setting, so the command and the tests that measure it run alike.
package leanmem

import (
	"os"
	"runtime/debug"
)

// Limit is the soft memory limit Set applies unless GOMEMLIMIT is set.
const Limit = 64 << 20

// Set puts the collector at +25% instead of +100% and a soft limit of
// Limit unless GOMEMLIMIT is set, and returns what puts both back. The
// live heap of a streamed read is the lean fold and a few words a call
// (~50 MB at a million events); the limit keeps garbage from adding half
// of that again (bench/README.md). Past the limit the runtime caps the
// collector at half the CPU: slower, never stopped.
func Set() (restore func()) {
	gc := debug.SetGCPercent(25)
	limit := int64(-1)
	if os.Getenv("GOMEMLIMIT") == "" {
		limit = debug.SetMemoryLimit(Limit)
	}
	return func() {
		debug.SetGCPercent(gc)
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}
