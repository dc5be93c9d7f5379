package bundle_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/redact"
)

// fillWorkspace adds to ws: a file of big bytes of text-like data (it spans
// several zstd frames), small files that fall across frame boundaries, an
// empty file, a name too long for a plain USTAR header and a non-ASCII one.
// It is no longer a git repository: workspace.diff runs git once per
// untracked file, which these tests are not about.
func fillWorkspace(t *testing.T, ws string, big int) {
	t.Helper()
	os.RemoveAll(filepath.Join(ws, ".git"))
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("func return if else for range var const type struct package import error nil true false")
	text := func(n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(" \n\t"[r.IntN(3)])
			if r.IntN(50) == 0 {
				fmt.Fprintf(&b, "%x", r.Uint64())
			}
		}
		return b.Bytes()[:n]
	}
	write := func(name string, b []byte) {
		t.Helper()
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("big/blob.txt", text(big))
	for i := range 400 {
		write(fmt.Sprintf("src/pkg%02d/file%03d.go", i%13, i), text(r.IntN(40<<10)))
	}
	write("src/empty", nil)
	long := strings.Repeat("long-folder-name/", 8) + strings.Repeat("x", 120) + ".txt"
	write(long, text(1000))
	write("données/été.txt", text(100))
}

// wsEntry is what a workspace archive says about one entry.
type wsEntry struct {
	typ           byte
	size          int64
	sum, link     string
	mtime         time.Time
	pax, accessed bool
}

// readWorkspaceTar reads a workspace.tar.zst.
func readWorkspaceTar(t *testing.T, p string) map[string]wsEntry {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	got := map[string]wsEntry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		s := sha256.New()
		io.Copy(s, tr)
		got[strings.TrimSuffix(h.Name, "/")] = wsEntry{typ: h.Typeflag, size: h.Size, sum: fmt.Sprintf("%x", s.Sum(nil)),
			link: h.Linkname, mtime: h.ModTime, pax: len(h.PAXRecords) > 0, accessed: !h.AccessTime.IsZero() || !h.ChangeTime.IsZero()}
	}
	return got
}

// diskWorkspace is what the archive should say about the folder ws.
func diskWorkspace(t *testing.T, ws string) map[string]wsEntry {
	t.Helper()
	want := map[string]wsEntry{}
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(ws, p)
		if rel == "." {
			return nil
		}
		info, _ := d.Info()
		e := wsEntry{mtime: info.ModTime().Truncate(time.Second)}
		switch {
		case info.IsDir():
			e.typ = tar.TypeDir
			e.sum = fmt.Sprintf("%x", sha256.Sum256(nil))
		case info.Mode()&fs.ModeSymlink != 0:
			e.typ = tar.TypeSymlink
			e.link, _ = os.Readlink(p)
			e.sum = fmt.Sprintf("%x", sha256.Sum256(nil))
		default:
			b, _ := os.ReadFile(p)
			e.typ, e.size, e.sum = tar.TypeReg, int64(len(b)), fmt.Sprintf("%x", sha256.Sum256(b))
		}
		want[filepath.ToSlash(rel)] = e
		return nil
	})
	return want
}

