package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/vfs"
)

// ManifestFile is the name of the manifest in the history folder.
const ManifestFile = "MANIFEST"

// manifestFileV1 is where version 1 kept its JSON manifest; it is still
// read when no ManifestFile exists, and removed by the next write.
const manifestFileV1 = "MANIFEST.json"

// ManifestVersion is the manifest format this agentctl writes: 3 added
// each file's checksum. Versions 1 (JSON) and 2 are still read; their
// files are used without a check.
const ManifestVersion = 3

// manifestMagic is the first line of a manifest of the text format (the
// version follows it).
const manifestMagic = "agentctl history manifest "

// Manifest lists the live Parquet files of the history and which file holds
// each sealed session. It is the only source of truth for readers: a file
// under the history folder that the manifest does not list is not part of
// the history (a leftover of a crash, removed by the next compaction).
//
// A row of file F is live if and only if Sessions[row.session_id].File is
// F. FileEntry.Dropped lists, per file, the sessions for which that is not
// so, so readers can filter without the session map.
//
// SessionsDir records what the sessions folder held when the manifest was
// written, so a reader can tell which sessions are not sealed without
// listing that folder (see SessionsSnapshot).
type Manifest struct {
	Version     int
	Generation  int64
	Files       []FileEntry
	Sessions    map[string]SessionEntry
	SessionsDir SessionsSnapshot

	// Partial is set by LoadManifestChanging: Sessions then lacks the
	// sessions that are final and were sealed whole. Such a manifest is
	// never written back.
	Partial bool
}

// SessionsSnapshot is what the sessions folder held when the manifest was
// written. While the folder's modification time is still MTime (a session
// folder made or removed since changes it), its entries are exactly the
// sealed sessions plus Unsealed. MTime is 0 when no snapshot was taken, or
// when the folder changed too recently to trust its time (see Seal).
type SessionsSnapshot struct {
	MTime    int64    // the folder's modification time, in Unix nanoseconds
	Unsealed []string // its sessions that are not in Sessions, sorted
}

// FileEntry is one live Parquet file.
type FileEntry struct {
	Path     string   `json:"path"` // relative to the history folder, with slashes
	Rows     int64    `json:"rows"`
	Bytes    int64    `json:"bytes"`
	Sessions int      `json:"sessions"`
	Segment  bool     `json:"segment,omitempty"` // made by compaction
	Dropped  []string `json:"dropped,omitempty"` // sessions whose rows here are superseded
	// CRC32C is the file's checksum (FileSum) when it was written, checked
	// by Verify before a query reads the file and before a compaction
	// merges it: a flipped byte in a page's data would otherwise read as
	// other values with no error. Empty for files listed by a manifest of
	// version 1 or 2.
	CRC32C string `json:"crc32c,omitempty"`
}

// SessionEntry says where a sealed session's rows are and what was sealed:
// the log's last seq and size then. A log whose size differs has changed
// since (resumed, or its torn tail cut) and is read from the log instead.
//
// Final is true when the sealed events end with session_finished, status
// done: such a session is never appended to again (resume refuses it; a
// fork makes a new session), so readers need not look at its log. Torn
// is true when the log had a torn tail when it was sealed.
type SessionEntry struct {
	File    string `json:"file"`
	LastSeq int64  `json:"last_seq"`
	LogSize int64  `json:"log_size"`
	Final   bool   `json:"final,omitempty"`
	Torn    bool   `json:"torn,omitempty"`
}

func newManifest() *Manifest {
	return &Manifest{Version: ManifestVersion, Sessions: map[string]SessionEntry{}}
}

// LoadManifest reads the manifest of the history folder dir. A folder with
// no manifest is an empty history.
//
// # Format (version 3)
//
// Text, one record per line, fields separated by tabs; a session id that
// holds a tab, newline, backslash or double quote, or starts with a quote,
// is written as a Go-quoted string:
//
//	agentctl history manifest 3
//	generation	<n>
//	sessions-dir	<mtime ns>	<unsealed count>
//	F	<path>	<rows>	<bytes>	<sessions>	<segment 0|1>	<crc32c>   a live file
//	D	<id>                                              dropped from the last F
//	S	<id>	<file index>	<last seq>	<log size>	<flags>   a sealed session
//	U	<id>                                              an unsealed session
//	end	<files>	<sessions>
//
// Flags are letters: f (final), t (torn tail). The end line guards
// against a short file. The checksum is 8 lowercase hex digits, or - for
// none; version 2 is the same without that field.
func LoadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	b, err := vfs.ReadRegular(p)
	if errors.Is(err, os.ErrNotExist) {
		return loadManifestV1(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("history: read manifest: %w", err)
	}
	if len(b) > 0 && b[0] == '{' {
		// The JSON form: what version 1 wrote, and what a program that
		// encodes a Manifest with encoding/json writes.
		return decodeJSON(p, b)
	}
	m, err := parseManifest(b, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, p, err)
	}
	return m, nil
}

