package bundle_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentctl/agentctl/internal/bundle"
)

// zstdBomb returns a zstd frame, a few hundred KiB, of a tar stream whose
// one member declares size bytes of zeros and holds them: the tar header
// in a raw block, then RLE blocks of 128 KiB of zeros at 4 bytes each,
// as any zstd encoder could write them. There is no MANIFEST.
func zstdBomb(t *testing.T, size int64) []byte {
	t.Helper()
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: "artifacts/zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: size, Format: tar.FormatPAX}); err != nil {
		t.Fatal(err)
	}
	tw.Flush()
	const block = 128 << 10
	// Magic, then a frame header descriptor with no content size, no
	// checksum, not single-segment, and a window of 1<<17.
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38}
	blockHeader := func(last bool, typ, n int) {
		v := n<<3 | typ<<1
		if last {
			v |= 1
		}
		b = append(b, byte(v), byte(v>>8), byte(v>>16))
	}
	blockHeader(false, 0, hdr.Len()) // raw
	b = append(b, hdr.Bytes()...)
	for left := size; left > 0; left -= block {
		n := min(left, block)
		blockHeader(left == n, 1, int(n)) // RLE of one byte
		b = append(b, 0)
	}
	return b
}

// TestZstdBombRefusedEarly: a bundle that inflates 7 GiB of zeros from a
// quarter of a MiB (a member under MaxMember, so its header is no reason
// to refuse it) is refused in well under a second, not after inflating
// and hashing the member whole (116 s measured before the limit).
func TestZstdBombRefusedEarly(t *testing.T) {
	bomb := zstdBomb(t, 7<<30)
	// It is a real zstd stream: a decoder yields the tar header and zeros.
	dec, err := zstd.NewReader(bytes.NewReader(bomb))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(dec)
	if h, err := tr.Next(); err != nil || h.Size != 7<<30 {
		t.Fatalf("bomb's first member = %v, %v", h, err)
	}
	dec.Close()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = bundle.Extract(context.Background(), bytes.NewReader(bomb), filepath.Join(t.TempDir(), "out"), bundle.ExtractOptions{})
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	t.Logf("%d bytes refused in %v: %v", len(bomb), took, err)
	if !errors.Is(err, bundle.ErrTooLarge) {
		t.Fatalf("Extract(bomb) = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{"zstd", "--max-ratio"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// A loose bound, not a speed goal: the refusal comes after ~64 MiB of
	// the 7 GiB (about 0.4 s idle, 4 s under -race on a loaded machine);
	// inflating the whole member took over 60 s even idle.
	if took > 30*time.Second {
		t.Errorf("refused after %v: the bomb was inflated far past the limit", took)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Errorf("allocated %d MiB refusing the bomb", alloc>>20)
	}
}
