package provider

import (
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCorpusIntact proves the captures the tests read are the recorded ones:
// each file's git blob id must start with the id SOURCES.md lists for it.
func TestCorpusIntact(t *testing.T) {
	dir := corpusDir(t)
	sources, err := os.ReadFile(filepath.Join(dir, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(sse/[^`]+)` \\|.*?\\| `([0-9a-f]{12})` \\|")
	checked := 0
	for _, m := range row.FindAllStringSubmatch(string(sources), -1) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m[1])))
		if err != nil {
			t.Errorf("%s: %v", m[1], err)
			continue
		}
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(b))
		h.Write(b)
		if got := fmt.Sprintf("%x", h.Sum(nil)); !strings.HasPrefix(got, m[2]) {
			t.Errorf("%s: git blob %s, SOURCES.md says %s", m[1], got[:12], m[2])
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d corpus files against SOURCES.md, want at least 10", checked)
	}
}
