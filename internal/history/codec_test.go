package history

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/compress/zstd"
)

// TestCodecIsParquetGos: the history's codec writes the frames parquet-go's
// zstd.Codec at SpeedDefault writes, for pages of every size class (empty,
// under a block, several blocks, past the 8 MB window), compressible or
// not: files written before and after it are the same bytes.
func TestCodecIsParquetGos(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	prose := func(n int) []byte {
		words := strings.Fields("the call read a file of the package and its filler line of a realistic file")
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.Bytes()[:n]
	}
	ref := &zstd.Codec{Level: zstd.SpeedDefault}
	for _, src := range [][]byte{nil, []byte("a"), prose(1000), noise(1000), prose(100 << 10), prose(300 << 10), noise(300 << 10), prose(9 << 20), append(noise(5<<20), prose(5<<20)...)} {
		want, err := ref.Encode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := codec.Encode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d bytes: %d compressed, parquet-go's %d: the frames differ", len(src), len(got), len(want))
		}
		back, err := codec.Decode(nil, got)
		if err != nil || !bytes.Equal(back, src) {
			t.Errorf("%d bytes: no round trip (%v)", len(src), err)
		}
	}
}
