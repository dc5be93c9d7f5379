// Package vfstest sweeps a fault through every filesystem operation of a
// piece of work: the harness of the recorder's, history's and bundle's
// fault tests.
package vfstest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentctl/agentctl/internal/vfs"
)

// Point is one sweep point: the injector to build the FS with, and the
// operation it fails (as the counting run saw it: under concurrency the
// operation with that index may be another one).
type Point struct {
	In   *vfs.Injector
	Op   vfs.Op
	Mode vfs.Mode
	// End is set on the last point: a crash after the work has done every
	// operation, and returned. What it acknowledged must all survive.
	End bool
}

// FS returns the FS of the point over base: base with p.In's faults.
func (p Point) FS(base vfs.FS) vfs.FS { return vfs.Inject(base, p.In) }

// Base is the filesystem a sweep point's work runs on, below its
// injection: the real one with syncs made free (Unsynced), or, for a crash
// point, a CrashFS over dir that a test clones to see what a power cut
// leaves (crash is nil otherwise).
func Base(t *testing.T, p Point, dir string) (base vfs.FS, crash *vfs.CrashFS) {
	t.Helper()
	if p.Mode != vfs.ModeCrash {
		return Unsynced, nil
	}
	crash, err := vfs.NewCrashFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	return crash, crash
}

// Unsynced is the real filesystem with Sync and SyncDir that do nothing
// (they are still counted and failed by an injector above it): a sweep
// checks what its work does when they fail, not the disk.
var Unsynced vfs.FS = unsynced{vfs.OS}

type unsynced struct{ vfs.FS }

func (u unsynced) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := u.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return unsyncedFile{f}, nil
}

func (unsynced) SyncDir(name string) error {
	_, err := os.Stat(name)
	return err
}

type unsyncedFile struct{ vfs.File }

func (unsyncedFile) Sync() error { return nil }

// Total counts the points run by Sweep in this test binary, for the
// report of the fault tests.
var Total atomic.Int64

// Sweep runs run once with an injector that fails nothing, to count the
// operations K of the work, and then, as subtests, once for each i < K and
// each mode: vfs.ModeError, vfs.ModeShort (where operation i is a write)
// and vfs.ModeCrash, and once more with a crash after operation K-1 (see
// Point.End). run must do the work on a fresh copy of its setup through
// p.FS and check what it demands. It returns the number of points run (K
// is logged).
func Sweep(t *testing.T, run func(t *testing.T, p Point)) int {
	t.Helper()
	count := &vfs.Injector{At: -1}
	run(t, Point{In: count, Mode: -1}) // not a subtest: -run must not skip it
	if t.Failed() {
		t.Fatalf("the work fails without faults")
	}
	ops := count.Ops()
	if len(ops) == 0 {
		t.Fatalf("the work made no filesystem operation: is the FS threaded through?")
	}
	points := 0
	for i, op := range ops {
		for _, mode := range []vfs.Mode{vfs.ModeError, vfs.ModeShort, vfs.ModeCrash} {
			if mode == vfs.ModeShort && op.Kind != vfs.OpWrite {
				continue
			}
			points++
			name := fmt.Sprintf("%s/%03d-%s-%s", mode, i, op.Kind, filepath.Base(op.Path))
			t.Run(name, func(t *testing.T) {
				run(t, Point{In: &vfs.Injector{At: i, Mode: mode}, Op: op, Mode: mode})
			})
		}
	}
	points++
	t.Run("crash/end", func(t *testing.T) {
		run(t, Point{In: &vfs.Injector{At: len(ops), Mode: vfs.ModeCrash}, Mode: vfs.ModeCrash, End: true})
	})
	Total.Add(int64(points))
	t.Logf("%d filesystem operations, %d fault points", len(ops), points)
	return points
}

// CheckErr fails t unless err is the injected fault of p: not nil, matching
// vfs.ErrInjected, and naming the file the failed operation was on (after
// a crash, the file of one of the operations that failed: the work may
// have gone on past the first, as it does past a failure it ignores).
// Without a fault (the counting run) err must be nil.
func CheckErr(t *testing.T, p Point, err error) {
	t.Helper()
	if p.Mode < 0 || p.End {
		if err != nil {
			t.Fatalf("without faults: %v", err)
		}
		return
	}
	fired, ok := p.In.Fired()
	if !ok {
		t.Fatalf("operation %d was never reached (%d operations): the work is not deterministic", p.In.At, p.In.Count())
	}
	if err == nil {
		t.Fatalf("%s at %s: the work returned no error", p.Mode, fired)
	}
	if !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("%s at %s: the error does not wrap the fault: %v", p.Mode, fired, err)
	}
	for _, op := range p.In.Failed() {
		if strings.Contains(err.Error(), filepath.Base(op.Path)) {
			return
		}
	}
	t.Errorf("%s at %s: the error does not name %s: %v", p.Mode, fired, filepath.Base(fired.Path), err)
}
