package query_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/query"
)

// TestConfineReadsRemoteParts: a confined database over a home and a
// remote (agentctl ui --remote's SQL page) still reads the remote's cached
// files, which lie outside the home, and still reads no other file.
func TestConfineReadsRemoteParts(t *testing.T) {
	pushed := t.TempDir()
	ids := sealedApart(t, pushed, 1)
	var part string
	filepath.WalkDir(filepath.Join(pushed, "history"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") && part == "" {
			part = p
		}
		return nil
	})
	if part == "" {
		t.Fatal("no sealed file")
	}
	cache := filepath.Join(t.TempDir(), "remote-cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	cached := filepath.Join(cache, "part.parquet")
	if err := os.WriteFile(cached, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := query.OpenRemote(ctx, t.TempDir(), io.Discard, []query.RemotePart{{Path: cached, Sessions: ids}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Confine(ctx); err != nil {
		t.Fatal(err)
	}
	if got := scalar(t, db, "SELECT count(*) FROM sessions"); got != "1" {
		t.Errorf("sessions = %s, want the remote's 1", got)
	}
	if _, err := db.Query(ctx, "SELECT * FROM read_text('/etc/passwd')"); err == nil {
		t.Errorf("a confined database read /etc/passwd")
	}
}