// LoadManifestChanging is LoadManifest for a reader that needs only the
// sessions whose rows may still change, and whether a session is sealed
// otherwise does not matter to it: Sessions leaves out the sessions that
// are final with no torn tail (looking one up finds nothing, as for a
// session never sealed), and Partial is set. A query over a history of
// 10,000 finished sessions then builds a map of none instead of 10,000,
// which in a fresh process costs 5-10 ms of the query's ~100.
func LoadManifestChanging(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	b, err := vfs.ReadRegular(p)
	if err != nil || len(b) == 0 || b[0] == '{' {
		return LoadManifest(dir)
	}
	m, err := parseManifest(b, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, p, err)
	}
	return m, nil
}

func loadManifestV1(dir string) (*Manifest, error) {
	p := filepath.Join(dir, manifestFileV1)
	b, err := vfs.ReadRegular(p)
	if errors.Is(err, os.ErrNotExist) {
		return newManifest(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: read manifest: %w", err)
	}
	return decodeJSON(p, b)
}

// WriteManifest replaces the manifest of the history folder dir with m,
// atomically. It is for programs that build a history of their own (a
// bundle opened for querying); a History writes its manifest itself, under
// its lock.
func WriteManifest(dir string, m *Manifest, noSync bool) error { return m.save(vfs.OS, dir, noSync) }

func decodeJSON(p string, b []byte) (*Manifest, error) {
	var v1 struct {
		Version    int                     `json:"version"`
		Generation int64                   `json:"generation"`
		Files      []FileEntry             `json:"files"`
		Sessions   map[string]SessionEntry `json:"sessions"`
	}
	if err := json.Unmarshal(b, &v1); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, p, err)
	}
	if v1.Version < 1 || v1.Version > ManifestVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this agentctl reads 1 to %d", ErrManifest, p, v1.Version, ManifestVersion)
	}
	m := newManifest()
	m.Generation, m.Files = v1.Generation, v1.Files
	if v1.Sessions != nil {
		m.Sessions = v1.Sessions
	}
	return m, nil
}

// parseManifest reads the text format, versions 2 and 3. It runs on every query (a
// history of 10,000 sessions is 10,000 lines), so it makes one string of
// the file and slices fields from it instead of allocating per line.
func parseManifest(b []byte, changing bool) (*Manifest, error) {
	m := newManifest()
	all := string(b)
	sealed := 0 // S lines, for the end line's count
	if changing {
		m.Partial = true
	} else {
		m.Sessions = make(map[string]SessionEntry, strings.Count(all, "\nS\t"))
	}
	line, rest, _ := strings.Cut(all, "\n")
	fileFields := 0 // of an F line
	switch line {
	case manifestMagic + "2":
		fileFields = 6
	case manifestMagic + "3":
		fileFields = 7
	default:
		if v, ok := strings.CutPrefix(line, manifestMagic); ok {
			return nil, fmt.Errorf("version %s, this agentctl reads 2 and %d", v, ManifestVersion)
		}
		return nil, fmt.Errorf("not a manifest (first line %.40q)", line)
	}
	n := 1
	ended := false
	var fa [8]string
	for len(rest) > 0 {
		line, rest, _ = strings.Cut(rest, "\n")
		n++
		if ended {
			return nil, fmt.Errorf("line %d: data after the end line", n)
		}
		f := splitTabs(fa[:0], line)
		bad := func(what string) error { return fmt.Errorf("line %d: %s: %.60q", n, what, line) }
		switch {
		case f[0] == "S" && len(f) == 6:
			sealed++
			if changing && f[5] == "f" {
				continue // final, sealed whole: never read again
			}
			id, err := unesc(f[1])
			fi, ok1 := atoi(f[2])
			last, ok2 := atoi(f[3])
			size, ok3 := atoi(f[4])
			if err != nil || !ok1 || !ok2 || !ok3 || fi >= int64(len(m.Files)) {
				return nil, bad("bad session")
			}
			m.Sessions[id] = SessionEntry{
				File: m.Files[fi].Path, LastSeq: last, LogSize: size,
				Final: strings.IndexByte(f[5], 'f') >= 0, Torn: strings.IndexByte(f[5], 't') >= 0,
			}
		case f[0] == "F" && len(f) == fileFields:
			fe := FileEntry{Path: f[1], Segment: f[5] == "1"}
			if fileFields == 7 && f[6] != "-" {
				if !isSum(f[6]) {
					return nil, bad("bad checksum")
				}
				fe.CRC32C = f[6]
			}
			var ok1, ok2, ok3 bool
			var sessions int64
			fe.Rows, ok1 = atoi(f[2])
			fe.Bytes, ok2 = atoi(f[3])
			sessions, ok3 = atoi(f[4])
			if !ok1 || !ok2 || !ok3 || fe.Path == "" {
				return nil, bad("bad file")
			}
			fe.Sessions = int(sessions)
			m.Files = append(m.Files, fe)
		case f[0] == "D" && len(f) == 2 && len(m.Files) > 0:
			id, err := unesc(f[1])
			if err != nil {
				return nil, bad("bad dropped session")
			}
			last := &m.Files[len(m.Files)-1]
			last.Dropped = append(last.Dropped, id)
		case f[0] == "U" && len(f) == 2:
			id, err := unesc(f[1])
			if err != nil {
				return nil, bad("bad unsealed session")
			}
			m.SessionsDir.Unsealed = append(m.SessionsDir.Unsealed, id)
		case f[0] == "generation" && len(f) == 2:
			var ok bool
			if m.Generation, ok = atoi(f[1]); !ok {
				return nil, bad("bad generation")
			}
		case f[0] == "sessions-dir" && len(f) == 3:
			var ok bool
			if m.SessionsDir.MTime, ok = atoi(f[1]); !ok {
				return nil, bad("bad sessions-dir")
			}
		case f[0] == "end" && len(f) == 3:
			nf, ok1 := atoi(f[1])
			ns, ok2 := atoi(f[2])
			if !ok1 || !ok2 || nf != int64(len(m.Files)) || ns != int64(sealed) {
				return nil, bad(fmt.Sprintf("end line does not match %d files, %d sessions", len(m.Files), sealed))
			}
			ended = true
		default:
			return nil, bad("unknown record")
		}
	}
	if !ended {
		return nil, fmt.Errorf("no end line: the manifest is cut short")
	}
	return m, nil
}

