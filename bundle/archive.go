package bundle

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"github.com/klauspost/compress/zstd"
)

// archive writes the outer tar.zst: tar headers and ordinary members go
// through a zstd encoder; a member that is already compressed goes into raw
// zstd frames instead, so it is not compressed twice.
type archive struct {
	out     *bufio.Writer
	enc     *zstd.Encoder
	sw      switchWriter
	tw      *tar.Writer
	raw     rawFrameWriter
	mtime   time.Time
	members []Member
	buf     []byte
}

func newArchive(w io.Writer, level zstd.EncoderLevel, concurrency int, mtime time.Time) (*archive, error) {
	a := &archive{out: bufio.NewWriterSize(w, 1<<20), mtime: mtime.UTC().Truncate(time.Second), buf: make([]byte, 256<<10)}
	enc, err := zstd.NewWriter(a.out, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(concurrency),
		zstd.WithWindowSize(4<<20))
	if err != nil {
		return nil, err
	}
	a.enc = enc
	a.sw.w = enc
	a.raw.w = a.out
	a.tw = tar.NewWriter(&a.sw)
	return a, nil
}

// switchWriter forwards to whichever writer is current.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

// add writes one member of size bytes read from r, hashing it. With stored,
// the content goes into raw zstd frames.
func (a *archive) add(name string, size int64, r io.Reader, stored bool) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: a.mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	h := sha256.New()
	if stored {
		// WriteHeader wrote the header (and the previous member's
		// padding) through to the encoder; nothing is buffered in tw.
		if err := a.enc.Close(); err != nil { // ends the compressed frame
			return fmt.Errorf("bundle: write %s: %w", name, err)
		}
		a.raw.start()
		a.sw.w = &a.raw
	}
	n, err := io.CopyBuffer(a.tw, io.TeeReader(io.LimitReader(r, size), h), a.buf)
	if err == nil && n != size {
		err = fmt.Errorf("%d of %d bytes (the file shrank while it was read)", n, size)
	}
	if err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	if stored {
		if err := a.raw.finish(); err != nil {
			return fmt.Errorf("bundle: write %s: %w", name, err)
		}
		a.enc.Reset(a.out)
		a.sw.w = a.enc
	}
	a.members = append(a.members, Member{Name: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// addFile adds the file at path as it is now.
func (a *archive) addFile(name, path string, stored bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return a.add(name, st.Size(), f, stored)
}

// addBytes adds a small member held in memory.
func (a *archive) addBytes(name string, b []byte) error {
	return a.add(name, int64(len(b)), bytesReader(b), false)
}

// close writes the tar trailer and ends the zstd stream.
func (a *archive) close() error {
	if err := a.tw.Close(); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	if err := a.enc.Close(); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	if err := a.out.Flush(); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return nil
}

// rawFrameWriter writes zstd frames made of raw blocks (RFC 8878 §3.1.1):
// a frame header with a 128 KiB window and no content size, then blocks of
// at most 128 KiB stored as they are. The last block is held back until
// finish so it can carry the Last_Block flag.
type rawFrameWriter struct {
	w       io.Writer
	pending []byte
	started bool
}

const rawBlockMax = 128 << 10

func (r *rawFrameWriter) start() {
	r.pending = r.pending[:0]
	r.started = false
}

func (r *rawFrameWriter) Write(p []byte) (int, error) {
	n := len(p)
	if !r.started {
		// Magic, Frame_Header_Descriptor 0 (no checksum, no size, not
		// single segment), Window_Descriptor: exponent 7 = 2^17 bytes.
		if _, err := r.w.Write([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3}); err != nil {
			return 0, err
		}
		r.started = true
	}
	for len(p) > 0 {
		if len(r.pending) == rawBlockMax {
			if err := r.block(false); err != nil {
				return 0, err
			}
		}
		k := min(rawBlockMax-len(r.pending), len(p))
		r.pending = append(r.pending, p[:k]...)
		p = p[k:]
	}
	return n, nil
}

func (r *rawFrameWriter) block(last bool) error {
	hdr := uint32(len(r.pending)) << 3 // Block_Type 0: raw
	if last {
		hdr |= 1
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], hdr)
	if _, err := r.w.Write(b[:3]); err != nil {
		return err
	}
	if _, err := r.w.Write(r.pending); err != nil {
		return err
	}
	r.pending = r.pending[:0]
	return nil
}

func (r *rawFrameWriter) finish() error {
	if !r.started {
		if _, err := r.Write(nil); err != nil {
			return err
		}
	}
	return r.block(true)
}

type hashWriter struct {
	h hash.Hash
	n int64
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.n += int64(len(p))
	return len(p), nil
}
