package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// CrashFS is the real filesystem under one folder, plus a record of what of
// it is durable: for each file, its bytes as of its last Sync; for each
// folder, its entries as of its last SyncDir. Clone writes that durable
// state to a new folder: what a power cut at this moment would leave, on a
// filesystem that keeps exactly what was synced (the strict model of
// pebble's crash-clone MemFS). Work goes on on the real files, so readers
// that use package os see the live state as usual.
//
// Files and folders are tracked as nodes, like inodes: a rename or a link
// moves or adds an entry, and the file's durable bytes go with it. What is
// under the folder when NewCrashFS is called, and whatever is made there
// without the CrashFS (a lease file, a test's own setup), counts as
// durable. Paths outside the folder pass through untracked.
//
// Sync and SyncDir only record: they do not fsync the real files, whose
// durability is what the CrashFS models (and a sweep of a few hundred
// points would otherwise wait for a few thousand fsyncs).
type CrashFS struct {
	root string

	mu  sync.Mutex
	top *node
}

type node struct {
	dir  bool
	data []byte // a file's durable bytes
	// A folder's entries: live (as they are now) and durable (as of the
	// last SyncDir).
	live, durable map[string]*node
}

func newDir() *node { return &node{dir: true, live: map[string]*node{}, durable: map[string]*node{}} }

// NewCrashFS tracks the folder root, taking what it holds now as durable.
func NewCrashFS(root string) (*CrashFS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c := &CrashFS{root: abs}
	n, err := adopt(abs)
	if err != nil {
		return nil, err
	}
	if n == nil || !n.dir {
		return nil, fmt.Errorf("vfs: crash fs: %s is not a folder", root)
	}
	c.top = n
	return c, nil
}

// adopt reads the file or folder p as durable; nil if p does not exist.
// Anything but a regular file or a folder is left out.
func adopt(p string) (*node, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		n := newDir()
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			c, err := adopt(filepath.Join(p, e.Name()))
			if err != nil {
				return nil, err
			}
			if c != nil {
				n.live[e.Name()] = c
				n.durable[e.Name()] = c
			}
		}
		return n, nil
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		return &node{data: b}, nil
	}
	return nil, nil
}

// rel splits p into its components under the root; ok is false outside it.
func (c *CrashFS) rel(p string) (parts []string, ok bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, false
	}
	r, err := filepath.Rel(c.root, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return nil, false
	}
	if r == "." {
		return nil, true
	}
	return strings.Split(r, string(filepath.Separator)), true
}

// lookup returns the live node at p (adopting what exists on disk but is
// unknown: made without the CrashFS), or nil. Call with c.mu held.
func (c *CrashFS) lookup(p string) *node {
	parts, ok := c.rel(p)
	if !ok {
		return nil
	}
	n := c.top
	cur := c.root
	for _, name := range parts {
		if !n.dir {
			return nil
		}
		cur = filepath.Join(cur, name)
		next := n.live[name]
		if next == nil {
			a, err := adopt(cur)
			if err != nil || a == nil {
				return nil
			}
			n.live[name], n.durable[name] = a, a
			next = a
		}
		n = next
	}
	return n
}

// parent returns the live folder node that holds p and p's name in it;
// nil outside the root. Call with c.mu held.
func (c *CrashFS) parent(p string) (*node, string) {
	parts, ok := c.rel(p)
	if !ok || len(parts) == 0 {
		return nil, ""
	}
	d := c.lookup(filepath.Dir(p))
	if d == nil || !d.dir {
		return nil, ""
	}
	return d, parts[len(parts)-1]
}

// OpenFile opens the real file (read-write when asked write-only, so that
// Sync can record its bytes).
func (c *CrashFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	c.mu.Lock()
	n := c.lookup(name)
	c.mu.Unlock()
	real := flag
	if real&(os.O_WRONLY|os.O_RDWR) == os.O_WRONLY {
		real = real&^os.O_WRONLY | os.O_RDWR
	}
	f, err := os.OpenFile(name, real, perm)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == nil {
		d, base := c.parent(name)
		if d == nil {
			return f, nil // outside the root
		}
		n = &node{}
		d.live[base] = n
	}
	return &crashFile{File: f, c: c, n: n}, nil
}

