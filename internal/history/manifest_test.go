package history

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/vfs"
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

// A manifest of version 2 (no checksums) is still read, its files with no
// checksum to verify; written again, it is version 3, with "-" for them.
func TestManifestVersion2(t *testing.T) {
	dir := t.TempDir()
	v2 := "agentctl history manifest 2\ngeneration\t3\nsessions-dir\t0\t0\n" +
		"F\tdate=2026-11-29/a-5.parquet\t5\t900\t1\t0\nS\ta\t0\t5\t400\tf\nend\t1\t1\n"
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(v2), 0o644)
	m, err := LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 1 || m.Files[0].CRC32C != "" || m.Files[0].Bytes != 900 || m.Sessions["a"].LastSeq != 5 {
		t.Fatalf("LoadManifest(v2) = %+v", m)
	}
	if err := m.Files[0].Verify(dir); err != nil {
		t.Errorf("Verify of a file with no checksum = %v, want nil", err)
	}
	m.Files[0].CRC32C = "0badf00d"
	m.Files = append(m.Files, FileEntry{Path: "date=2026-11-29/b-1.parquet", Rows: 1, Bytes: 10, Sessions: 1})
	if err := m.save(vfs.OS, dir, true); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	for _, want := range []string{"agentctl history manifest 3\n", "\t0\t0badf00d\n", "b-1.parquet\t1\t10\t1\t0\t-\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("manifest written:\n%s\nlacks %q", b, want)
		}
	}
	back, err := LoadManifest(dir)
	if err != nil || back.Files[0].CRC32C != "0badf00d" || back.Files[1].CRC32C != "" {
		t.Errorf("read back: %+v, %v", back, err)
	}
}
