package vfs_test

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/internal/vfs"
)

// TestCreateOutputSpecialFiles: an output path that exists and is not a
// regular file is written into or refused, never replaced. The device is a
// double of /dev/null made in a temp folder (mknod c 1 3, as root), so a
// failure cannot break the machine's.
func TestCreateOutputSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
		t.Skipf("mknod (needs root): %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "folder")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "page.html")
	if err := os.WriteFile(regular, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(null, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		mode       fs.FileMode // the path's type afterwards
		direct     bool
		errWant    string
	}{
		{"missing", filepath.Join(dir, "new.html"), 0, false, ""},
		{"regular", regular, 0, false, ""},
		{"char device", null, fs.ModeDevice | fs.ModeCharDevice, true, ""},
		{"symlink to a device", link, fs.ModeSymlink, true, ""},
		{"fifo", fifo, fs.ModeNamedPipe, true, ""},
		{"folder", folder, fs.ModeDir, false, "is a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []byte
			done := make(chan struct{})
			if tt.mode == fs.ModeNamedPipe {
				go func() { // the program at the FIFO's other end
					defer close(done)
					f, err := os.Open(tt.path)
					if err == nil {
						got, _ = io.ReadAll(f)
						f.Close()
					}
				}()
			} else {
				close(done)
			}
			a, err := vfs.CreateOutput(vfs.OS, tt.path, 0o644, false)
			if tt.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errWant) {
					t.Fatalf("err = %v, want %q", err, tt.errWant)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if a.Direct() != tt.direct {
					t.Errorf("Direct() = %v, want %v", a.Direct(), tt.direct)
				}
				if _, err := a.Write([]byte("page")); err != nil {
					t.Fatal(err)
				}
				if err := a.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			<-done
			fi, err := os.Lstat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != tt.mode {
				t.Errorf("%s is now %v, want %v", tt.path, fi.Mode().Type(), tt.mode)
			}
			if tt.mode == 0 {
				if b, _ := os.ReadFile(tt.path); string(b) != "page" {
					t.Errorf("%s holds %q, want the page", tt.path, b)
				}
			}
			if tt.mode == fs.ModeNamedPipe && string(got) != "page" {
				t.Errorf("the FIFO's reader got %q", got)
			}
		})
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temp file %s left behind", e.Name())
		}
	}
}
