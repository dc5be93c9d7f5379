package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/crashtest"
	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
)

// TestFoldAgreesWithViews holds the SQL views of package query to the Go
// fold (session.State, through recorder.Store.Summary): for every session
// of the fixture homes, of homes made by the eval suites and by commands a
// user runs (forks to another model, approvals, imports of every corpus transcript, a crash and a
// needs_human stop, a corrupt log), and of every point of crashtest's
// matrix, the sessions view and the fold give the same status, counts,
// tokens, cost, model, times, turns and end reason, and the tool_calls view has exactly the
// fold's dispatched calls with the same outcome. Each home is compared as
// read from its logs and again once sealed into the history.
func TestFoldAgreesWithViews(t *testing.T) {
	t.Parallel() // long, and self-contained: it overlaps the scripts' tail
	if testing.Short() {
		t.Skip("runs the eval suites and a crash matrix")
	}
	fixtures, _ := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	homes := map[string]string{}
	for _, h := range []string{"home", "diagnose/home", "replay/home"} {
		dst := filepath.Join(t.TempDir(), "h")
		if out, err := exec.Command("cp", "-r", filepath.Join(fixtures, h), dst).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v %s", h, err, out)
		}
		homes["fixtures/"+h] = dst
	}
	homes["eval suites"] = evalHome(t, fixtures)
	homes["commands"] = commandsHome(t, fixtures)
	for name, home := range homes {
		t.Run(name, func(t *testing.T) {
			n := compareHome(t, home)
			if n == 0 {
				t.Fatal("no session compared")
			}
			if _, err := history.New(home).Seal(); err != nil {
				t.Fatal(err)
			}
			if m := compareHome(t, home); m != n {
				t.Errorf("%d sessions after sealing, %d before", m, n)
			}
			t.Logf("%d sessions agree", n)
		})
	}
	t.Run("crashtest matrix", func(t *testing.T) {
		for _, spec := range []string{"charge-order", "notify-customer"} {
			var mu sync.Mutex
			points := 0
			o := crashtest.Options{Spec: filepath.Join(fixtures, "agents", spec+".yaml"), InProcess: true, Build: buildRunConfig,
				WorkDir: t.TempDir(), Parallel: 2, CrashResumes: 1, Seed: 7,
				Inspect: func(p crashtest.Point, home string) {
					mu.Lock()
					defer mu.Unlock()
					t.Run(spec+"/"+p.String(), func(t *testing.T) { compareHome(t, home) })
					points++
				}}
			rep, err := crashtest.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if points != len(rep.Outcomes) || points < 10 {
				t.Fatalf("%s: compared %d points of %d", spec, points, len(rep.Outcomes))
			}
		}
	})
}

// agentctl runs one command in this process, as a user would.
func agentctl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return out.String() + errb.String(), code
}

func evalHome(t *testing.T, fixtures string) string {
	home := t.TempDir()
	for _, suite := range []string{"smoke.yaml", "failing.yaml"} {
		if out, code := agentctl(t, "--home", home, "eval", filepath.Join(fixtures, "suites", suite), "-q"); code != ExitOK && code != ExitChecksFailed {
			t.Fatalf("eval %s: exit %d\n%s", suite, code, out)
		}
	}
	return home
}

