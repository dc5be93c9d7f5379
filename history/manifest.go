package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// ManifestFile is the name of the manifest in the history folder.
const ManifestFile = "MANIFEST.json"

// ManifestVersion is the manifest format this agentctl writes and reads.
const ManifestVersion = 1

// Manifest lists the live Parquet files of the history and which file holds
// each sealed session. It is the only source of truth for readers: a file
// under the history folder that the manifest does not list is not part of
// the history (a leftover of a crash, removed by the next compaction).
//
// A row of file F is live if and only if Sessions[row.session_id].File is
// F. FileEntry.Dropped lists, per file, the sessions for which that is not
// so, so readers can filter without the session map.
type Manifest struct {
	Version    int                     `json:"version"`
	Generation int64                   `json:"generation"`
	Files      []FileEntry             `json:"files"`
	Sessions   map[string]SessionEntry `json:"sessions"`
}

// FileEntry is one live Parquet file.
type FileEntry struct {
	Path     string   `json:"path"` // relative to the history folder, with slashes
	Rows     int64    `json:"rows"`
	Bytes    int64    `json:"bytes"`
	Sessions int      `json:"sessions"`
	Segment  bool     `json:"segment,omitempty"` // made by compaction
	Dropped  []string `json:"dropped,omitempty"` // sessions whose rows here are superseded
}

// SessionEntry says where a sealed session's rows are and what was sealed:
// the log's last seq and size then. A log whose size differs has changed
// since (resumed, or its torn tail cut) and is read from the log instead.
type SessionEntry struct {
	File    string `json:"file"`
	LastSeq int64  `json:"last_seq"`
	LogSize int64  `json:"log_size"`
}

func newManifest() *Manifest {
	return &Manifest{Version: ManifestVersion, Sessions: map[string]SessionEntry{}}
}

// LoadManifest reads the manifest of the history folder dir. A folder with
// no manifest is an empty history.
func LoadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return newManifest(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: read manifest: %w", err)
	}
	m := newManifest()
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, filepath.Join(dir, ManifestFile), err)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this agentctl reads %d", ErrManifest, filepath.Join(dir, ManifestFile), m.Version, ManifestVersion)
	}
	if m.Sessions == nil {
		m.Sessions = map[string]SessionEntry{}
	}
	return m, nil
}

// save swaps in m as the manifest: temp file, fsync, rename, fsync dir.
func (m *Manifest) save(dir string, noSync bool) error {
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("history: write manifest: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("history: write manifest: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-manifest-*")
	if err != nil {
		return fmt.Errorf("history: write manifest: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil && !noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, ManifestFile))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("history: write manifest: %w", err)
	}
	return syncDir(dir, noSync)
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
