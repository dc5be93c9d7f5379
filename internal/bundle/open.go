package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/session"
)

// Errors of Extract. Each wraps ErrRefused, so callers can tell a hostile
// or damaged bundle from an I/O failure with errors.Is.
var (
	// ErrRefused: the bundle is not accepted; nothing was left behind.
	ErrRefused = errors.New("bundle: refused")
	// ErrUnsafePath: a member's name is absolute, has "..", or is not clean.
	ErrUnsafePath = fmt.Errorf("%w: unsafe path", ErrRefused)
	// ErrMemberType: a member is a link, a device, a fifo or some other
	// non-regular file.
	ErrMemberType = fmt.Errorf("%w: not a regular file", ErrRefused)
	// ErrTooLarge: a member or the whole bundle is over the limit.
	ErrTooLarge = fmt.Errorf("%w: too large", ErrRefused)
	// ErrManifest: the MANIFEST is missing, unreadable or does not match
	// the members.
	ErrManifest = fmt.Errorf("%w: manifest mismatch", ErrRefused)
)

// Limits of Extract's defaults.
const (
	DefaultMaxMember  = 8 << 30
	DefaultMaxTotal   = 32 << 30
	DefaultMaxMembers = 1 << 20
	// DecoderMaxMemory caps the zstd decoder's window and buffers.
	DecoderMaxMemory = 64 << 20
	// DefaultMaxRatio bounds how many bytes each compressed byte read so
	// far may inflate to, beyond the first RatioSlack. Without it, a
	// bundle of a quarter of a MiB declaring one 7 GiB member of zeros
	// was inflated and hashed whole (two minutes) before its missing
	// MANIFEST refused it; with it, the work of reading any bundle is at
	// most RatioSlack plus DefaultMaxRatio times its size. A bundle
	// agentctl writes stays far below: its workspace archive and
	// Parquet are stored compressed, and text compresses 3 to 30 times.
	DefaultMaxRatio = 1000
	// RatioSlack is how much any bundle may inflate to whatever its ratio.
	RatioSlack = 64 << 20
)

// ExtractOptions tune Extract. The zero value applies the defaults.
type ExtractOptions struct {
	MaxMember  int64 // largest member accepted (default DefaultMaxMember)
	MaxTotal   int64 // most bytes written in all (default DefaultMaxTotal)
	MaxMembers int   // most members (default DefaultMaxMembers)
	// MaxRatio bounds the bytes inflated per compressed byte read, past
	// RatioSlack (default DefaultMaxRatio).
	MaxRatio int64
	// Only, when set, picks the members written; all are still read and
	// checked against the manifest.
	Only func(name string) bool
}

// Extract reads a bundle from r and unpacks it into dir, which must not
// exist or be an empty folder. See the package doc for what is refused.
//
// The bundle is read twice. The first pass writes nothing: it checks every
// member's header, size and sha256 against the MANIFEST, so a hostile
// bundle cannot fill the disk with members it never declared. The second
// pass writes the members into a fresh folder beside dir, refusing at its
// header any member that differs from what the first pass verified (the
// file changed in between), and renames the folder to dir at the end; on
// any error nothing is left behind.
func Extract(ctx context.Context, r io.ReadSeeker, dir string, opts ExtractOptions) (*Manifest, error) {
	if opts.MaxMember <= 0 {
		opts.MaxMember = DefaultMaxMember
	}
	if opts.MaxTotal <= 0 {
		opts.MaxTotal = DefaultMaxTotal
	}
	if opts.MaxMembers <= 0 {
		opts.MaxMembers = DefaultMaxMembers
	}
	if opts.MaxRatio <= 0 {
		opts.MaxRatio = DefaultMaxRatio
	}
	dir = filepath.Clean(dir)
	if ents, err := os.ReadDir(dir); err == nil {
		if len(ents) > 0 {
			return nil, fmt.Errorf("bundle: open into %s: folder is not empty", dir)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("bundle: open into %s: %w", dir, err)
	}
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	m, raw, err := scan(ctx, r, opts, nil, nil)
	if err != nil {
		return nil, err
	}
	if _, err := r.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".partial-")
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	if err := unpack(ctx, r, tmp, opts, m, raw); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	os.Remove(dir) // an empty folder given as the target
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return m, nil
}

