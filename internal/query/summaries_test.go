package query_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
)

// sealedFixture is a copy of a fixture home with every session sealed;
// compacted into a segment when compact is set.
func sealedFixture(t *testing.T, fixture string, compact bool) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "h")
	if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "fixtures", fixture), home).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v %s", fixture, err, out)
	}
	h := history.New(home)
	h.NoSync = true
	ids, err := h.Store.IDs()
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Seal(ids...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.File == "" {
			t.Fatalf("session %s not sealed: %s %s", r.SessionID, r.Skipped, r.Err)
		}
	}
	if compact {
		if _, err := h.Compact(history.CompactOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// sessionsOf is the whole sessions view, its types and the tool_calls
// view's count, as one DB answers them.
func sessionsOf(t *testing.T, home string, foldOnly bool) (*query.Result, *query.Result) {
	t.Helper()
	db, err := query.Open(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if foldOnly {
		query.FoldOnly(db)
	}
	rows, err := db.Query(context.Background(), "SELECT * FROM sessions ORDER BY session_id")
	if err != nil {
		t.Fatal(err)
	}
	types, err := db.Query(context.Background(), "DESCRIBE sessions")
	if err != nil {
		t.Fatal(err)
	}
	return rows, types
}

func summaries(t *testing.T, home string) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(home, history.Dir, history.SummaryDir, "*.parquet"))
	return names
}

// TestSummariesAreTheFold: the sessions view read from the history files'
// summaries is, row for row and type for type, the view folded from every
// event (the reference), over the fixture homes sealed per session and
// compacted into segments; the first query writes the summaries and the
// second reads them.
func TestSummariesAreTheFold(t *testing.T) {
	for _, fixture := range []string{"home", "diagnose/home", "replay/home"} {
		for _, compact := range []bool{false, true} {
			t.Run(fixture+map[bool]string{false: "/per-session", true: "/compacted"}[compact], func(t *testing.T) {
				home := sealedFixture(t, fixture, compact)
				want, wantTypes := sessionsOf(t, home, true)
				if len(want.Rows) == 0 {
					t.Fatal("the fixture has no sessions")
				}
				if n := len(summaries(t, home)); n != 0 {
					t.Fatalf("%d summaries before any query read the sessions view", n)
				}
				for pass := range 2 {
					got, gotTypes := sessionsOf(t, home, false)
					if len(summaries(t, home)) == 0 {
						t.Fatal("no summary was written")
					}
					if !reflect.DeepEqual(gotTypes.Rows, wantTypes.Rows) {
						t.Errorf("pass %d: the view's columns from summaries:\n%v\nfolded:\n%v", pass, gotTypes.Rows, wantTypes.Rows)
					}
					if !reflect.DeepEqual(got.Rows, want.Rows) {
						t.Errorf("pass %d: sessions from summaries:\n%v\nfolded:\n%v", pass, got.Rows, want.Rows)
					}
				}
			})
		}
	}
}

// TestDamagedSummaryIsNotRead: a summary whose bytes no longer match the
// checksum in its name is never read: the answer is the fold's, and the
// summary is made again. (Turning the check off makes the flipped byte
// an answer or an error.)
func TestDamagedSummaryIsNotRead(t *testing.T) {
	home := sealedFixture(t, "diagnose/home", true)
	want, _ := sessionsOf(t, home, true)
	sessionsOf(t, home, false)
	names := summaries(t, home)
	if len(names) != 1 {
		t.Fatalf("summaries %v, want one for the one segment", names)
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{len(b) / 3, len(b) / 2, len(b) - 20} {
		bad := append([]byte(nil), b...)
		bad[off] ^= 0x40
		if err := os.WriteFile(names[0], bad, 0o644); err != nil {
			t.Fatal(err)
		}
		got, _ := sessionsOf(t, home, false)
		if !reflect.DeepEqual(got.Rows, want.Rows) {
			t.Errorf("byte %d flipped: sessions\n%v\nwant\n%v", off, got.Rows, want.Rows)
		}
		again, err := os.ReadFile(names[0])
		if err != nil || !reflect.DeepEqual(again, b) {
			t.Errorf("byte %d flipped: the summary was not made again (%v)", off, err)
		}
	}
}

// TestSummaryGoesWithItsFile: compaction retires the per-session files and
// their summaries with them; the segment's is made by the next query.
func TestSummaryGoesWithItsFile(t *testing.T) {
	home := sealedFixture(t, "home", false)
	sessionsOf(t, home, false)
	before := summaries(t, home)
	if len(before) < 2 {
		t.Fatalf("summaries %v, want one per sealed session", before)
	}
	h := history.New(home)
	h.NoSync = true
	if _, err := h.Compact(history.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if left := summaries(t, home); len(left) != 0 {
		t.Errorf("after compaction, summaries of retired files remain: %v", left)
	}
	sessionsOf(t, home, false)
	after := summaries(t, home)
	if len(after) != 1 || !strings.Contains(filepath.Base(after[0]), "seg-") {
		t.Errorf("summaries after a query %v, want the segment's", after)
	}
}

// TestSummaryRemovedUnderAnOpenDB: a database that read the sessions
// view from per-session files' summaries answers again, the same, after
// a compaction retired those files and their summaries under it (the
// views are made again over the new manifest, as for the files).
func TestSummaryRemovedUnderAnOpenDB(t *testing.T) {
	home := sealedFixture(t, "home", false)
	want, _ := sessionsOf(t, home, true)
	db, err := query.Open(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := "SELECT * FROM sessions ORDER BY session_id"
	first, err := db.Query(context.Background(), q)
	if err != nil || !reflect.DeepEqual(first.Rows, want.Rows) {
		t.Fatalf("before the compaction: %v\n%v\nwant\n%v", err, first, want.Rows)
	}
	h := history.New(home)
	h.NoSync = true
	if _, err := h.Compact(history.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := db.Query(context.Background(), q)
	if err != nil || !reflect.DeepEqual(again.Rows, want.Rows) {
		t.Fatalf("after the compaction: %v\n%v\nwant\n%v", err, again, want.Rows)
	}
}

// remoteOf is the sealed history of home as a remote's cached parts, each
// file named by its path and checksum, their summaries kept in sumDir
// ("" for none): what package remote's snapshot gives the query package.
func remoteOf(t *testing.T, home, sumDir string) []query.RemotePart {
	t.Helper()
	h := history.New(home)
	m, err := h.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var parts []query.RemotePart
	for _, f := range m.Files {
		p := query.RemotePart{Path: filepath.Join(h.Dir, filepath.FromSlash(f.Path)), Exclude: f.Dropped}
		for id, e := range m.Sessions {
			if e.File == f.Path {
				p.Sessions = append(p.Sessions, id)
			}
		}
		if sumDir != "" {
			p.Key, p.Version, p.SummaryDir = "history/"+f.Path, f.CRC32C, sumDir
		}
		parts = append(parts, p)
	}
	return parts
}

func remoteSessionsOf(t *testing.T, home string, parts []query.RemotePart) *query.Result {
	t.Helper()
	db, err := query.OpenRemote(context.Background(), home, nil, parts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(context.Background(), "SELECT * FROM sessions ORDER BY session_id")
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestRemoteSummariesAreTheFold: a remote's cached parts are summarised
// as the home's files are (in the cache's folder, not the home's), and
// the sessions view over them is the fold's, row for row, with a session
// the home has read from the home only.
func TestRemoteSummariesAreTheFold(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(map[bool]string{false: "per-session", true: "compacted"}[compact], func(t *testing.T) {
			bucket := sealedFixture(t, "home", compact)
			for _, local := range []string{"empty", "overlapping"} {
				home := filepath.Join(t.TempDir(), "h")
				if local == "overlapping" {
					// The home holds all of the bucket's sessions but
					// one: those are read from the home only.
					home = sealedFixture(t, "home", false)
					h := history.New(home)
					ids, err := h.Store.IDs()
					if err != nil || len(ids) < 2 {
						t.Fatalf("ids %v, %v", ids, err)
					}
					h2 := history.New(filepath.Join(t.TempDir(), "h"))
					h2.NoSync = true
					if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "fixtures", "home"), h2.Store.Root).CombinedOutput(); err != nil {
						t.Fatalf("%v %s", err, out)
					}
					if err := os.RemoveAll(h2.Store.SessionDir(ids[0])); err != nil {
						t.Fatal(err)
					}
					if _, err := h2.Seal(ids[1:]...); err != nil {
						t.Fatal(err)
					}
					home = h2.Store.Root
				}
				sumDir := filepath.Join(t.TempDir(), "summaries")
				want := remoteSessionsOf(t, home, remoteOf(t, bucket, ""))
				if len(want.Rows) == 0 {
					t.Fatal("no sessions")
				}
				for pass := range 2 {
					got := remoteSessionsOf(t, home, remoteOf(t, bucket, sumDir))
					if !reflect.DeepEqual(got.Rows, want.Rows) {
						t.Errorf("%s, pass %d: sessions from the remote's summaries:\n%v\nfolded:\n%v", local, pass, got.Rows, want.Rows)
					}
					names, _ := filepath.Glob(filepath.Join(sumDir, "*.parquet"))
					if len(names) == 0 {
						t.Fatalf("%s: no summary written in the remote's folder", local)
					}
					if mine := summaries(t, home); local == "empty" && len(mine) != 0 {
						t.Errorf("the remote's summaries went into the home: %v", mine)
					}
				}
			}
		})
	}
}
