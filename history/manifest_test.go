package history

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/vfs"
)

// LoadManifestChanging keeps every session that may still change (not
// final, or sealed with a torn tail) exactly as LoadManifest has it, and
// only those; the end line is still checked; a partial manifest is never
// written.
func TestLoadManifestChanging(t *testing.T) {
	dir := t.TempDir()
	m := newManifest()
	m.Generation = 7
	m.Files = []FileEntry{{Path: "date=2026-11-29/a.parquet", Rows: 10, Bytes: 100, Sessions: 4}}
	f := m.Files[0].Path
	m.Sessions = map[string]SessionEntry{
		"final":       {File: f, LastSeq: 5, LogSize: 50, Final: true},
		"final-torn":  {File: f, LastSeq: 6, LogSize: 60, Final: true, Torn: true},
		"failed":      {File: f, LastSeq: 7, LogSize: 70},
		"with\ttab":   {File: f, LastSeq: 8, LogSize: 80},
		"final\"quot": {File: f, LastSeq: 9, LogSize: 90, Final: true},
	}
	m.SessionsDir = SessionsSnapshot{MTime: 1795993794492543548, Unsealed: []string{"u1"}}
	if err := m.save(vfs.OS, dir, true); err != nil {
		t.Fatal(err)
	}
	full, err := LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	part, err := LoadManifestChanging(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !part.Partial || full.Partial {
		t.Fatalf("Partial: full %v, changing %v", full.Partial, part.Partial)
	}
	want := map[string]SessionEntry{}
	for id, e := range full.Sessions {
		if !e.Final || e.Torn {
			want[id] = e
		}
	}
	if !reflect.DeepEqual(part.Sessions, want) || len(want) != 3 {
		t.Errorf("changing sessions = %v, want %v", part.Sessions, want)
	}
	if !reflect.DeepEqual(part.Files, full.Files) || part.Generation != 7 || !reflect.DeepEqual(part.SessionsDir, full.SessionsDir) {
		t.Errorf("changing manifest %+v differs from %+v beyond its sessions", part, full)
	}
	if err := part.save(vfs.OS, dir, true); err == nil {
		t.Error("a partial manifest was written")
	}
	// A manifest that lost a final session's line still fails its end line.
	p := filepath.Join(dir, ManifestFile)
	b, _ := os.ReadFile(p)
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "S\tfinal\t") {
			kept = append(kept, l)
		}
	}
	os.WriteFile(p, []byte(strings.Join(kept, "\n")), 0o644)
	if _, err := LoadManifestChanging(dir); err == nil || !strings.Contains(err.Error(), "end line") {
		t.Errorf("short manifest: %v, want an end line error", err)
	}
}