// atoi parses a non-negative decimal (every number in the manifest is one;
// the mtime of a folder is a positive Unix time) without allocating.
func atoi(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + uint64(c)
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// isSum reports whether s is a checksum as FileSum writes it.
func isSum(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// splitTabs splits line into dst; the fields share line's memory.
func splitTabs(dst []string, s string) []string {
	for {
		i := strings.IndexByte(s, '\t')
		if i < 0 {
			return append(dst, s)
		}
		dst = append(dst, s[:i])
		s = s[i+1:]
	}
}

// esc writes a session id so that it fits in one tab-separated field.
func esc(id string) string {
	if id == "" || strings.ContainsAny(id, "\t\n\r\\\"") {
		return strconv.Quote(id)
	}
	return id
}

func unesc(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		return strconv.Unquote(s)
	}
	if s == "" {
		return "", errors.New("empty session id")
	}
	return s, nil
}

// encode writes m in the version 2 format, files sorted by path and
// sessions by id.
func (m *Manifest) encode() []byte {
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	index := make(map[string]int, len(m.Files))
	var b bytes.Buffer
	b.Grow(64 + 80*len(m.Files) + 64*len(m.Sessions))
	fmt.Fprintf(&b, "%s%d\ngeneration\t%d\nsessions-dir\t%d\t%d\n", manifestMagic, ManifestVersion, m.Generation, m.SessionsDir.MTime, len(m.SessionsDir.Unsealed))
	for i, f := range m.Files {
		index[f.Path] = i
		seg := "0"
		if f.Segment {
			seg = "1"
		}
		sum := f.CRC32C
		if sum == "" {
			sum = "-"
		}
		fmt.Fprintf(&b, "F\t%s\t%d\t%d\t%d\t%s\t%s\n", f.Path, f.Rows, f.Bytes, f.Sessions, seg, sum)
		for _, id := range f.Dropped {
			fmt.Fprintf(&b, "D\t%s\n", esc(id))
		}
	}
	ids := make([]string, 0, len(m.Sessions))
	for id := range m.Sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := m.Sessions[id]
		flags := "-"
		if e.Final || e.Torn {
			flags = ""
			if e.Final {
				flags += "f"
			}
			if e.Torn {
				flags += "t"
			}
		}
		b.WriteString("S\t")
		b.WriteString(esc(id))
		b.WriteByte('\t')
		b.WriteString(strconv.Itoa(index[e.File]))
		b.WriteByte('\t')
		b.WriteString(strconv.FormatInt(e.LastSeq, 10))
		b.WriteByte('\t')
		b.WriteString(strconv.FormatInt(e.LogSize, 10))
		b.WriteByte('\t')
		b.WriteString(flags)
		b.WriteByte('\n')
	}
	for _, id := range m.SessionsDir.Unsealed {
		fmt.Fprintf(&b, "U\t%s\n", esc(id))
	}
	fmt.Fprintf(&b, "end\t%d\t%d\n", len(m.Files), len(m.Sessions))
	return b.Bytes()
}

