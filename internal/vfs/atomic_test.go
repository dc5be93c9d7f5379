package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries returns the names in dir, sorted.
func entries(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// TestWriteFileAtomic: path holds data with perm, whether it existed or
// not, and nothing else is left in the folder.
func TestWriteFileAtomic(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  string // "" for no file before
		data string
	}{
		{"new", "", "hello"},
		{"replace", "old content", "new"},
		{"empty", "old content", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if tc.old != "" {
				os.WriteFile(p, []byte(tc.old), 0o644)
			}
			if err := WriteFileAtomic(p, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := read(p); got != tc.data {
				t.Errorf("WriteFileAtomic: file holds %q, want %q", got, tc.data)
			}
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("WriteFileAtomic: mode = %v (%v), want 0600", fi.Mode(), err)
			}
			if got := entries(t, dir); got != "f" {
				t.Errorf("WriteFileAtomic: folder holds %q, want only f", got)
			}
		})
	}
	if err := WriteFileAtomic(filepath.Join(t.TempDir(), "no", "f"), nil, 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFileAtomic into a missing folder = %v, want ErrNotExist", err)
	}
}

// TestWriteFileAtomicFaults fails each operation in turn: up to the
// rename the old content stays and the temp file goes; a failed folder
// fsync leaves the new content; every failure is returned.
func TestWriteFileAtomicFaults(t *testing.T) {
	run := func(in *Injector, dir string) error {
		return WriteFileAtomicFS(Inject(OS, in), filepath.Join(dir, "f"), []byte("new content"), 0o644, false)
	}
	count := &Injector{At: -1}
	if err := run(count, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, op := range count.Ops() {
		kinds = append(kinds, op.Kind.String())
	}
	if got, want := strings.Join(kinds, " "), "create write sync close rename syncdir"; got != want {
		t.Fatalf("operations = %s, want %s", got, want)
	}
	for at, op := range count.Ops() {
		for _, mode := range []Mode{ModeError, ModeShort} {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "f"), []byte("old"), 0o644)
			err := run(&Injector{At: at, Mode: mode}, dir)
			if !errors.Is(err, ErrInjected) || !strings.Contains(err.Error(), op.Kind.String()+" ") {
				t.Errorf("fault at %s (%v): err = %v, want the injected fault naming it", op.Kind, mode, err)
			}
			want := "old"
			if op.Kind == OpSyncDir {
				want = "new content"
			}
			if got := read(filepath.Join(dir, "f")); got != want {
				t.Errorf("fault at %s (%v): file holds %q, want %q", op.Kind, mode, got, want)
			}
			if got := entries(t, dir); got != "f" {
				t.Errorf("fault at %s (%v): folder holds %q, want only f", op.Kind, mode, got)
			}
		}
	}
}

// TestWriteFileAtomicDurable: after a power cut (a crash-clone) the file
// holds the new content, unless noSync skipped the fsyncs.
func TestWriteFileAtomicDurable(t *testing.T) {
	for _, tc := range []struct {
		noSync bool
		want   string
	}{
		{false, "new"},
		{true, "old"},
	} {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "f"), []byte("old"), 0o644)
		c, err := NewCrashFS(root)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomicFS(c, filepath.Join(root, "f"), []byte("new"), 0o644, tc.noSync); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(t.TempDir(), "clone")
		if err := c.Clone(dst, CloneOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := read(filepath.Join(dst, "f")); got != tc.want {
			t.Errorf("noSync %v: after a crash the file holds %q, want %q", tc.noSync, got, tc.want)
		}
	}
}

// TestAtomicFileAbort: Abort leaves path as it was and removes the temp
// file; Commit after it fails, and Abort after Commit does nothing.
func TestAtomicFileAbort(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("old"), 0o644)
	a, err := CreateAtomic(OS, p, 0o644, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(a.Name()), ".tmp-f-") || filepath.Dir(a.Name()) != dir {
		t.Errorf("temp file %s, want .tmp-f-* in %s", a.Name(), dir)
	}
	a.Write([]byte("partial"))
	a.Abort()
	a.Abort()
	if got := read(p); got != "old" {
		t.Errorf("after Abort the file holds %q, want old", got)
	}
	if got := entries(t, dir); got != "f" {
		t.Errorf("after Abort the folder holds %q, want only f", got)
	}
	if err := a.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}

	b, err := CreateAtomic(OS, p, 0o644, true)
	if err != nil {
		t.Fatal(err)
	}
	b.Write([]byte("new"))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Abort()
	if got := read(p); got != "new" {
		t.Errorf("Abort after Commit: the file holds %q, want new", got)
	}
}

// TestSyncDir: the real folder fsyncs; a missing one is an error.
func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Errorf("SyncDir = %v", err)
	}
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SyncDir(missing) = %v, want ErrNotExist", err)
	}
}
