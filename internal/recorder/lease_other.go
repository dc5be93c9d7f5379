//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package recorder

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked")

func lockFile(f *os.File) error {
	return errors.New("file locks are not supported on this platform")
}

func processAlive(pid int) bool { return true }
