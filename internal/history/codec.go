package history

import (
	"sync"

	kzstd "github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// codec is shared by every writer so that its zstd encoders (each costly
// to build) are reused across files.
var codec = &zstdCodec{}

// zstdCodec compresses pages as parquet-go's zstd.Codec at SpeedDefault
// does, frame for frame (TestCodecIsParquetGos), with one klauspost
// encoder whose history is the window plus a block (WithLowerEncoderMem)
// instead of twice the window in each encoder of a pool: parquet-go's
// kept 32 MB of encoder history live while a long session's events were
// written (a bundle of 1M events), this one 8 MB. Files are written one
// page at a time (compaction reads in parallel, writes one file), so one
// encoder serves. Decoding and the codec's identity are parquet-go's.
type zstdCodec struct {
	zstd.Codec
	once sync.Once
	enc  *kzstd.Encoder
}

func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	c.once.Do(func() {
		// The options of parquet-go's own encoder (compress/zstd), and
		// lower memory, which changes no output byte.
		var err error
		c.enc, err = kzstd.NewWriter(nil,
			kzstd.WithEncoderConcurrency(1),
			kzstd.WithEncoderLevel(zstd.SpeedDefault),
			kzstd.WithZeroFrames(true),
			kzstd.WithEncoderCRC(false),
			kzstd.WithLowerEncoderMem(true),
		)
		if err != nil {
			panic(err) // fixed, valid options
		}
	})
	return c.enc.EncodeAll(src, dst[:0]), nil
}