// unpack is Extract's second pass: it writes the members into dir, each
// checked at its header against the verified manifest m.
func unpack(ctx context.Context, r io.Reader, dir string, opts ExtractOptions, m *Manifest, raw []byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	defer root.Close()
	want := make(map[string]Member, len(m.Members))
	for _, mm := range m.Members {
		want[mm.Name] = mm
	}
	sink := func(name string, size int64) (io.WriteCloser, error) {
		mm, ok := want[name]
		if !ok || mm.Size != size {
			return nil, fmt.Errorf("%w: %q differs from the first read of the bundle (the file changed while it was opened)", ErrManifest, name)
		}
		if opts.Only != nil && !opts.Only(name) {
			return nil, nil
		}
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("%w: %q: %v", ErrUnsafePath, name, err)
			}
		}
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrUnsafePath, name, err)
		}
		return f, nil
	}
	again, raw2, err := scan(ctx, r, opts, sink, want)
	if err != nil {
		return err
	}
	if !bytes.Equal(raw, raw2) || len(again.Members) != len(m.Members) {
		return fmt.Errorf("%w: the MANIFEST differs from the first read of the bundle (the file changed while it was opened)", ErrManifest)
	}
	if opts.Only == nil || opts.Only(ManifestName) {
		if err := root.WriteFile(ManifestName, raw, 0o644); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	return nil
}

