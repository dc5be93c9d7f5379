package recorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/vfs"
)

// Lease is the right to write one session: an exclusive flock on the
// session's lease file, which also names the holder. It is held until
// Release or the end of the process (a crash releases it too).
type Lease struct {
	Path string
	// Info is what this lease wrote into the lease file.
	Info LeaseInfo
	// Previous names an earlier holder that died without releasing the
	// lease (its flock was gone, its name still in the file); nil if the
	// lease was released cleanly or never taken.
	Previous *LeaseInfo

	f *os.File
}

// AcquireLease takes the lease of the session directory dir without
// blocking. If another process, or another AcquireLease in this process,
// holds it, the error is a *LeaseHeldError naming the holder (errors.Is
// ErrLeaseHeld). Otherwise it writes pid, host and time into the lease file
// and fsyncs it.
func AcquireLease(dir string) (*Lease, error) {
	path := filepath.Join(dir, LeaseFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("recorder: acquire lease %s: %w", path, err)
	}
	err = lockFile(f)
	if errors.Is(err, errLocked) {
		err = awaitOrphans(f)
	}
	if err != nil {
		prev, _ := readLeaseInfo(f)
		f.Close()
		if errors.Is(err, errLocked) {
			held := &LeaseHeldError{Dir: dir}
			if prev != nil {
				held.Holder = *prev
			}
			return nil, held
		}
		return nil, fmt.Errorf("recorder: acquire lease %s: %w", path, err)
	}
	l := &Lease{Path: path, f: f}
	fail := func(err error) (*Lease, error) {
		f.Close() // drops the flock
		return nil, fmt.Errorf("recorder: acquire lease %s: %w", path, err)
	}
	// Under the flock the file names a previous holder only if it died
	// holding the lease: Release empties the file.
	if l.Previous, err = readLeaseInfo(f); err != nil {
		return fail(err)
	}
	host, _ := os.Hostname()
	l.Info = LeaseInfo{PID: os.Getpid(), Host: host, AcquiredAt: time.Now().UTC()}
	b, err := json.Marshal(l.Info)
	if err != nil {
		return fail(err)
	}
	if err := f.Truncate(0); err != nil {
		return fail(err)
	}
	if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	setHeld(path, true)
	return l, nil
}

// orphanWait bounds how long AcquireLease waits for a dead holder's lock
// to be released.
const orphanWait = 3 * time.Second

// awaitOrphans retries the lock for a little while when no live writer
// owns it (see orphaned). A flock belongs to the open file, not the
// process: a child forked by the holder, or by any goroutine of a process
// that held the lease a moment ago, keeps a copy of the descriptor until
// it execs (close-on-exec closes it there), so a holder killed or released
// while a tool was being started leaves the lock held for the moment the
// child takes to exec (observed under crashtest: milliseconds, longer on a
// loaded machine). A live holder, or one on another host, is reported at
// once.
func awaitOrphans(f *os.File) error {
	deadline := time.Now().Add(orphanWait)
	for {
		if !orphaned(f) || time.Now().After(deadline) {
			return errLocked
		}
		time.Sleep(10 * time.Millisecond)
		if err := lockFile(f); !errors.Is(err, errLocked) {
			return err
		}
	}
}

// orphaned reports whether the lock on f is held with no live writer
// behind it: the file names no holder (released: Release empties it; or a
// new holder between its lock and its write, which the next look tells),
// or a holder of this host that is gone, or this process when it does not
// hold that lease.
func orphaned(f *os.File) bool {
	prev, _ := readLeaseInfo(f)
	if prev == nil {
		return true
	}
	host, _ := os.Hostname()
	switch {
	case prev.PID <= 0 || prev.Host != host:
		return false
	case prev.PID == os.Getpid():
		return !heldHere(f.Name())
	}
	return !processAlive(prev.PID)
}

// held lists the lease files this process holds, so a lock found on one it
// does not hold can be told apart from its own (see orphaned).
var held struct {
	sync.Mutex
	paths map[string]bool
}

func heldHere(path string) bool {
	held.Lock()
	defer held.Unlock()
	return held.paths[absPath(path)]
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

func setHeld(path string, on bool) {
	held.Lock()
	defer held.Unlock()
	if held.paths == nil {
		held.paths = map[string]bool{}
	}
	if on {
		held.paths[absPath(path)] = true
	} else {
		delete(held.paths, absPath(path))
	}
}

// readLeaseInfo reads the holder named in a lease file; nil if it is empty.
// A lease file that does not parse (a holder that died while writing it)
// reads as an unnamed holder.
func readLeaseInfo(f *os.File) (*LeaseInfo, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, nil
	}
	var info LeaseInfo
	if json.Unmarshal(b, &info) != nil {
		return &LeaseInfo{}, nil
	}
	return &info, nil
}

// Release empties the lease file and gives up the lease. Release of a
// released lease returns nil.
func (l *Lease) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	setHeld(l.Path, false)
	err := f.Truncate(0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil { // closing drops the flock
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("recorder: release lease %s: %w", l.Path, err)
	}
	return nil
}

// Live reports whether a process holds the session's lease now, without
// taking it or writing anything: a session with no session_finished and no
// live writer crashed. A session with no lease file has no writer.
func Live(dir string) bool {
	f, err := vfs.OpenRegular(filepath.Join(dir, LeaseFile))
	if err != nil {
		return false // a named pipe there is no lease
	}
	defer f.Close()
	// The lock is taken on our own open file description and dropped by
	// Close; the file's bytes are untouched. A dead holder's lock kept a
	// moment longer by a child it forked is not a live writer (see
	// awaitOrphans), as AcquireLease judges it too.
	err = lockFile(f)
	if errors.Is(err, errLocked) {
		err = awaitOrphans(f)
	}
	return errors.Is(err, errLocked)
}
