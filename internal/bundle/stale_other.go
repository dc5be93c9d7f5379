//go:build !unix

package bundle

// lockFd takes no lock where flock is missing; stale then never reports a
// temp as free, and nothing is removed by removeStale there.
func lockFd(fd uintptr) bool { return false }

func stale(path string, pid int) bool { return false }
