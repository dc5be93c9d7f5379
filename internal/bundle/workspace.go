package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentctl/agentctl/internal/gitsafe"
	"github.com/agentctl/agentctl/internal/redact"
)

// The workspace is a sequence of independent zstd frames of about
// frameSize bytes of tar each, compressed with a window of frameWindow.
// Measured on 193 MB of Go source against one `zstd -3` stream (2 MiB
// window): 1.005x the size with a 2 MiB window, 1.014x with 1 MiB, which
// saves 2 MiB per encoder. The encoder's history buffer is twice the window
// (WithLowerEncoderMem(false)); with the low-memory option it is the window
// plus one 128 KiB block and slides, a 1 MiB copy, every block: 10% more
// CPU for the whole compression. Each encoder holds about 2 x frameWindow
// plus 1.5 MiB of tables and block buffers.
const (
	frameSize   = 4 << 20
	frameWindow = 1 << 20
)

// newEncoder returns a synchronous encoder with the options of every frame
// in a bundle (the outer stream's and the workspace's), so that one
// encoder can serve both.
func newEncoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(frameWindow), zstd.WithLowerEncoderMem(false))
}

// wsEntry is one tar entry, or a piece of one: a large file is cut into
// pieces so that no frame holds much more than frameSize.
type wsEntry struct {
	hdr  *tar.Header // written before the content when head
	path string      // the file to read content from, unless body is set
	body []byte      // the content when it was read and redacted up front
	off  int64       // offset of this piece in the content
	n    int64       // bytes of content in this piece
	head bool        // the piece starts the entry: write hdr first
	tail bool        // the piece ends the entry: pad it to 512 bytes
}

// wsJob is the entries of one frame.
type wsJob struct {
	seq     int
	entries []wsEntry
	size    int64 // tar bytes, about
	last    bool  // ends the tar stream: write its trailer
}

// writeWorkspace writes the folder ws to w as a tar.zst stream. Regular
// files, folders and symlinks (as links) are kept; sockets and devices are
// left out. Owners, access and change times are not recorded, and
// modification times are whole seconds (plain USTAR headers, as `tar -c`
// writes; PAX only for names USTAR cannot hold). Files named .env* are
// redacted with markers, every other file length for length (fillFile).
//
// With one encoder the walk, the reads and the compression run on this
// goroutine into one frame. With several, the walk cuts the tar stream into
// jobs of about frameSize bytes (see wsJob) on this goroutine, and one
// goroutine per encoder reads the files of a job and compresses them into
// an independent frame; frames are written in order (see seqWriter). File
// reads and compression so overlap on every CPU, and memory is the
// encoders plus, for each goroutine, a 128 KiB read buffer and up to 1 MiB
// of compressed frames held until the frames before them are written.
func writeWorkspace(ctx context.Context, w io.Writer, ws string, red *redact.Redactor, encs []*zstd.Encoder) error {
	if len(encs) == 1 {
		return writeWorkspaceSeq(ctx, w, ws, red, encs[0])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sw := newSeqWriter(w, len(encs)*pendingPerWorker)
	jobs := make(chan *wsJob, len(encs))
	var wg sync.WaitGroup
	for _, enc := range encs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := &wsWorker{buf: make([]byte, 128<<10), red: red}
			for j := range jobs {
				if sw.error() != nil {
					continue // drain, so the walk never blocks
				}
				if err := wk.frame(enc, sw, j); err != nil {
					sw.fail(err)
					cancel()
				}
			}
		}()
	}
	cur := &wsJob{}
	send := func() error {
		select {
		case jobs <- cur:
		case <-ctx.Done():
			return ctx.Err()
		}
		cur = &wsJob{seq: cur.seq + 1}
		return nil
	}
	walkErr := walkWorkspace(ctx, ws, red, func(e wsEntry) error {
		room := frameSize - cur.size
		if e.head && room < 4<<10 && len(cur.entries) > 0 {
			// No room left for even a small file: start the next frame.
			if err := send(); err != nil {
				return err
			}
			room = frameSize
		}
		for {
			piece := e
			if e.n > room {
				piece.n, piece.tail = room, false
			}
			cur.entries = append(cur.entries, piece)
			cur.size += piece.n
			if piece.head {
				cur.size += 512
			}
			if piece.n == e.n {
				return nil
			}
			if err := send(); err != nil {
				return err
			}
			room = frameSize
			e.off, e.n, e.head = e.off+piece.n, e.n-piece.n, false
		}
	})
	if walkErr == nil {
		cur.last = true
		walkErr = send()
	}
	close(jobs)
	wg.Wait()
	if err := sw.error(); err != nil {
		return fmt.Errorf("bundle: workspace %s: %w", ws, err)
	}
	if walkErr != nil {
		return fmt.Errorf("bundle: workspace %s: %w", ws, walkErr)
	}
	return nil
}