// TestWorkspaceContent: on one goroutine or several, into a file or a
// buffer, workspace.tar.zst holds every file of the workspace byte for byte
// (a file spanning several frames, files across frame boundaries, empty
// files, links, long and non-ASCII names), with plain headers: no owners,
// access or change times, and PAX records only for the names that need
// them. The Debian tar reads it too.
func TestWorkspaceContent(t *testing.T) {
	st, id, ws := newSession(t)
	fillWorkspace(t, ws, 9<<20)
	// Secrets in the big file, across the frames' edges (4 MiB) and the
	// read chunks'.
	big := filepath.Join(ws, "big/blob.txt")
	b, _ := os.ReadFile(big)
	for _, at := range []int{4<<20 - 7, 8<<20 - 20, 128<<10 - 3, 5 << 20} {
		copy(b[at:], secret)
	}
	os.WriteFile(big, b, 0o644)
	want := diskWorkspace(t, ws)
	// .env is redacted in the archive with markers: compare it apart. Every
	// other file is redacted length for length.
	envWant := want[".env"]
	delete(want, ".env")
	dotenv, _ := redact.FromDotEnv(ws)
	red := redact.New(append(redact.FromEnv(os.Environ()), dotenv...)...)
	for name, w := range want {
		if w.typ != tar.TypeReg {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(ws, name))
		if red.Fill(b) {
			w.sum = fmt.Sprintf("%x", sha256.Sum256(b))
			want[name] = w
		}
	}
	if want["big/blob.txt"].sum == diskWorkspace(t, ws)["big/blob.txt"].sum || want["new.go"].sum == diskWorkspace(t, ws)["new.go"].sum {
		t.Fatal("the secrets planted in big/blob.txt and new.go are not found")
	}
	for _, tc := range []struct {
		name        string
		file        bool
		concurrency int
	}{{"file/2", true, 2}, {"file/3", true, 3}, {"file/1", true, 1}, {"buffer/2", false, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if tc.file {
				p := filepath.Join(t.TempDir(), "b.tar.zst")
				f, _ := os.Create(p)
				if _, err := bundle.Write(context.Background(), f, st, id, bundle.Options{Concurrency: tc.concurrency}); err != nil {
					t.Fatal(err)
				}
				f.Close()
				b, _ := os.ReadFile(p)
				out.Write(b)
			} else if _, err := bundle.Write(context.Background(), &out, st, id, bundle.Options{Concurrency: tc.concurrency}); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "out")
			if _, err := bundle.Extract(context.Background(), bytes.NewReader(out.Bytes()), dir, bundle.ExtractOptions{}); err != nil {
				t.Fatal(err)
			}
			arc := filepath.Join(dir, "workspace.tar.zst")
			got := readWorkspaceTar(t, arc)
			env := got[".env"]
			delete(got, ".env")
			if env.typ != tar.TypeReg || env.size == envWant.size || env.sum == envWant.sum {
				t.Errorf(".env not redacted: %+v", env)
			}
			for name, w := range want {
				g, ok := got[name]
				needsPAX := len(name) > 100 || strings.ContainsFunc(name, func(r rune) bool { return r > 127 })
				switch {
				case !ok:
					t.Errorf("%s: missing", name)
				case g.typ != w.typ || g.size != w.size || g.sum != w.sum || g.link != w.link:
					t.Errorf("%s: type %c size %d sha256 %.12s link %q, want %c %d %.12s %q", name, g.typ, g.size, g.sum, g.link, w.typ, w.size, w.sum, w.link)
				case !g.mtime.Equal(w.mtime):
					t.Errorf("%s: mtime %v, want %v", name, g.mtime, w.mtime)
				case g.accessed:
					t.Errorf("%s: has access or change times", name)
				case g.pax != needsPAX && !strings.HasPrefix(name, "long-folder-name"):
					t.Errorf("%s: PAX records %v, want %v", name, g.pax, needsPAX)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s: not in the workspace", name)
				}
			}
			if _, err := exec.LookPath("tar"); err == nil {
				x := t.TempDir()
				if b, err := exec.Command("tar", "--zstd", "-xf", arc, "-C", x).CombinedOutput(); err != nil {
					t.Fatalf("tar --zstd -xf workspace.tar.zst: %v %s", err, b)
				}
				if b, _ := os.ReadFile(filepath.Join(x, "big", "blob.txt")); fmt.Sprintf("%x", sha256.Sum256(b)) != want["big/blob.txt"].sum {
					t.Errorf("big/blob.txt unpacked by tar differs")
				}
			}
		})
	}
}

// TestWorkspaceMemory: bundling a workspace many times larger than the
// encoders' buffers keeps the Go heap bounded: no member, frame queue or
// file is held whole. The heap is sampled, not timed.
func TestWorkspaceMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MB")
	}
	st, id, ws := newSession(t)
	fillWorkspace(t, ws, 16<<20)
	// 48 MB that does not compress: each frame comes out as large as it
	// went in, the worst case for frames held while waiting their turn.
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 4 {
		b := make([]byte, 12<<20)
		for j := 0; j < len(b); j += 8 {
			v := r.Uint64()
			for k := range 8 {
				b[j+k] = byte(v >> (8 * k))
			}
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("random%d.bin", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(25)) // as `agentctl bundle` runs
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f, err := os.Create(filepath.Join(t.TempDir(), "b.tar.zst"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := bundle.Write(context.Background(), f, st, id, bundle.Options{Concurrency: 2})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var ws64 int64
	for _, mm := range m.Members {
		if mm.Name == "workspace.tar.zst" {
			ws64 = mm.Size
		}
	}
	grew := int64(peak) - int64(base.HeapInuse)
	t.Logf("workspace.tar.zst %d MB; heap in use grew by %.1f MB at most", ws64>>20, float64(grew)/(1<<20))
	// Two encoders of ~3.5 MiB, frames buffered or parked before their
	// turn (2 MiB, plus their buffers' growth), read buffers, the GC's 25%:
	// measured 15.6 MiB. Holding the member, a file or the incompressible
	// frames whole would pass 24 MiB.
	if grew > 24<<20 {
		t.Errorf("heap in use grew by %d MB bundling a %d MB workspace, want under 24 MB", grew>>20, ws64>>20)
	}
}

// TestWorkspaceCancel: a cancelled bundle stops with the context's error.
func TestWorkspaceCancel(t *testing.T) {
	st, id, ws := newSession(t)
	fillWorkspace(t, ws, 1<<20)
	for _, c := range []int{1, 2} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := bundle.Write(ctx, io.Discard, st, id, bundle.Options{Concurrency: c})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("concurrency %d: %v, want context.Canceled", c, err)
		}
	}
}
