package bundle

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSeqWriterOrder: jobs finished in any order by several goroutines
// come out in their sequence order, whether a job wrote through (its turn
// had come), buffered and parked its frame, or waited for its turn because
// the buffers were at their budget; the buffers never pass the budget.
func TestSeqWriterOrder(t *testing.T) {
	var out bytes.Buffer
	const budget = 1 << 20
	sw := newSeqWriter(&out, budget)
	const jobs, workers = 200, 4
	ch := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range ch {
				j := sw.job(seq)
				for k := range seq % 7 {
					fmt.Fprintf(j, "%d.%d ", seq, k)
					runtime.Gosched()
				}
				if seq%40 == 5 {
					j.Write(big(seq, budget/2))
					j.Write(big(seq, budget/2+1))
				}
				sw.mu.Lock()
				if sw.held > budget {
					t.Errorf("job %d: %d bytes buffered", seq, sw.held)
				}
				sw.mu.Unlock()
				if err := j.finish(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	var want bytes.Buffer
	for seq := range jobs {
		for k := range seq % 7 {
			fmt.Fprintf(&want, "%d.%d ", seq, k)
		}
		if seq%40 == 5 {
			want.Write(big(seq, budget/2))
			want.Write(big(seq, budget/2+1))
		}
		ch <- seq
	}
	close(ch)
	wg.Wait()
	if sw.held != 0 || len(sw.parked) != 0 || sw.next != jobs {
		t.Errorf("after the last job: %d bytes held, %d frames parked, next %d", sw.held, len(sw.parked), sw.next)
	}
	if !bytes.Equal(out.Bytes(), want.Bytes()) {
		t.Errorf("out of order:\n got %.200s\nwant %.200s", out.Bytes(), want.Bytes())
	}
}

func big(seq, n int) []byte { return bytes.Repeat([]byte{byte(seq)}, n) }

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

// TestSeqWriterError: after the output fails nobody waits for a turn that
// never comes, and the first error is kept; no job reports success for a
// frame that was due after the failure and was not parked.
func TestSeqWriterError(t *testing.T) {
	for range 50 {
		fw := &failWriter{n: 3}
		sw := newSeqWriter(fw, 6) // room for one parked frame
		var wg sync.WaitGroup
		for seq := 9; seq >= 0; seq-- { // later jobs first
			wg.Add(1)
			go func() {
				defer wg.Done()
				j := sw.job(seq)
				if _, err := j.Write([]byte("data")); err != nil { // over budget: waits
					return
				}
				j.finish()
			}()
		}
		wg.Wait()
		if err := sw.error(); err == nil || err.Error() != "disk full" {
			t.Fatalf("error = %v, want disk full", err)
		}
		if fw.n != 0 || sw.next != 3 {
			t.Fatalf("%d writes left, next %d: want 0 and 3", fw.n, sw.next)
		}
	}
}

// TestCopyFile: a piece is read from its offset; a file shorter than the
// size the walk saw is an error.
func TestCopyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	var out bytes.Buffer
	if err := copyFile(&out, p, 3, 4, make([]byte, 3)); err != nil || out.String() != "3456" {
		t.Errorf("copyFile(3, 4) = %q, %v", out.String(), err)
	}
	out.Reset()
	if err := copyFile(&out, p, 0, 12, make([]byte, 5)); !errors.Is(err, errShrank) {
		t.Errorf("copyFile(0, 12) of 10 bytes = %v, want errShrank", err)
	}
	os.Symlink(p, p+".link")
	if err := copyFile(&out, p+".link", 0, 10, make([]byte, 5)); err == nil {
		t.Errorf("copyFile followed a link")
	}
}

// TestUSTARHeader: ustarHeader writes the block archive/tar writes, and
// leaves what needs more than one USTAR block to tar.Writer.
func TestUSTARHeader(t *testing.T) {
	mtime := time.Date(2026, 11, 29, 23, 12, 5, 0, time.UTC)
	for _, tc := range []struct {
		hdr  tar.Header
		fits bool
	}{
		{tar.Header{Name: "Makefile", Typeflag: tar.TypeReg, Mode: 0o644, Size: 59, ModTime: mtime}, true},
		{tar.Header{Name: "copy1/src/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}, true},
		{tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "../Makefile", Mode: 0o777, ModTime: mtime}, true},
		{tar.Header{Name: "bin/suid", Typeflag: tar.TypeReg, Mode: 0o4755 | 0o2000 | 0o1000, Size: 1 << 32, ModTime: mtime}, true},
		{tar.Header{Name: strings.Repeat("n", 100), Typeflag: tar.TypeReg, Mode: 0o600, Size: 1<<33 - 1, ModTime: time.Unix(0, 0)}, true},
		{tar.Header{Name: "empty", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: mtime}, true},
		{tar.Header{Name: strings.Repeat("d/", 50) + "f", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: mtime}, false},
		{tar.Header{Name: "été.txt", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: mtime}, false},
		{tar.Header{Name: "big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1 << 33, ModTime: mtime}, false},
		{tar.Header{Name: "old", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: time.Unix(-1, 0)}, false},
		{tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: strings.Repeat("x", 101), ModTime: mtime}, false},
		{tar.Header{Name: "subsecond", Typeflag: tar.TypeReg, ModTime: mtime.Add(time.Millisecond)}, false},
	} {
		var blk [512]byte
		h := tc.hdr
		if got := ustarHeader(&blk, &h); got != tc.fits {
			t.Errorf("%.20s: fits = %v, want %v", h.Name, got, tc.fits)
			continue
		}
		if !tc.fits {
			continue
		}
		var want bytes.Buffer
		h.Format = tar.FormatUSTAR
		if err := tar.NewWriter(&want).WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(blk[:], want.Bytes()) {
			t.Errorf("%s: ustarHeader\n%q\narchive/tar\n%q", h.Name, blk[:], want.Bytes())
		}
	}
}