// writeWorkspaceSeq is writeWorkspace on one goroutine, as one frame.
func writeWorkspaceSeq(ctx context.Context, w io.Writer, ws string, red *redact.Redactor, enc *zstd.Encoder) error {
	enc.Reset(w)
	wk := &wsWorker{buf: make([]byte, 128<<10), red: red}
	err := walkWorkspace(ctx, ws, red, func(e wsEntry) error { return wk.entry(enc, &e) })
	if err == nil {
		_, err = enc.Write(make([]byte, 1024)) // the tar trailer
	}
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bundle: workspace %s: %w", ws, err)
	}
	return nil
}

// walkWorkspace calls emit with each entry of the workspace, in the order
// of filepath.WalkDir (sorted names). Files are not opened, except .env*
// files, which are read and redacted here.
func walkWorkspace(ctx context.Context, ws string, red *redact.Redactor, emit func(wsEntry) error) error {
	return filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(ws, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.IsDir() && !info.Mode().IsRegular() {
			return nil
		}
		hdr := wsHeader(filepath.ToSlash(rel), info, link)
		e := wsEntry{hdr: hdr, head: true, tail: true}
		if !info.Mode().IsRegular() {
			return emit(e)
		}
		e.path, e.n = p, info.Size()
		if strings.HasPrefix(d.Name(), ".env") && info.Size() <= 1<<20 {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.body = []byte(red.String(string(b)))
			e.n = int64(len(e.body))
			hdr.Size = e.n
		}
		return emit(e)
	})
}

// wsHeader is the tar header of a folder, regular file or link. It is
// tar.FileInfoHeader's without owners, access and change times (whose user
// and group name look-ups go through the C library in this binary) and with
// the modification time in whole seconds.
func wsHeader(name string, info fs.FileInfo, link string) *tar.Header {
	m := info.Mode()
	h := &tar.Header{Name: name, ModTime: info.ModTime().Truncate(time.Second), Mode: int64(m.Perm()),
		Format: tar.FormatUnknown} // USTAR where it can, else PAX
	switch {
	case m.IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
	case m.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
	case m&fs.ModeSymlink != 0:
		h.Typeflag, h.Linkname = tar.TypeSymlink, link
	}
	if m&fs.ModeSetuid != 0 {
		h.Mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		h.Mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		h.Mode |= 0o1000
	}
	return h
}

// wsWorker writes entries into an encoder, reading files through buf, or
// through filler with secrets overwritten (see fillFile).
type wsWorker struct {
	buf    []byte
	hdr    bytes.Buffer
	blk    [512]byte
	red    *redact.Redactor
	filler *redact.Filler
}