// commandsHome records sessions the way a user makes them: a run, forks
// of it (to another scripted model, whose script starts over and reuses
// the parent's call ids), approvals, imports of every corpus transcript and a corrupt log. Crashes
// (needs_human, reconciled by lookup) come from the crash matrix.
func commandsHome(t *testing.T, fixtures string) string {
	home := t.TempDir()
	agent := func(name string) string { return filepath.Join(fixtures, "agents", name+".yaml") }
	must := func(want int, args ...string) {
		t.Helper()
		if out, code := agentctl(t, append([]string{"--home", home}, args...)...); code != want {
			t.Fatalf("agentctl %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
		}
	}
	must(ExitOK, "run", agent("fix-typo"), "-q", "--session-id", "f01d000000000001")
	// A parent whose subagent charges a card: children with parent_seq.
	must(ExitOK, "run", agent("delegate-charge"), "-q", "--session-id", "f01d00000000000a")
	alt := filepath.Join(home, "alt.yaml")
	os.WriteFile(alt, []byte("turns:\n  - text: \"Reading it again.\"\n    tool_calls:\n      - {name: read_file, args: {path: README.md}}\n  - text: \"Done.\"\n"), 0o644)
	must(ExitChecksFailed, "replay", "fork", "f01d000000000001", "--from", "6", "--model", "scripted/alt", "--script", alt, "-q", "--session-id", "f01d000000000002")
	must(ExitOK, "replay", "fork", "f01d000000000001", "--from", "10", "-q", "--session-id", "f01d000000000003")
	must(ExitAwaitingApproval, "run", agent("run-migration"), "-q", "--session-id", "f01d000000000004")
	must(ExitOK, "approve", "f01d000000000004")
	agentctl(t, "--home", home, "resume", "f01d000000000004", "-q")
	// Every corpus transcript, of each format (sub-agents as children).
	must(ExitOK, "import", "auto", filepath.Join(fixtures, "..", "testdata", "corpus", "transcripts"), "-q")
	// A fork of an import (the fasthooks Claude Code session) to a
	// scripted model, whose tools the imported session does not have.
	must(ExitOK, "replay", "fork", "390ba41c9ef80c05", "--from", "6", "--model", "scripted/alt", "--script", alt, "-q", "--session-id", "f01d000000000009")
	// Cursor transcripts, which record no usage or times (not_recorded),
	// with a sub-agent; and a fork of one, which records its own.
	must(ExitOK, "import", "auto", filepath.Join(fixtures, "..", "internal", "transcript", "testdata", "cursor"), "-q")
	must(ExitOK, "replay", "fork", "6a5d71ea900262db", "--from", "7", "--model", "scripted/alt", "--script", alt, "-q", "--session-id", "f01d00000000000b")
	// A log damaged in the middle, never sealed (a sealed session is read
	// from the history, which keeps the copy made before the damage).
	b, err := os.ReadFile(filepath.Join(fixtures, "home", "sessions", "5e55100000000001", recorder.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	b[700] ^= 0xff
	os.MkdirAll(filepath.Join(home, "sessions", "f01d000000000008"), 0o755)
	os.WriteFile(filepath.Join(home, "sessions", "f01d000000000008", recorder.LogFile), b, 0o644)
	return home
}

// compareHome compares the views with the fold for every session of home
// and returns how many sessions it compared.
func compareHome(t *testing.T, home string) int {
	t.Helper()
	ctx := context.Background()
	db, err := query.Open(ctx, home, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Query(ctx, `SELECT session_id, name, provider, model, status, started, ended, events,
		input_tokens, output_tokens, cost_usd, tool_calls, errors, coalesce(source_status, ''),
		coalesce(parent_session_id, ''), coalesce(parent_seq, 0), coalesce(forked_from, 0), turns, coalesce(reason, ''),
		to_json(not_recorded)::VARCHAR FROM sessions ORDER BY session_id`)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := db.Query(ctx, `SELECT session_id, call_id, request_seq, intent_seq, result_seq, status, tool
		FROM tool_calls ORDER BY session_id, coalesce(intent_seq, result_seq)`)
	if err != nil {
		t.Fatal(err)
	}
	viewCalls := map[string][]string{}
	for _, r := range calls.Rows {
		id := str(r[0])
		viewCalls[id] = append(viewCalls[id], fmt.Sprintf("%s req=%d intent=%d result=%d %s %s", str(r[1]), i64(r[2]), i64(r[3]), i64(r[4]), str(r[5]), str(r[6])))
	}
	st := recorder.Store{Root: home}
	ids, err := st.IDs()
	if err != nil {
		t.Fatal(err)
	}
	inView := map[string][]any{}
	for _, r := range res.Rows {
		inView[str(r[0])] = r
	}
	for _, id := range ids {
		fold, _, _ := st.Fold(id)
		sum := st.Summary(id)
		r, ok := inView[id]
		if !ok {
			if sum.Events != 0 {
				t.Errorf("%s: %d events in the fold, no row in the sessions view", id, sum.Events)
			}
			continue
		}
		got := fmt.Sprintf("name=%s provider=%s model=%s status=%s (%s) started=%s ended=%s events=%d in=%d out=%d tool_calls=%d errors=%d",
			str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[13]), tm(r[5]), tm(r[6]), i64(r[7]), i64(r[8]), i64(r[9]), i64(r[11]), i64(r[12]))
		want := fmt.Sprintf("name=%s provider=%s model=%s status=%s (%s) started=%s ended=%s events=%d in=%d out=%d tool_calls=%d errors=%d",
			sum.Name, sum.Provider, sum.Model, sum.Status, fold.SourceStatus, tm(sum.Started), tm(sum.Ended), sum.Events, sum.InputTokens, sum.OutputTokens, sum.ToolCalls, sum.Errors)
		if got != want {
			t.Errorf("%s:\nview %s\nfold %s", id, got, want)
		}
		if got, want := fmt.Sprintf("parent=%s parent_seq=%d forked_from=%d", str(r[14]), i64(r[15]), i64(r[16])),
			fmt.Sprintf("parent=%s parent_seq=%d forked_from=%d", fold.ParentSessionID, fold.ParentSeq, fold.ForkedFrom); got != want {
			t.Errorf("%s: view %s, fold %s", id, got, want)
		}
		if got, want := fmt.Sprintf("turns=%d reason=%q", i64(r[17]), str(r[18])), fmt.Sprintf("turns=%d reason=%q", fold.Turns, fold.Reason()); got != want {
			t.Errorf("%s: view %s, fold %s", id, got, want)
		}
		if want, _ := json.Marshal(append([]string{}, fold.NotRecorded...)); str(r[19]) != string(want) {
			t.Errorf("%s: not_recorded view %s, fold %s", id, str(r[19]), want)
		}
		if c := f64(r[10]); math.Abs(c-sum.CostUSD) > 1e-9 {
			t.Errorf("%s: cost_usd view %v, fold %v", id, c, sum.CostUSD)
		}
		var foldCalls []string
		for _, c := range fold.Dispatched() {
			foldCalls = append(foldCalls, fmt.Sprintf("%s req=%d intent=%d result=%d %s %s", c.ID, c.RequestSeq, c.IntentSeq, c.ResultSeq, c.Outcome(), c.Tool))
		}
		vc := viewCalls[id]
		sort.Strings(vc)
		sort.Strings(foldCalls)
		if strings.Join(vc, "\n") != strings.Join(foldCalls, "\n") {
			t.Errorf("%s: tool_calls view:\n%s\nfold:\n%s", id, strings.Join(vc, "\n"), strings.Join(foldCalls, "\n"))
		}
		if int64(len(vc)) != sum.ToolCalls {
			t.Errorf("%s: %d rows in tool_calls, sessions.tool_calls %d", id, len(vc), sum.ToolCalls)
		}
		compareDiagnose(t, db, st, id)
	}
	return len(res.Rows)
}

// compareDiagnose is diagnose's differential test (see
// internal/diagnose TestStreamedIsSQL) over this test's homes: the report
// diagnose.Stream makes from the log is the report diagnose.Run makes
// with SQL over the views, byte for byte as JSON.
func compareDiagnose(t *testing.T, db *query.DB, st recorder.Store, id string) {
	t.Helper()
	got, _, err := diagnose.Stream(st, id)
	if err != nil && !errors.Is(err, recorder.ErrCorrupt) {
		t.Errorf("%s: diagnose.Stream: %v", id, err)
		return
	}
	a := replaycheck.NewAnchorer(id, nil)
	st.Stream(id, a.Add)
	want, err := diagnose.Run(context.Background(), db, id, a.Report())
	if err != nil {
		t.Errorf("%s: diagnose.Run: %v", id, err)
		return
	}
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if string(g) != string(w) {
		t.Errorf("%s: diagnose from the log:\n%s\nfrom the views:\n%s", id, g, w)
	}
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func i64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case uint64:
		return int64(x)
	case float64:
		return int64(x)
	case *big.Int:
		return x.Int64()
	}
	return 0
}

func f64(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case sql.NullFloat64:
		return x.Float64
	}
	return 0
}

// tm prints a time to the microsecond (Parquet's precision), in UTC.
func tm(v any) string {
	t, _ := v.(time.Time)
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}
