package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, fsys FS, p, s string, sync bool) File {
	t.Helper()
	f, err := Create(fsys, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

const missing = "<missing>"

func read(p string) string {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return missing
	}
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestCrashClone: only what was synced, file bytes by Sync and folder
// entries by SyncDir, is in the clone; the live files are untouched.
func TestCrashClone(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "old"), []byte("before"), 0o644)
	c, err := NewCrashFS(root)
	if err != nil {
		t.Fatal(err)
	}
	j := func(s string) string { return filepath.Join(root, s) }

	// A synced file whose folder entry was never synced.
	writeFile(t, c, j("nodirsync"), "x", true).Close()
	early := filepath.Join(t.TempDir(), "clone")
	if err := c.Clone(early, CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(early, "nodirsync")); got != missing {
		t.Errorf("a file whose folder was not synced is in the clone, holding %q", got)
	}
	if got := read(filepath.Join(early, "old")); got != "before" {
		t.Errorf("the clone's file from before the CrashFS holds %q, want %q", got, "before")
	}
	// A file and entry both synced, with bytes written after the sync.
	f := writeFile(t, c, j("synced"), "abc", true)
	f.Write([]byte("def"))
	f.Close()
	// A new folder: its entry in root synced, its file's entry not.
	if err := c.MkdirAll(j("d/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c, j("d/e/f"), "in d", true).Close()
	// A file renamed over an old one, synced, rename not synced in its
	// own folder... then synced below with the root.
	writeFile(t, c, j("tmp"), "new", true).Close()
	if err := c.Rename(j("tmp"), j("old")); err != nil {
		t.Fatal(err)
	}
	// A hard link: the same node under two names.
	if err := c.Link(j("synced"), j("link")); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncDir(root); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncDir(j("d")); err != nil {
		t.Fatal(err)
	}
	// After the sync: a rename and a remove that are not synced.
	if err := c.Rename(j("old"), j("moved")); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(j("link")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(j("outside-the-fs"), []byte("made by os"), 0o644)

	for _, keep := range []float64{0, 0.5} {
		dst := filepath.Join(t.TempDir(), "clone")
		if err := c.Clone(dst, CloneOptions{KeepUnsynced: keep}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"nodirsync":      "x", // its entry was synced with the root's below
			"synced":         "abc",
			"link":           "abc",
			"d/e/f":          missing,
			"old":            "new",
			"moved":          missing,
			"tmp":            missing,
			"outside-the-fs": "made by os",
		}
		if keep == 0.5 {
			want["synced"], want["link"] = "abcd", "abcd" // half of "def", rounded down
		}
		for name, w := range want {
			got := read(filepath.Join(dst, name))
			if got != w {
				t.Errorf("keep %v: clone %s = %q, want %q", keep, name, got, w)
			}
		}
		if fi, err := os.Stat(filepath.Join(dst, "d/e")); err != nil || !fi.IsDir() {
			t.Errorf("keep %v: clone lost d/e, whose entry in d was synced: %v", keep, err)
		}
	}
	if got := read(j("synced")); got != "abcdef" {
		t.Errorf("live file = %q, want abcdef", got)
	}
}

// TestMkdirAllSynced: a folder made in a fresh tree survives a crash.
func TestMkdirAllSynced(t *testing.T) {
	root := t.TempDir()
	c, err := NewCrashFS(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, mk := range []struct {
		name string
		fn   func(FS, string, fs.FileMode) error
		want bool
	}{
		{"MkdirAll", func(f FS, p string, m fs.FileMode) error { return f.MkdirAll(p, m) }, false},
		{"MkdirAllSynced", MkdirAllSynced, true},
	} {
		p := filepath.Join(root, mk.name, "a", "b")
		if err := mk.fn(c, p, 0o755); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(t.TempDir(), "clone")
		if err := c.Clone(dst, CloneOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dst, mk.name, "a", "b"))
		if got := err == nil; got != mk.want {
			t.Errorf("%s: folder survives the crash = %v, want %v", mk.name, got, mk.want)
		}
	}
}

// TestInject: the Nth operation fails as the mode says, with an error that
// names it; a count run fails nothing.
func TestInject(t *testing.T) {
	run := func(in *Injector, dir string) error {
		fsys := Inject(OS, in)
		f, err := Create(fsys, filepath.Join(dir, "f")) // op 0
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write([]byte("0123456789")); err != nil { // op 1
			return err
		}
		if err := f.Sync(); err != nil { // op 2
			return err
		}
		return fsys.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "g")) // op 3
	}
	count := &Injector{At: -1}
	if err := run(count, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if count.Count() != 5 { // and the deferred close
		t.Fatalf("counted %d operations: %v", count.Count(), count.Ops())
	}
	for _, tc := range []struct {
		at       int
		mode     Mode
		wantErr  string
		wantFile string // what f holds after
	}{
		{0, ModeError, "create ", missing},
		{1, ModeError, "write ", ""},
		{1, ModeShort, "write ", "01234"},
		{2, ModeError, "sync ", "0123456789"},
		{3, ModeError, "rename ", "0123456789"},
		{1, ModeCrash, "injected crash at operation 1", ""},
	} {
		dir := t.TempDir()
		in := &Injector{At: tc.at, Mode: tc.mode}
		err := run(in, dir)
		if !errors.Is(err, ErrInjected) || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("at %d %v: err = %v, want an injected fault naming %q", tc.at, tc.mode, err, tc.wantErr)
		}
		got := read(filepath.Join(dir, "f"))
		if got != tc.wantFile {
			t.Errorf("at %d %v: file holds %q, want %q", tc.at, tc.mode, got, tc.wantFile)
		}
		if tc.mode == ModeCrash && in.Count() != 3 { // create, write (failed), the deferred close (failed)
			t.Errorf("crash: %d operations seen, want 3", in.Count())
		}
	}
}