// frame compresses job j into one frame and writes it when its turn comes.
func (wk *wsWorker) frame(enc *zstd.Encoder, sw *seqWriter, j *wsJob) error {
	out := sw.job(j.seq)
	enc.Reset(out)
	for i := range j.entries {
		if err := wk.entry(enc, &j.entries[i]); err != nil {
			return err
		}
	}
	if j.last {
		if _, err := enc.Write(make([]byte, 1024)); err != nil { // the tar trailer
			return err
		}
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return out.finish()
}

// entry writes e's header, its content and its padding as e says.
func (wk *wsWorker) entry(w io.Writer, e *wsEntry) error {
	if e.head && ustarHeader(&wk.blk, e.hdr) {
		if _, err := w.Write(wk.blk[:]); err != nil {
			return err
		}
	} else if e.head {
		wk.hdr.Reset()
		// A tar.Writer encodes the header (with PAX records when needed);
		// the content is written here, so that it can be read in pieces.
		if err := tar.NewWriter(&wk.hdr).WriteHeader(e.hdr); err != nil {
			return err
		}
		if _, err := w.Write(wk.hdr.Bytes()); err != nil {
			return err
		}
	}
	if e.n > 0 {
		var err error
		switch {
		case e.body != nil:
			_, err = w.Write(e.body[e.off : e.off+e.n])
		case wk.red != nil:
			err = wk.fillFile(w, e)
		default:
			err = copyFile(w, e.path, e.off, e.n, wk.buf)
		}
		if err != nil {
			return err
		}
	}
	if pad := (512 - e.hdr.Size%512) % 512; e.tail && pad > 0 {
		if _, err := w.Write(zeroBlock[:pad]); err != nil {
			return err
		}
	}
	return nil
}

var zeroBlock [512]byte

// ustarHeader encodes h into blk as the one USTAR block that archive/tar
// writes for it (TestUSTARHeader compares them), when h is one of
// walkWorkspace's headers and fits: ASCII names of up to 100 bytes, sizes
// under 8 GiB, times from 1970 on. Else it returns false and tar.Writer
// encodes h (USTAR with a name prefix, or PAX). It saves tar.Writer's
// allocations and format checks for every file, 2% of the CPU of bundling
// 16,000 files.
func ustarHeader(blk *[512]byte, h *tar.Header) bool {
	const max = 1<<33 - 1 // 11 octal digits
	mtime := h.ModTime.Unix()
	if len(h.Name) > 100 || len(h.Linkname) > 100 || !isASCII(h.Name) || !isASCII(h.Linkname) ||
		h.Size < 0 || h.Size > max || mtime < 0 || mtime > max || h.Mode < 0 || h.Mode > 0o7777777 ||
		h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.Devmajor != 0 || h.Devminor != 0 ||
		len(h.PAXRecords) > 0 || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() || h.ModTime.Nanosecond() != 0 ||
		h.Format != tar.FormatUnknown {
		return false
	}
	*blk = [512]byte{}
	copy(blk[0:100], h.Name)
	octal(blk[100:108], h.Mode)
	octal(blk[108:116], 0) // uid
	octal(blk[116:124], 0) // gid
	octal(blk[124:136], h.Size)
	octal(blk[136:148], mtime)
	blk[156] = h.Typeflag
	copy(blk[157:257], h.Linkname)
	copy(blk[257:265], "ustar\x0000")
	octal(blk[329:337], 0) // devmajor
	octal(blk[337:345], 0) // devminor
	sum := int64(8 * ' ')  // the checksum field counts as spaces
	for i, c := range blk {
		if i < 148 || i >= 156 {
			sum += int64(c)
		}
	}
	octal(blk[148:155], sum)
	blk[155] = ' '
	return true
}

// octal writes x as len(b)-1 octal digits and a NUL, as archive/tar does.
func octal(b []byte, x int64) {
	for i := len(b) - 2; i >= 0; i-- {
		b[i] = byte('0' + x&7)
		x >>= 3
	}
	b[len(b)-1] = 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] == 0 {
			return false
		}
	}
	return true
}

// errShrank is returned when a file holds fewer bytes than its size said
// when the walk saw it.
var errShrank = errors.New("the file shrank while it was read")

// seqWriter writes the frames of several goroutines to w in the order of
// their sequence numbers. The job whose turn it is writes through; the
// others buffer, and a job that ends before its turn parks its buffer and
// its goroutine goes on to the next job: whoever passes the turn on writes
// the parked frames that follow. Buffers together stay within budget bytes;
// a job that would pass it waits for its turn instead. Only one job writes
// to w at a time, so w need not be safe for concurrent use. No job waits
// for a later one, so there is no deadlock; after an error nobody waits.
type seqWriter struct {
	w      io.Writer
	budget int
	mu     sync.Mutex
	cond   sync.Cond
	next   int            // the sequence number whose turn it is
	parked map[int][]byte // frames that ended before their turn
	held   int            // bytes buffered by jobs, parked or not
	free   [][]byte       // buffers to reuse
	err    error          // the first error of any job; every job stops
}

// pendingPerWorker is the buffering budget per goroutine: a 4 MiB frame of
// source text compresses to under 1 MiB, so a goroutine rarely waits; with
// incompressible data it waits rather than holding frames.
const pendingPerWorker = 1 << 20

func newSeqWriter(w io.Writer, budget int) *seqWriter {
	s := &seqWriter{w: w, budget: budget, parked: map[int][]byte{}}
	s.cond.L = &s.mu
	return s
}

// job returns the writer of job seq.
func (s *seqWriter) job(seq int) *seqJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := &seqJob{s: s, seq: seq, direct: s.next == seq}
	if n := len(s.free); n > 0 {
		j.buf, s.free = s.free[n-1][:0], s.free[:n-1]
	}
	return j
}

// keep keeps b for reuse, up to one buffer per pendingPerWorker of budget.
func (s *seqWriter) keep(b []byte) {
	if b != nil && len(s.free) < s.budget/pendingPerWorker {
		s.free = append(s.free, b[:0])
	}
}

// wait blocks until it is seq's turn or a job failed.
func (s *seqWriter) wait(seq int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.next != seq && s.err == nil {
		s.cond.Wait()
	}
	return s.err
}

func (s *seqWriter) fail(err error) {
	s.mu.Lock()
	s.failLocked(err)
	s.mu.Unlock()
}

func (s *seqWriter) failLocked(err error) {
	if s.err == nil {
		s.err = err
	}
	s.cond.Broadcast()
}