// scan reads the bundle once, checking each member's header as it comes and
// every member against the MANIFEST at the end; it returns the manifest and
// its bytes. sink, when set, gives the writer for a member (nil: hash only)
// before a byte of it is read; want, when set, are the members the first
// pass verified, whose sha256 each member must match as it ends.
func scan(ctx context.Context, r io.Reader, opts ExtractOptions, sink func(name string, size int64) (io.WriteCloser, error), want map[string]Member) (*Manifest, []byte, error) {
	in := &countReader{r: r}
	dec, err := zstd.NewReader(in, zstd.WithDecoderMaxMemory(DecoderMaxMemory), zstd.WithDecoderMaxWindow(DecoderMaxMemory),
		zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, nil, fmt.Errorf("bundle: %w", err)
	}
	defer dec.Close()
	tr := tar.NewReader(&ratioReader{dec: dec, in: in, ratio: opts.MaxRatio})
	got := map[string]Member{}
	var order []string
	var total int64
	var manifest []byte
	buf := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrRefused) {
			return nil, nil, err
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrRefused, err)
		}
		if manifest != nil {
			return nil, nil, fmt.Errorf("%w: member %q after the MANIFEST", ErrManifest, hdr.Name)
		}
		name := hdr.Name
		if !safeName(name) {
			return nil, nil, fmt.Errorf("%w: %q", ErrUnsafePath, name)
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			continue // folders are made as files need them
		default:
			return nil, nil, fmt.Errorf("%w: %q is a %s", ErrMemberType, name, typeName(hdr.Typeflag))
		}
		if hdr.Size < 0 || hdr.Size > opts.MaxMember {
			return nil, nil, fmt.Errorf("%w: member %q has %d bytes (limit %d)", ErrTooLarge, name, hdr.Size, opts.MaxMember)
		}
		if total += hdr.Size; total > opts.MaxTotal {
			return nil, nil, fmt.Errorf("%w: members add up to more than %d bytes", ErrTooLarge, opts.MaxTotal)
		}
		if _, dup := got[name]; dup {
			return nil, nil, fmt.Errorf("%w: member %q appears twice", ErrManifest, name)
		}
		if len(got) >= opts.MaxMembers {
			return nil, nil, fmt.Errorf("%w: more than %d members", ErrTooLarge, opts.MaxMembers)
		}
		if name == ManifestName {
			if hdr.Size > 64<<20 {
				return nil, nil, fmt.Errorf("%w: MANIFEST has %d bytes", ErrTooLarge, hdr.Size)
			}
			if manifest, err = io.ReadAll(tr); errors.Is(err, ErrRefused) {
				return nil, nil, err
			} else if err != nil {
				return nil, nil, fmt.Errorf("%w: read MANIFEST: %v", ErrRefused, err)
			}
			if manifest == nil {
				manifest = []byte{}
			}
			continue
		}
		h := sha256.New()
		var w io.Writer = h
		var f io.WriteCloser
		if sink != nil {
			if f, err = sink(name, hdr.Size); err != nil {
				return nil, nil, err
			}
			if f != nil {
				w = io.MultiWriter(f, h)
			}
		}
		n, err := io.CopyBuffer(w, tr, buf)
		if f != nil {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if errors.Is(err, ErrRefused) {
			return nil, nil, fmt.Errorf("bundle: read member %q: %w", name, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: member %q: %v", ErrRefused, name, err)
		}
		g := Member{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
		if mm, ok := want[name]; want != nil && (!ok || mm != g) {
			return nil, nil, fmt.Errorf("%w: %q differs from the first read of the bundle (the file changed while it was opened)", ErrManifest, name)
		}
		got[name] = g
		order = append(order, name)
	}
	if manifest == nil {
		return nil, nil, fmt.Errorf("%w: no MANIFEST (not a bundle, or cut short)", ErrManifest)
	}
	var m Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, nil, fmt.Errorf("%w: MANIFEST: %v", ErrManifest, err)
	}
	if m.Format != Format || m.Version < 1 {
		return nil, nil, fmt.Errorf("%w: MANIFEST names format %q version %d", ErrManifest, m.Format, m.Version)
	}
	if m.Version > Version {
		return nil, nil, fmt.Errorf("%w: bundle version %d is newer than this agentctl reads (%d)", ErrRefused, m.Version, Version)
	}
	listed := map[string]bool{}
	for _, mm := range m.Members {
		listed[mm.Name] = true
		g, ok := got[mm.Name]
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("%w: %q is listed but missing", ErrManifest, mm.Name)
		case g.Size != mm.Size:
			return nil, nil, fmt.Errorf("%w: %q has %d bytes, the MANIFEST says %d", ErrManifest, mm.Name, g.Size, mm.Size)
		case g.SHA256 != mm.SHA256:
			return nil, nil, fmt.Errorf("%w: %q has sha256 %s, the MANIFEST says %s", ErrManifest, mm.Name, g.SHA256, mm.SHA256)
		}
	}
	for _, name := range order {
		if !listed[name] {
			return nil, nil, fmt.Errorf("%w: %q is not in the MANIFEST", ErrManifest, name)
		}
	}
	return &m, manifest, nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioReader fails the read that takes the inflated bytes past
// RatioSlack and ratio times the compressed bytes read so far. The
// decoder (one goroutine) reads its input a block at a time, so the count
// of compressed bytes is close to those behind the output.
type ratioReader struct {
	dec   io.Reader
	in    *countReader
	out   int64
	ratio int64
}

func (r *ratioReader) Read(p []byte) (int, error) {
	n, err := r.dec.Read(p)
	r.out += int64(n)
	if r.out > RatioSlack && r.out/r.ratio > r.in.n {
		return n, fmt.Errorf("%w: %d bytes of zstd inflate to more than %d, over %d times their size (a zstd bomb?); if the bundle is trusted, unpack it with 'agentctl bundle open --max-ratio N'", ErrTooLarge, r.in.n, r.out, r.ratio)
	}
	return n, err
}

// safeName reports whether a member name is a clean relative path with
// slashes that stays inside the target.
func safeName(name string) bool {
	n := strings.TrimSuffix(name, "/")
	if n == "" || strings.ContainsAny(n, "\\\x00") || path.Clean(n) != n {
		return false
	}
	return filepath.IsLocal(filepath.FromSlash(n))
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("member of type %q", t)
}

