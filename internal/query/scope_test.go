package query_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
)

// sealedApart records n finished sessions, each sealed into its own file.
func sealedApart(t *testing.T, home string, n int) []string {
	t.Helper()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync = true
	var ids []string
	for i := range n {
		id := fmt.Sprintf("5c0000000000000%d", i)
		record(t, st, id, true)
		if _, err := h.Seal(id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func compact(t *testing.T, home string) {
	t.Helper()
	h := history.New(home)
	h.NoSync = true
	if _, err := h.Compact(history.CompactOptions{SmallOnly: true}); err != nil {
		t.Fatal(err)
	}
}

// A scope (an eval's sql: assertion reads only its run's session) holds
// through the reload a compaction causes, whenever the compaction comes:
// after the views were made (the query finds their files gone and reloads)
// or between reading the manifest and making the views (the reload's own
// views find their files gone). No file a compaction removed is called
// corrupt.
func TestScopeHoldsThroughCompaction(t *testing.T) {
	for _, when := range []string{"before the query", "while the views are made"} {
		t.Run(when, func(t *testing.T) {
			home := t.TempDir()
			ids := sealedApart(t, home, 4)
			var warn bytes.Buffer
			db, err := query.Open(context.Background(), home, &warn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			if err := db.Scope(ctx, ids[1]); err != nil {
				t.Fatal(err)
			}
			if err := db.Confine(ctx); err != nil {
				t.Fatal(err)
			}
			switch when {
			case "before the query":
				compact(t, home)
			case "while the views are made":
				// The query's reload reads the manifest, then a second
				// compaction swaps it before the views are made.
				compact(t, home)
				for i := range 2 {
					id := fmt.Sprintf("5d0000000000000%d", i)
					record(t, recorder.Store{Root: home}, id, true)
					if _, err := history.New(home).Seal(id); err != nil {
						t.Fatal(err)
					}
				}
				var once sync.Once
				query.SetBeforeViews(func() { once.Do(func() { compact(t, home) }) })
				defer query.SetBeforeViews(nil)
			}
			for _, q := range []string{
				"SELECT count(DISTINCT session_id) FROM events",
				"SELECT count(*) FROM sessions",
				"SELECT count(DISTINCT session_id) FROM tool_calls",
				"SELECT count(DISTINCT session_id) FROM model_calls",
			} {
				if got := scalar(t, db, q); got != "1" {
					t.Errorf("%s = %s after a compaction, want 1 (the scope's session only)", q, got)
				}
			}
			if strings.Contains(warn.String(), "corrupt") {
				t.Errorf("warnings after a compaction: %q, want none calling a removed file corrupt", warn.String())
			}
		})
	}
}
