//go:build unix

package bundle

import (
	"errors"
	"os"
	"syscall"
)

// lockFd takes a non-blocking exclusive flock on fd, which the bundle
// holds while it writes a temp file or folder: a temp whose lock can be
// taken belongs to no live bundle (a killed one's lock went with it) and
// is removed by the next bundle (see removeStale). It reports whether the
// lock was taken.
func lockFd(fd uintptr) bool {
	for {
		err := syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}

// stale reports whether the temp at path, made by process pid, belongs to
// no live bundle: pid is gone and no process holds its lock (lockFd). The
// lock alone would not do: a new temp is unlocked for the moment between
// its creation and its lock, while its maker is alive; the pid alone
// would not either: it may name a live process of another pid namespace.
func stale(path string, pid int) bool {
	if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close() // drops the lock again
	return lockFd(f.Fd())
}