// OpenHistory unpacks the events.parquet members of the bundle at path
// (the session's and its children's) into a temporary agentctl home whose
// history lists them, so package query opens it like any home: the same
// views over one bundle. The manifest is verified as by Extract. cleanup
// removes the home.
func OpenHistory(ctx context.Context, bundlePath string) (home string, m *Manifest, cleanup func(), err error) {
	f, err := os.Open(bundlePath)
	if err != nil {
		return "", nil, nil, fmt.Errorf("bundle: %w", err)
	}
	defer f.Close()
	home, err = os.MkdirTemp("", "agentctl-bundle-home-")
	if err != nil {
		return "", nil, nil, fmt.Errorf("bundle: %w", err)
	}
	cleanup = func() { os.RemoveAll(home) }
	hdir := filepath.Join(home, history.Dir)
	isEvents := func(name string) bool { return path.Base(name) == "events.parquet" }
	m, err = Extract(ctx, f, filepath.Join(hdir, "bundle"), ExtractOptions{Only: isEvents})
	if err != nil {
		cleanup()
		return "", nil, nil, fmt.Errorf("bundle: open %s: %w", bundlePath, err)
	}
	hm := history.Manifest{Version: history.ManifestVersion, Generation: 1, Sessions: map[string]history.SessionEntry{}}
	for _, mm := range m.Members {
		if !isEvents(mm.Name) {
			continue
		}
		id := m.SessionID
		if d := path.Dir(mm.Name); d != "." {
			id = path.Base(d)
		}
		rel := "bundle/" + mm.Name
		hm.Files = append(hm.Files, history.FileEntry{Path: rel, Bytes: mm.Size, Sessions: 1})
		hm.Sessions[id] = history.SessionEntry{File: rel}
	}
	b, err := json.Marshal(hm)
	if err == nil {
		err = os.WriteFile(filepath.Join(hdir, history.ManifestFile), b, 0o644)
	}
	if err != nil {
		cleanup()
		return "", nil, nil, fmt.Errorf("bundle: %w", err)
	}
	return home, m, cleanup, nil
}

// EventsMember is the bundle's member that holds the session's events, as
// `agentctl show --json` prints them.
const EventsMember = "events.jsonl"

// ReadEvents reads the manifest and the events of the bundle at path, both
// verified as by Extract (events.jsonl is the one member unpacked, into a
// temporary folder that is removed): what a command that only shows or
// checks a bundle's session (view, diagnose) needs of it.
//
// Its errors name path (and the member) but no package or command, for
// the caller to put its own in front ("view: %w"): an open failure is the
// *fs.PathError; a refused bundle is "open <path>: " and Extract's error
// (errors.Is ErrRefused); an undecodable event "<path> events.jsonl: ".
func ReadEvents(ctx context.Context, path string) (*Manifest, []session.Event, error) {
	var evs []session.Event
	m, err := StreamEvents(ctx, path, func(e session.Event) { evs = append(evs, e) })
	if err != nil {
		return nil, nil, err
	}
	return m, evs, nil
}

// StreamEvents is ReadEvents handing the events to fn one at a time, in
// order, instead of returning them: a reader of a bundle of a million
// events (view, diagnose) holds one.
func StreamEvents(ctx context.Context, path string, fn func(session.Event)) (*Manifest, error) {
	tmp, err := os.MkdirTemp("", "agentctl-bundle-events-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	r, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	dir := filepath.Join(tmp, "b")
	m, err := Extract(ctx, r, dir, ExtractOptions{Only: func(n string) bool { return n == EventsMember }})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	ef, err := os.Open(filepath.Join(dir, EventsMember))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer ef.Close()
	sc := bufio.NewScanner(ef)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		e, err := session.Decode(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", path, EventsMember, err)
		}
		fn(e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