// error returns the first error of any job.
func (s *seqWriter) error() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// seqJob is the io.Writer of one job of a seqWriter.
type seqJob struct {
	s      *seqWriter
	seq    int
	direct bool   // it is this job's turn: write through
	buf    []byte // what was written before the turn came
}

func (j *seqJob) Write(p []byte) (int, error) {
	s := j.s
	if !j.direct {
		s.mu.Lock()
		if s.next != j.seq && s.err == nil && s.held+len(p) <= s.budget {
			s.held += len(p)
			s.mu.Unlock()
			j.buf = append(j.buf, p...)
			return len(p), nil
		}
		s.mu.Unlock()
		// Its turn, or over budget: wait for the turn and write through.
		if err := s.wait(j.seq); err != nil {
			return 0, err
		}
		if err := j.flush(); err != nil {
			return 0, err
		}
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.fail(err)
	}
	return n, err
}

// flush writes what was buffered once it is this job's turn.
func (j *seqJob) flush() error {
	j.direct = true
	if len(j.buf) == 0 {
		return nil
	}
	_, err := j.s.w.Write(j.buf)
	j.s.mu.Lock()
	j.s.held -= len(j.buf)
	j.s.mu.Unlock()
	j.buf = j.buf[:0]
	if err != nil {
		j.s.fail(err)
	}
	return err
}

// finish ends the job: at its turn, it passes the turn on and writes the
// parked frames that follow; before, it parks its buffer. It does not wait.
func (j *seqJob) finish() error {
	s := j.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.next != j.seq {
		s.parked[j.seq] = j.buf
		j.buf = nil
		return nil
	}
	if len(j.buf) > 0 { // the turn came after its last write
		if _, err := s.w.Write(j.buf); err != nil {
			s.failLocked(err)
			return err
		}
		s.held -= len(j.buf)
	}
	s.keep(j.buf)
	j.buf = nil
	s.next++
	// Write the parked frames whose turn this makes, holding the lock so
	// that no job sees its turn before the frames before it are out.
	for {
		b, ok := s.parked[s.next]
		if !ok {
			break
		}
		delete(s.parked, s.next)
		if _, err := s.w.Write(b); err != nil {
			s.failLocked(err)
			return err
		}
		s.held -= len(b)
		s.keep(b)
		s.next++
	}
	s.cond.Broadcast()
	return nil
}

// wsDiff is the workspace.diff of a session whose workspace is a git
// repository: its working tree against the commit the run started from.
// git runs only through package gitsafe, which never lets it read the
// workspace's own config, hooks or refs, nor anything outside the
// workspace.
type wsDiff struct {
	repo    *gitsafe.Repo
	run     *gitsafe.Tracker // a session with git state: its run branch (see openRunDiff)
	base    string
	refused error // why git was not run; the member says so instead
}

// openDiff opens ws's repository for the diff. The base is the workspace
// SHA of the first checkpoint (in checkpoints, from the session folder)
// when it is a commit of the repository, else the repository's first
// commit. It returns nil when there is nothing to diff: ws is no
// repository or has no commit. A repository that gitsafe refuses gives a
// wsDiff whose member is a note saying why.
func openDiff(ctx context.Context, ws, checkpoints string) *wsDiff {
	repo, err := gitsafe.Open(ws)
	var refused *gitsafe.RefusedError
	switch {
	case errors.As(err, &refused):
		return &wsDiff{refused: err}
	case err != nil:
		return nil
	}
	d := &wsDiff{repo: repo}
	if _, first := checkpointSHAs(checkpoints); first != "" && repo.HasCommit(ctx, first) {
		d.base = first
	} else {
		d.base = repo.RootCommit(ctx)
	}
	if d.base == "" {
		repo.Close()
		return nil
	}
	return d
}

// write writes the diff to w, or the note saying why there is none. No
// external diff, textconv or filter program runs.
func (d *wsDiff) write(ctx context.Context, w io.Writer) error {
	if d.refused != nil {
		fmt.Fprintf(w, "# no git diff: %v\n", d.refused)
	} else if d.run != nil {
		fmt.Fprintf(w, "# git diff %s (the run's initializer commit; working tree, every file included)\n", d.base)
		if err := d.run.DiffWorkTree(ctx, d.base, 0, w); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "# git diff %s (working tree, untracked files included)\n", d.base)
		err := d.repo.DiffWorkTree(ctx, d.base, w)
		var refused *gitsafe.RefusedError
		if errors.As(err, &refused) { // the index: refused before git wrote a byte
			d.refused = err
			fmt.Fprintf(w, "# no git diff: %v\n", err)
		} else if err != nil {
			return err
		}
	}
	if lr, ok := w.(*lineRedactor); ok {
		return lr.flush()
	}
	return nil
}

func (d *wsDiff) close() {
	if d.repo != nil {
		d.repo.Close()
	}
}
