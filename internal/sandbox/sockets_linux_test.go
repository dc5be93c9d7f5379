package sandbox

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// TestSocketsUnder: the getdents walk of coverSockets finds what
// filepath.WalkDir finds (its reference): sockets at every depth, in a
// folder too large for one getdents batch, not behind a symlink, not in
// the skipped folder, and each folder once when the roots overlap.
func TestSocketsUnder(t *testing.T) {
	root := hostDir(t)
	listen := func(rel string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	listen("a.sock")
	listen("d1/d2/d3/deep.sock")
	listen("skip/hidden.sock")
	listen("elsewhere/linked.sock") // found once, at its own path
	big := filepath.Join(root, "big")
	os.MkdirAll(big, 0o755)
	for i := range 1500 { // ~100 KB of directory entries: several batches
		os.WriteFile(filepath.Join(big, fmt.Sprintf("file-with-a-rather-long-name-%04d.txt", i)), nil, 0o644)
	}
	listen("big/in-the-middle.sock")
	os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, "link"))

	var want []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && p == filepath.Join(root, "skip"):
			return filepath.SkipDir
		case d.Type()&fs.ModeSocket != 0:
			want = append(want, p)
		}
		return nil
	})
	var got []string
	for _, r := range outermost([]string{root, filepath.Join(root, "d1"), root + "/"}) {
		socketsUnder(r, func(p string) bool { return p == filepath.Join(root, "skip") }, &got)
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(want) != 4 || !reflect.DeepEqual(got, want) {
		t.Errorf("socketsUnder found\n%q\nWalkDir finds\n%q", got, want)
	}
}
