package bundle_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
	"github.com/agentctl/agentctl/internal/vfs/vfstest"
)

// TestFaultSweepWriteFile: WriteFile over an earlier bundle of the same
// session, with each operation of its output and its temporary files
// failed, cut short or crashed at. At every point the output is the whole
// earlier bundle or the whole new one (it verifies against its MANIFEST),
// the new one if WriteFile returned nil, even after a crash; no temp file
// is left beside it but by a crash.
func TestFaultSweepWriteFile(t *testing.T) {
	st, id, _ := newSession(t)
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := old.Add(time.Hour)
	trace := func(w io.Writer, id string, each func(func(session.Event))) error {
		_, err := io.WriteString(w, `{"resourceSpans":[]}`)
		return err
	}
	write := func(fsys vfs.FS, path, tmp string, at time.Time) (*bundle.Manifest, error) {
		m, _, err := bundle.WriteFile(context.Background(), path, st, id, bundle.Options{
			FS: fsys, TempDir: tmp, Trace: trace, Now: func() time.Time { return at }, Concurrency: 1,
		})
		return m, err
	}
	n := vfstest.Sweep(t, func(t *testing.T, p vfstest.Point) {
		out := t.TempDir()
		path := filepath.Join(out, id+".tar.zst")
		if _, err := write(vfs.OS, path, t.TempDir(), old); err != nil {
			t.Fatal(err)
		}
		base, crash := vfstest.Base(t, p, out)
		tmp := t.TempDir()
		_, err := write(p.FS(base), path, tmp, now)
		tolerated := false
		if p.Mode >= 0 && err == nil && p.Op.Kind == vfs.OpRemove && !strings.HasPrefix(p.Op.Path, out) {
			tolerated = true // a temporary file under TempDir: RemoveAll takes it, or it is garbage there
			t.Logf("tolerated: %s", p.Op)
		} else {
			vfstest.CheckErr(t, p, err)
		}
		if crash == nil {
			checkBundle(t, out, path, err == nil, old, now)
			if ents, _ := os.ReadDir(tmp); len(ents) > 0 && !tolerated {
				t.Errorf("temporary files left under TempDir: %v", ents)
			}
			return
		}
		for _, keep := range []float64{0, 0.5} {
			clone := filepath.Join(t.TempDir(), "clone")
			if err := crash.Clone(clone, vfs.CloneOptions{KeepUnsynced: keep}); err != nil {
				t.Fatal(err)
			}
			t.Logf("crash clone keeping %v of unsynced appends", keep)
			checkBundle(t, clone, filepath.Join(clone, filepath.Base(path)), err == nil, old, now)
		}
	})
	t.Logf("bundle WriteFile: %d fault points", n)
}

// checkBundle checks the bundle at path in dir: it verifies, and was made
// at now if written is set, else at old or now. Only after a crash (when
// dir is a clone) may a temp file be beside it.
func checkBundle(t *testing.T, dir, path string, written bool, old, now time.Time) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the bundle is gone: %v", err)
	}
	defer f.Close()
	m, err := bundle.Extract(context.Background(), f, filepath.Join(t.TempDir(), "x"), bundle.ExtractOptions{})
	if err != nil {
		t.Fatalf("the bundle does not verify: %v", err)
	}
	switch {
	case m.Created.Equal(now):
	case m.Created.Equal(old) && !written:
	default:
		t.Errorf("the bundle was made at %v; want %v, or %v if WriteFile failed (it returned nil: %v)", m.Created, now, old, written)
	}
	if !strings.Contains(dir, "clone") {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != filepath.Base(path) {
				t.Errorf("left beside the bundle: %s", e.Name())
			}
		}
	}
}