// save swaps in m as the manifest (vfs.WriteFileAtomicFS: temp file,
// fsync, rename, fsync dir).
// Every session in m.Sessions must point at a file in m.Files.
func (m *Manifest) save(fsys vfs.FS, dir string, noSync bool) error {
	if m.Partial {
		return errors.New("history: write manifest: a partial manifest (LoadManifestChanging) cannot be written")
	}
	m.Version = ManifestVersion
	b := m.encode()
	// Synced up to the home: the history folder itself must survive a
	// power cut with the manifest in it.
	mkdir := vfs.MkdirAllSynced
	if noSync {
		mkdir = func(fsys vfs.FS, dir string, perm fs.FileMode) error { return fsys.MkdirAll(dir, perm) }
	}
	if err := mkdir(fsys, dir, 0o755); err != nil {
		return fmt.Errorf("history: write manifest: %w", err)
	}
	if err := vfs.WriteFileAtomicFS(fsys, filepath.Join(dir, ManifestFile), b, 0o600, noSync); err != nil {
		return fmt.Errorf("history: write manifest: %w", err)
	}
	// Superseded; absent after the first write. Left behind, it is never
	// read while MANIFEST is there, so a failure to remove it is not one
	// of the save; a removal is made durable.
	if fsys.Remove(filepath.Join(dir, manifestFileV1)) != nil {
		return nil
	}
	return syncDir(fsys, dir, noSync)
}

func (m *Manifest) file(path string) int {
	for i := range m.Files {
		if m.Files[i].Path == path {
			return i
		}
	}
	return -1
}

// LiveFiles returns the paths of the live files, absolute under dir.
func (m *Manifest) LiveFiles(dir string) []string {
	out := make([]string, len(m.Files))
	for i, f := range m.Files {
		out[i] = filepath.Join(dir, filepath.FromSlash(f.Path))
	}
	return out
}

// Witness is the history's manifest as a recorder.Witness: Seal reads a
// log's events and records the last seq it sealed (and the log's size),
// so a log that now ends before that seq lost records it had.
type Witness struct{ Dir string }

var _ recorder.Witness = Witness{}

// Beyond implements recorder.Witness.
func (w Witness) Beyond(id string, last int64) (recorder.Durable, bool) {
	m, err := witnessManifests.load(w.Dir)
	if err != nil {
		return recorder.Durable{}, false
	}
	e, ok := m.Sessions[id]
	if !ok || e.LastSeq <= last {
		return recorder.Durable{}, false
	}
	return e.durable(w.Dir), true
}

// durable is what the manifest of the history folder dir says of a
// session's log through e.
func (e SessionEntry) durable(dir string) recorder.Durable {
	by := fmt.Sprintf("the history manifest %s (sealed into %s", filepath.Join(dir, ManifestFile), e.File)
	if e.Final {
		by += ", finished"
	}
	return recorder.Durable{Seq: e.LastSeq, Size: e.LogSize, By: by + ")"}
}

// witnessManifests keeps the last manifest each Witness read, so that the
// readers of many logs with no end (a listing of a home with thousands of
// imported or crashed sessions) parse the manifest once, not once a log.
// An entry is used only while the file is the one it was read from: the
// manifest is replaced by rename, so its inode, size and time change.
var witnessManifests manifestCache

type manifestCache struct {
	mu sync.Mutex
	by map[string]cachedManifest
}

type cachedManifest struct {
	fi os.FileInfo
	m  *Manifest
}

func (c *manifestCache) load(dir string) (*Manifest, error) {
	fi, err := os.Stat(filepath.Join(dir, ManifestFile))
	if err != nil {
		return LoadManifest(dir) // none, or version 1's: not cached
	}
	c.mu.Lock()
	got, ok := c.by[dir]
	c.mu.Unlock()
	if ok && os.SameFile(got.fi, fi) && got.fi.Size() == fi.Size() && got.fi.ModTime().Equal(fi.ModTime()) {
		return got.m, nil
	}
	m, err := LoadManifest(dir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]cachedManifest{}
	}
	c.by[dir] = cachedManifest{fi, m}
	return m, nil
}