func (c *CrashFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

func (c *CrashFS) Mkdir(name string, perm fs.FileMode) error {
	if err := os.Mkdir(name, perm); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, base := c.parent(name); d != nil {
		d.live[base] = newDir()
	}
	return nil
}

func (c *CrashFS) MkdirAll(name string, perm fs.FileMode) error {
	var missing []string
	for d := filepath.Clean(name); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := c.Mkdir(missing[i], perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

func (c *CrashFS) Rename(oldpath, newpath string) error {
	c.mu.Lock()
	n := c.lookup(oldpath)
	c.mu.Unlock()
	if err := os.Rename(oldpath, newpath); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, base := c.parent(oldpath); d != nil {
		delete(d.live, base)
	}
	if d, base := c.parent(newpath); d != nil {
		if n == nil { // from outside the root: its bytes as they are now
			if n, _ = adopt(newpath); n == nil {
				return nil
			}
		}
		d.live[base] = n
	}
	return nil
}

func (c *CrashFS) Link(oldname, newname string) error {
	c.mu.Lock()
	n := c.lookup(oldname)
	c.mu.Unlock()
	if err := os.Link(oldname, newname); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, base := c.parent(newname); d != nil {
		if n == nil {
			if n, _ = adopt(newname); n == nil {
				return nil
			}
		}
		d.live[base] = n
	}
	return nil
}

func (c *CrashFS) Remove(name string) error {
	c.mu.Lock()
	c.lookup(name)
	c.mu.Unlock()
	if err := os.Remove(name); err != nil {
		return err
	}
	c.unlink(name)
	return nil
}

func (c *CrashFS) RemoveAll(name string) error {
	c.mu.Lock()
	c.lookup(name)
	c.mu.Unlock()
	if err := os.RemoveAll(name); err != nil {
		return err
	}
	c.unlink(name)
	return nil
}

func (c *CrashFS) unlink(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, base := c.parent(name); d != nil {
		delete(d.live, base)
	}
}

// SyncDir makes the folder's live entries its durable ones.
func (c *CrashFS) SyncDir(name string) error {
	if fi, err := os.Stat(name); err != nil {
		return err
	} else if !fi.IsDir() {
		return &fs.PathError{Op: "syncdir", Path: name, Err: errors.New("not a folder")}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.lookup(name); n != nil && n.dir {
		clear(n.durable)
		for k, v := range n.live {
			n.durable[k] = v
		}
	}
	return nil
}

type crashFile struct {
	*os.File
	c *CrashFS
	n *node
}

// Sync makes the file's bytes as they are now its durable bytes.
func (f *crashFile) Sync() error {
	fi, err := f.File.Stat()
	if err != nil {
		return err
	}
	b := make([]byte, fi.Size())
	if _, err := f.File.ReadAt(b, 0); err != nil && len(b) > 0 {
		return fmt.Errorf("vfs: crash fs: read back %s: %w", f.Name(), err)
	}
	f.c.mu.Lock()
	f.n.data = b
	f.c.mu.Unlock()
	return nil
}

// CloneOptions tune Clone.
type CloneOptions struct {
	// KeepUnsynced keeps this fraction (0 to 1) of the bytes appended to a
	// file since its last Sync, as a power cut in the middle of the
	// kernel's writeback would: a torn tail. Bytes changed in place since
	// the last Sync are never kept.
	KeepUnsynced float64
}

// Clone writes what would survive a power cut now into dst, a folder that
// must not exist: the durable entries, from the root down, each file with
// its durable bytes.
func (c *CrashFS) Clone(dst string, opts CloneOptions) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Entries made without the CrashFS count as durable: adopt them first.
	live := map[*node]string{}
	var walk func(n *node, p string)
	walk = func(n *node, p string) {
		live[n] = p
		if !n.dir {
			return
		}
		if ents, err := os.ReadDir(p); err == nil {
			for _, e := range ents {
				if _, ok := n.live[e.Name()]; !ok {
					if a, err := adopt(filepath.Join(p, e.Name())); err == nil && a != nil {
						n.live[e.Name()], n.durable[e.Name()] = a, a
					}
				}
			}
		}
		for name, k := range n.live {
			walk(k, filepath.Join(p, name))
		}
	}
	walk(c.top, c.root)
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("vfs: crash clone: %s exists", dst)
	}
	var write func(n *node, p string) error
	write = func(n *node, p string) error {
		if n.dir {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			for name, k := range n.durable {
				if err := write(k, filepath.Join(p, name)); err != nil {
					return err
				}
			}
			return nil
		}
		data := n.data
		if lp, ok := live[n]; ok && opts.KeepUnsynced > 0 {
			if cur, err := os.ReadFile(lp); err == nil && len(cur) > len(data) && bytes.HasPrefix(cur, data) {
				data = cur[:len(data)+int(opts.KeepUnsynced*float64(len(cur)-len(data)))]
			}
		}
		return os.WriteFile(p, data, 0o644)
	}
	if err := write(c.top, dst); err != nil {
		return fmt.Errorf("vfs: crash clone: %w", err)
	}
	return nil
}
