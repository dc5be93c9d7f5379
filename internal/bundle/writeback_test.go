package bundle

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The bundle streams its workspace into the file and patches a header in
// place only when the output can be written at an offset and seeked.
var (
	_ io.WriterAt = (*writebackFile)(nil)
	_ io.Seeker   = (*writebackFile)(nil)
)

// TestWritebackFile: what goes through writebackFile, appended or patched
// in place, is what the file holds.
func TestWritebackFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := newWritebackFile(f)
	var want bytes.Buffer
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for i := range 20 {
		chunk[0] = byte(i)
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
		want.Write(chunk)
	}
	if _, err := w.WriteAt([]byte("patched"), 5<<20); err != nil {
		t.Fatal(err)
	}
	copy(want.Bytes()[5<<20:], "patched")
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("file holds %d bytes that differ from the %d written", len(got), want.Len())
	}
}
