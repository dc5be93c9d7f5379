//go:build unix

package gitsafe_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFO: named pipes do not block the diff (git opens neither): an
// untracked one is left out, and a tracked file replaced by one fails the
// diff at once with git's message naming it.
func TestFIFO(t *testing.T) {
	w := newWorld(t)
	if err := syscall.Mkfifo(filepath.Join(w.ws, "pipe"), 0o644); err != nil {
		t.Skip(err)
	}
	safe := func() (string, error) {
		done := make(chan struct{})
		var diff string
		var err error
		go func() { diff, err = w.safe(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the diff blocked on a named pipe")
		}
		return diff, err
	}
	if diff, err := safe(); err != nil || !strings.Contains(diff, "+one changed") || strings.Contains(diff, "pipe") {
		t.Errorf("diff with an untracked pipe = %s, %v", diff, err)
	}
	os.Remove(filepath.Join(w.ws, "b.txt"))
	syscall.Mkfifo(filepath.Join(w.ws, "b.txt"), 0o644)
	if _, err := safe(); err == nil || !strings.Contains(err.Error(), "b.txt: unsupported file type") {
		t.Errorf("diff with a tracked pipe: %v, want git's unsupported file type", err)
	}
}
