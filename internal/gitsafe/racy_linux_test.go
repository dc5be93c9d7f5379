package gitsafe_test

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRacyEdit: an edit that keeps a file's size and lands in the same
// second as the index entry git wrote for it ("racy git": this git keeps
// file times in whole seconds, so the edited file's stat data equal the
// entry's) is in the diff. git guards its own index against this by
// treating an entry whose mtime is not older than the index file as
// unsure, and reading the file. The private copy of the index is written
// later than the workspace's, so that guard cannot hold there: before the
// fix, git trusted the stat data and the diff came back empty (the flake
// of TestHead's sha256 diff). The test makes the race certain instead of
// likely: after the edit it writes the edited file's stat data into the
// index entry and gives the index file the entry's mtime, which is the
// state the race leaves. Plain git in the workspace sees the edit (its
// guard holds), so the test can fail only through the private copy.
func TestRacyEdit(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			w := newWorld(t)
			s := filepath.Join(t.TempDir(), "s")
			w.write(filepath.Join(s, "f"), "x\n")
			w.write(filepath.Join(s, "g"), "unchanged\n")
			w.git(s, "init", "-q", "--object-format="+format)
			w.git(s, "add", ".")
			w.git(s, "commit", "-qm", "s")
			p := filepath.Join(s, "f")
			w.write(p, "y\n")
			mtime := racyIndex(t, s, "f", map[string]int{"sha1": 20, "sha256": 32}[format])
			plain := exec.Command("git", "-C", s, "diff", "HEAD")
			plain.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.out, "GIT_CONFIG_NOSYSTEM=1", "GIT_OPTIONAL_LOCKS=0"}
			if out, err := plain.CombinedOutput(); err != nil || !strings.Contains(string(out), "+y") {
				t.Fatalf("plain git does not see the edit either (%v): %s; the race is not set up", err, out)
			}
			if fi, _ := os.Stat(filepath.Join(s, ".git", "index")); !fi.ModTime().Equal(mtime) {
				t.Fatalf("the index's mtime moved: %v, want %v", fi.ModTime(), mtime)
			}
			w.ws = s
			diff, err := w.safe()
			if err != nil || !strings.Contains(diff, "+y") || strings.Contains(diff, "unchanged") {
				t.Errorf("the diff of a same-size edit in the index's second = %q, %v; want +y and nothing of g", diff, err)
			}
		})
	}
}

// racyIndex writes the current stat data of name into its entry of ws's
// version 2 index (the blob id stays the committed one), recomputes the
// checksum, and sets the index file's mtime to the file's: what git leaves
// when the edit and the index write share a second. It returns that
// mtime.
func racyIndex(t *testing.T, ws, name string, hashLen int) time.Time {
	t.Helper()
	index := filepath.Join(ws, ".git", "index")
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:4]) != "DIRC" || binary.BigEndian.Uint32(b[4:8]) != 2 {
		t.Fatalf("not a version 2 index")
	}
	// The mtime goes back a few seconds: without nanosecond times (Debian's
	// git), git's guard compares seconds, and the private copy must be
	// written in a later second than the entry for the guard to fail, as it
	// did when the flake struck under -race.
	old := time.Now().Add(-5 * time.Second)
	if err := os.Chtimes(filepath.Join(ws, name), old, old); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(ws, name), &st); err != nil {
		t.Fatal(err)
	}
	off, found := 12, false
	for range binary.BigEndian.Uint32(b[8:12]) {
		fixed := 40 + hashLen + 2
		end := bytes.IndexByte(b[off+fixed:], 0)
		if string(b[off+fixed:off+fixed+end]) == name {
			be := binary.BigEndian
			be.PutUint32(b[off:], uint32(st.Ctim.Sec))
			be.PutUint32(b[off+4:], uint32(st.Ctim.Nsec))
			be.PutUint32(b[off+8:], uint32(st.Mtim.Sec))
			be.PutUint32(b[off+12:], uint32(st.Mtim.Nsec))
			be.PutUint32(b[off+16:], uint32(st.Dev))
			be.PutUint32(b[off+20:], uint32(st.Ino))
			be.PutUint32(b[off+28:], st.Uid)
			be.PutUint32(b[off+32:], st.Gid)
			be.PutUint32(b[off+36:], uint32(st.Size))
			found = true
		}
		off += (fixed + end + 8) &^ 7
	}
	if !found {
		t.Fatalf("no index entry %q", name)
	}
	body := b[:len(b)-hashLen]
	if hashLen == 32 {
		sum := sha256.Sum256(body)
		copy(b[len(body):], sum[:])
	} else {
		sum := sha1.Sum(body)
		copy(b[len(body):], sum[:])
	}
	if err := os.WriteFile(index, b, 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	if err := os.Chtimes(index, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return mtime
}
