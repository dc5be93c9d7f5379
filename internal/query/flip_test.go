package query_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
)

// flipQueries are what the flip test asks: the events, and the sessions
// view's figures.
var flipQueries = []string{
	"SELECT count(*), count(DISTINCT session_id), sum(input_tokens), sum(output_tokens), sum(cost_usd), max(seq), string_agg(kind || ':' || coalesce(tool, '') || ':' || coalesce(status, ''), ',' ORDER BY session_id, seq) FROM events",
	"SELECT string_agg(session_id || ' ' || status || ' ' || events || ' ' || tool_calls || ' ' || errors, '; ' ORDER BY session_id) FROM sessions",
	"SELECT min(ts), max(ts), count(*) FILTER (WHERE kind = 'model_call') FROM events",
}

// flipAnswers opens home and runs flipQueries: their answers, or the
// error of the first that fails, and the warnings.
func flipAnswers(home string) (string, error, string) {
	var warn strings.Builder
	db, err := query.Open(context.Background(), home, &warn)
	if err != nil {
		return "", err, warn.String()
	}
	defer db.Close()
	var out []string
	for _, q := range flipQueries {
		res, err := db.Query(context.Background(), q)
		if err != nil {
			return "", err, warn.String()
		}
		out = append(out, fmt.Sprint(res.Rows))
	}
	return strings.Join(out, "\n"), nil, warn.String()
}

// TestFlippedByteNeverChangesAnAnswer: the recorded sessions of
// fixtures/home, sealed and compacted into one segment; a byte of it is
// flipped, as a disk does. No query may then answer differently with no
// error: the manifest's checksum catches every position; with the logs
// at hand the sessions are read from them (the same answers, a warning
// naming the file); with the logs gone the query fails, naming the file,
// with an error matching history.ErrCorruptFile (exit 7 in the CLI).
func TestFlippedByteNeverChangesAnAnswer(t *testing.T) {
	home := t.TempDir()
	if err := os.CopyFS(filepath.Join(home, "sessions"), os.DirFS(filepath.Join("..", "..", "fixtures", "home", "sessions"))); err != nil {
		t.Fatal(err)
	}
	h := history.New(home)
	h.NoSync = true
	ids, err := h.Store.IDs()
	if err != nil || len(ids) < 3 {
		t.Fatalf("fixture sessions: %v, %v", ids, err)
	}
	if _, err := h.Seal(ids...); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Compact(history.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := h.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	// The file with the most rows.
	f := slices.MaxFunc(m.Files, func(a, b history.FileEntry) int { return int(a.Rows - b.Rows) })
	path := filepath.Join(h.Dir, filepath.FromSlash(f.Path))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(off int) {
		b := slices.Clone(good)
		b[off] ^= 0xff
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defer os.WriteFile(path, good, 0o644)

	// Every position fails the manifest's check.
	if f.CRC32C == "" {
		t.Fatalf("the manifest records no checksum of %s", f.Path)
	}
	for off := range good {
		flip(off)
		if err := f.Verify(h.Dir); !errors.Is(err, history.ErrCorruptFile) || !strings.Contains(err.Error(), path) {
			t.Fatalf("byte %d of %d flipped: Verify = %v, want a corrupt file error naming %s", off, len(good), err, path)
		}
	}
	os.WriteFile(path, good, 0o644)

	// Through query (a DuckDB open and three queries each): 16 positions
	// across the file and 32 across its footer (the row counts and
	// statistics DuckDB answers from without reading a page), with the
	// logs and without.
	footer := len(good) - 8 - int(uint32(good[len(good)-8])|uint32(good[len(good)-7])<<8|uint32(good[len(good)-6])<<16|uint32(good[len(good)-5])<<24)
	var offs []int
	for i := range 16 {
		offs = append(offs, i*len(good)/16)
	}
	for i := range 32 {
		offs = append(offs, footer+i*(len(good)-footer)/32)
	}
	if testing.Short() {
		offs = offs[:8]
	}
	for _, logs := range []bool{true, false} {
		if !logs {
			for _, id := range ids {
				os.Remove(recorder.Store{Root: home}.LogPath(id))
			}
		}
		os.WriteFile(path, good, 0o644)
		want, err, _ := flipAnswers(home)
		if err != nil {
			t.Fatalf("logs %v, intact: %v", logs, err)
		}
		for _, off := range offs {
			flip(off)
			got, err, warn := flipAnswers(home)
			switch {
			case err == nil && got != want:
				t.Errorf("logs %v, byte %d of %d flipped: the answer changed with no error:\n%s\nwant\n%s", logs, off, len(good), got, want)
			case err == nil && !strings.Contains(warn, path):
				t.Errorf("logs %v, byte %d flipped: no warning names %s (warnings %q)", logs, off, path, warn)
			case err != nil && (!errors.Is(err, history.ErrCorruptFile) || !strings.Contains(err.Error(), path)):
				t.Errorf("logs %v, byte %d flipped: error %v, want a corrupt file error naming %s", logs, off, err, path)
			case err != nil && logs:
				t.Errorf("logs %v, byte %d flipped: %v; the logs could have answered", logs, off, err)
			}
		}
		t.Logf("logs %v: %d positions of %d bytes flipped through query", logs, len(offs), len(good))
	}
}
