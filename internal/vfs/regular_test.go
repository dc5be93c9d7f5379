//go:build unix

package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenRegular is issue 38 finding 20: a named pipe, a device or a
// folder is refused at once (a pipe opened for reading waited for a
// writer), with an error that names what it is.
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.json")
	os.WriteFile(file, []byte("{}"), 0o644)
	pipe := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, kind string
	}{
		{file, ""},
		{pipe, "named pipe"},
		{dir, "folder"},
		{"/dev/null", "character device"},
	}
	for _, tt := range tests {
		b, err := ReadRegular(tt.path)
		if tt.kind == "" {
			if err != nil || string(b) != "{}" {
				t.Errorf("ReadRegular(%s) = %q, %v", tt.path, b, err)
			}
			continue
		}
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "is a "+tt.kind+", not a regular file") {
			t.Errorf("ReadRegular(%s) error = %v, want ErrNotRegular naming a %s", tt.path, err, tt.kind)
		}
	}
}
