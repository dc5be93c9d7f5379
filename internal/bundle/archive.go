package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"github.com/agentctl/agentctl/internal/vfs"
	"github.com/klauspost/compress/zstd"
)

// archive writes the outer tar.zst: tar headers and ordinary members go
// through a zstd encoder; a member that is already compressed goes into raw
// zstd frames instead, so it is not compressed twice.
type archive struct {
	out     *bufio.Writer
	cw      vfs.CountWriter
	at      io.WriterAt // w, when headers can be patched in place
	base    int64       // w's offset when the archive began
	enc     *zstd.Encoder
	sw      switchWriter
	tw      *tar.Writer
	raw     rawFrameWriter
	mtime   time.Time
	members []Member
	buf     []byte
}

// newArchive starts the outer stream. Its encoder has the workspace
// encoders' options (newEncoder): while a workspace is streamed, the outer
// frame is closed and the encoder compresses workspace frames instead.
func newArchive(w io.Writer, level zstd.EncoderLevel, mtime time.Time) (*archive, error) {
	a := &archive{mtime: mtime.UTC().Truncate(time.Second), buf: make([]byte, 64<<10)}
	a.cw.W = w
	a.out = bufio.NewWriterSize(&a.cw, 256<<10)
	if at, ok := w.(io.WriterAt); ok {
		if s, ok := w.(io.Seeker); ok {
			if off, err := s.Seek(0, io.SeekCurrent); err == nil {
				a.at, a.base = at, off
			}
		}
	}
	enc, err := newEncoder(level)
	if err != nil {
		return nil, err
	}
	enc.Reset(a.out)
	a.enc = enc
	a.sw.w = enc
	a.raw.w = a.out
	a.tw = tar.NewWriter(&a.sw)
	return a, nil
}

// endFrame pads the last member and ends the compressed frame, so that the
// encoder can be used for something else until restartFrame.
func (a *archive) endFrame() error {
	if err := a.tw.Flush(); err != nil {
		return err
	}
	return a.enc.Close()
}

// restartFrame points the encoder at the archive again after endFrame.
func (a *archive) restartFrame() { a.enc.Reset(a.out) }

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
		a.restartFrame()
		a.sw.w = a.enc
	}
	a.members = append(a.members, Member{Name: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// canStream reports whether addStream can be used: the output can be
// written at an offset, to patch a header.
func (a *archive) canStream() bool { return a.at != nil }

// addStream adds a stored member whose size is not known in advance: fill
// writes its content. The tar header goes out with size 0 in a raw zstd
// block, and is rewritten in place with the real size once the content is
// written, so the member is never spooled. It needs canStream.
func (a *archive) addStream(name string, fill func(w io.Writer) error) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, ModTime: a.mtime, Typeflag: tar.TypeReg}
	placeholder, err := headerBlock(hdr)
	if err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	// Pad the previous member and end the compressed frame; fill may use
	// the encoder.
	if err := a.endFrame(); err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	// The raw frame's header (6 bytes) and first block header (3 bytes)
	// come before the tar header.
	at := a.base + a.cw.N + int64(a.out.Buffered()) + 9
	a.raw.start()
	if _, err := a.raw.Write(placeholder); err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	hw := &hashWriter{h: sha256.New(), w: &a.raw}
	if err := fill(hw); err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	if pad := (512 - hw.n%512) % 512; pad > 0 {
		if _, err := a.raw.Write(make([]byte, pad)); err != nil {
			return fmt.Errorf("bundle: write %s: %w", name, err)
		}
	}
	if err := a.raw.finish(); err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	if err := a.out.Flush(); err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	hdr.Size = hw.n
	final, err := headerBlock(hdr)
	if err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	if _, err := a.at.WriteAt(final, at); err != nil {
		return fmt.Errorf("bundle: write %s: %w", name, err)
	}
	a.restartFrame()
	a.members = append(a.members, Member{Name: name, Size: hw.n, SHA256: hex.EncodeToString(hw.h.Sum(nil))})
	return nil
}

// headerBlock is hdr as one 512-byte tar header block: USTAR, or GNU
// (base-256 size) from 8 GiB on, so that it never needs PAX records and
// a size can replace another in place.
func headerBlock(hdr *tar.Header) ([]byte, error) {
	var b bytes.Buffer
	h := *hdr
	h.Format = tar.FormatUSTAR
	if h.Size >= 1<<33 {
		h.Format = tar.FormatGNU
	}
	if err := tar.NewWriter(&b).WriteHeader(&h); err != nil {
		return nil, err
	}
	if b.Len() != 512 {
		return nil, fmt.Errorf("tar header of %d bytes", b.Len())
	}
	return b.Bytes(), nil
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

// hashWriter hashes and counts what it passes on to w (if any).
type hashWriter struct {
	h hash.Hash
	n int64
	w io.Writer
}

func (w *hashWriter) Write(p []byte) (int, error) {
	if w.w != nil {
		n, err := w.w.Write(p)
		w.h.Write(p[:n])
		w.n += int64(n)
		return n, err
	}
	w.h.Write(p)
	w.n += int64(len(p))
	return len(p), nil
}
