package diagnose_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden diagnoses the recorded sessions of fixtures/diagnose (see its
// README for how they were made) and compares the text and JSON reports
// with testdata/<id>.golden. Regenerate with: go test ./internal/diagnose -update
func TestGolden(t *testing.T) {
	home := filepath.Join("..", "..", "fixtures", "diagnose", "home")
	ctx := context.Background()
	db, err := query.Open(ctx, home, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := recorder.Store{Root: home}
	ids, err := st.IDs()
	if err != nil || len(ids) == 0 {
		t.Fatalf("fixture sessions: %v %v", ids, err)
	}
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			evs, _, err := st.Load(id)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := diagnose.Run(ctx, db, id, replaycheck.Anchors(id, evs, nil))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			rep.WriteText(&got)
			got.WriteString("\n")
			b, _ := json.MarshalIndent(rep, "", "  ")
			got.Write(b)
			got.WriteString("\n")
			golden := filepath.Join("testdata", id+".golden")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/diagnose -update)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("diagnose %s =\n%s\nwant\n%s", id, got.Bytes(), want)
			}
		})
	}
}

// TestSeqs pins the seqs the key findings rest on: the loop's first failure
// and repeats, the crash's pending intent, the budget stop.
func TestSeqs(t *testing.T) {
	home := filepath.Join("..", "..", "fixtures", "diagnose", "home")
	ctx := context.Background()
	db, err := query.Open(ctx, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := recorder.Store{Root: home}
	for _, tc := range []struct {
		id, kind string
		want     []int64
	}{
		{"d1a9000000000001", "loop", []int64{6, 7, 11, 15}}, // failed make at 6, asked again at 7, 11, 15
		{"d1a9000000000001", "budget", []int64{1, 17, 18}},  // budget_exceeded at 17
		{"d1a9000000000001", "exit", []int64{17, 18}},       // finished budget_exceeded
		{"d1a9000000000003", "pending", []int64{9}},         // the charge's intent, crashed before its result
		{"d1a9000000000003", "exit", []int64{9}},            // the log stops there
		{"d1a9000000000004", "pending", []int64{6}},         // reconciled needs_human
		{"d1a9000000000005", "approvals", []int64{9, 11, 16, 18, 21}},
	} {
		evs, _, err := st.Load(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := diagnose.Run(ctx, db, tc.id, replaycheck.Anchors(tc.id, evs, nil))
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		found := false
		for _, f := range rep.Findings {
			if f.Kind == tc.kind {
				got, found = f.Seqs, true
			}
		}
		if !found || !equal(got, tc.want) {
			t.Errorf("diagnose %s: %s seqs = %v (found %v), want %v", tc.id, tc.kind, got, found, tc.want)
		}
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
