package bundle_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/internal/bundle"
)

// TestExtractWritesNothingUnverified: a hostile bundle whose members do not
// match its MANIFEST (here 32 MiB of a member with the wrong checksum, and
// one the MANIFEST does not list) is refused before a byte is written. The
// target's parent is a 1 MiB tmpfs, so a write of the member would fail
// with "no space left" instead of the MANIFEST error.
func TestExtractWritesNothingUnverified(t *testing.T) {
	parent := t.TempDir()
	if err := unix.Mount("tmpfs", parent, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount a small tmpfs: %v (needs root)", err)
	}
	t.Cleanup(func() { unix.Unmount(parent, unix.MNT_DETACH) })
	big := strings.Repeat("\x00", 32<<20)
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	withManifest := func(members ...bundle.Member) []byte {
		b, _ := json.Marshal(bundle.Manifest{Format: bundle.Format, Version: bundle.Version, SessionID: "x", Members: members})
		return mkArchive(t, []entry{reg("events.jsonl", "one\n"), reg("artifacts/big.txt", big), reg("MANIFEST", string(b))}, false)
	}
	events := bundle.Member{Name: "events.jsonl", Size: 4, SHA256: sum("one\n")}
	for name, data := range map[string][]byte{
		"wrong checksum": withManifest(events, bundle.Member{Name: "artifacts/big.txt", Size: int64(len(big)), SHA256: sum("small")}),
		"unlisted":       withManifest(events),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := bundle.Extract(context.Background(), bytes.NewReader(data), filepath.Join(parent, "out"), bundle.ExtractOptions{})
			if !errors.Is(err, bundle.ErrManifest) {
				t.Fatalf("Extract = %v, want ErrManifest before anything is written", err)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}

// TestExtractFileChangedBetweenPasses: the second pass refuses a bundle
// that is no longer the one the first pass verified.
func TestExtractFileChangedBetweenPasses(t *testing.T) {
	a := mkArchive(t, []entry{reg("events.jsonl", "one\n"), reg("env.txt", "os: linux\n")}, true)
	b := mkArchive(t, []entry{reg("events.jsonl", "two\n"), reg("env.txt", "os: linux\n")}, true)
	parent := t.TempDir()
	_, err := bundle.Extract(context.Background(), &switching{first: a, then: b}, filepath.Join(parent, "out"), bundle.ExtractOptions{})
	if !errors.Is(err, bundle.ErrManifest) || !strings.Contains(err.Error(), "changed while it was opened") {
		t.Fatalf("Extract = %v, want a refusal saying the file changed", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// switching reads first until it is rewound, then then.
type switching struct {
	first, then []byte
	r           *bytes.Reader
	read        bool
}

func (s *switching) Read(p []byte) (int, error) {
	if s.r == nil {
		s.r = bytes.NewReader(s.first)
	}
	s.read = true
	return s.r.Read(p)
}

func (s *switching) Seek(off int64, whence int) (int64, error) {
	if s.r == nil {
		s.r = bytes.NewReader(s.first)
	}
	if whence == io.SeekStart && s.read {
		s.r, s.read = bytes.NewReader(s.then), false
	}
	return s.r.Seek(off, whence)
}
