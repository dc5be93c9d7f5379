package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// full returns an event of kind k with every field set.
func full(k session.Kind, i int) session.Event {
	return session.Event{
		TS: time.Date(2026, 11, 29, 10, 0, i, 123456789, time.UTC), Kind: k,
		Name: "n", Provider: "p", Model: "m", System: "sys", Spec: json.RawMessage(`{"a":1}`),
		SpecPath: "a.yaml", SpecHash: "h", AgentctlVersion: "v1", HarnessCommit: "c", Workspace: "/w",
		ParentSessionID: "par", ForkedFrom: 3, Text: "t <&>", ToolCalls: []session.ToolCall{{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}},
		RequestDigest: "d", LatencyMS: 12, InputTokens: 100, OutputTokens: 20, CostUSD: 0.25, FinishReason: "stop",
		CallID: "c1", Tool: "bash", Args: json.RawMessage(`{"command":"ls"}`), IdempotencyKey: "k",
		Output: "out\nput", Artifact: "a.txt", Scope: "session", Through: 2, Summary: "sum", SourceSeqs: []int64{1, 2},
		Status: "ok", Outcome: "recovered", Reason: "r", Evidence: "e", Error: "err", ChildSessionID: "child",
		Attrs: json.RawMessage(`{"x":[1,2]}`), Refusal: "no", CacheReadInputTokens: 70, CacheCreationInputTokens: 5,
		MaxTokens: 512, ResponseID: "msg_1", ErrorType: "overloaded_error", Attempt: 2,
	}
}

// record makes a session with one event of every kind (and an unknown one).
func record(t *testing.T, st recorder.Store, id string) []session.Event {
	t.Helper()
	hdr := full(session.KindSessionStarted, 0)
	hdr.SessionID = id
	evs := []session.Event{hdr}
	for i, k := range session.Kinds[1:] {
		evs = append(evs, full(k, i+1))
	}
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	return readLog(t, st, id)
}

func readLog(t *testing.T, st recorder.Store, id string) []session.Event {
	t.Helper()
	evs, _, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func appendUnknown(t *testing.T, st recorder.Store, id string) {
	t.Helper()
	s, _, err := st.Open(id, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw := fmt.Sprintf(`{"seq":%d,"ts":"2026-11-29T11:00:00Z","kind":"hologram_projected","hologram":{"fidelity":0.97}}`, s.LastSeq()+1)
	ev, err := session.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ev); err != nil {
		t.Fatal(err)
	}
}

func liveRows(t *testing.T, h *history.History) map[string][]history.Row {
	t.Helper()
	m, err := h.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]history.Row{}
	for _, f := range m.Files {
		rows, err := history.ReadRows(filepath.Join(h.Dir, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if m.Sessions[r.SessionID].File == f.Path {
				out[r.SessionID] = append(out[r.SessionID], r)
			}
		}
	}
	return out
}

func TestSealRoundTripEveryKind(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync = true
	want := record(t, st, "a000000000000001")
	appendUnknown(t, st, "a000000000000001")
	want = readLog(t, st, "a000000000000001")
	for round := range 2 { // sealing twice changes nothing
		res, err := h.Seal("a000000000000001")
		if err != nil || res[0].Err != "" {
			t.Fatalf("Seal = %+v, %v", res, err)
		}
		if round == 1 && res[0].Skipped == "" {
			t.Errorf("second Seal = %+v, want skipped", res[0])
		}
		rows := liveRows(t, h)["a000000000000001"]
		if len(rows) != len(want) {
			t.Fatalf("round %d: %d rows, want %d", round, len(rows), len(want))
		}
		for i, r := range rows {
			got, err := r.Event()
			if err != nil {
				t.Fatal(err)
			}
			w := want[i]
			w.TS = w.TS.Truncate(time.Microsecond)
			got.TS = got.TS.In(w.TS.Location())
			if !reflect.DeepEqual(got, w) {
				t.Errorf("row %d (%s):\n got %+v\nwant %+v", i, w.Kind, got, w)
			}
		}
	}
	if n := len(want); n != len(session.Kinds)+1 {
		t.Fatalf("recorded %d events, want every kind and one unknown", n)
	}
}

func TestResealAfterCompactionReplacesRows(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync, h.AutoCompactFiles = true, -1
	for i := range 3 {
		record(t, st, fmt.Sprintf("b00000000000000%d", i))
	}
	if _, err := h.Seal("b000000000000000", "b000000000000001", "b000000000000002"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Compact(history.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	appendUnknown(t, st, "b000000000000001") // resumed after its rows went into a segment
	if _, err := h.Seal("b000000000000001"); err != nil {
		t.Fatal(err)
	}
	check := func() {
		live := liveRows(t, h)
		for i := range 3 {
			id := fmt.Sprintf("b00000000000000%d", i)
			if got, want := len(live[id]), len(readLog(t, st, id)); got != want {
				t.Errorf("%s: %d live rows, want %d", id, got, want)
			}
		}
	}
	check()
	if _, err := h.Compact(history.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	check()
	m, _ := h.Manifest()
	if len(m.Files) != 1 || len(m.Files[0].Dropped) != 0 {
		t.Errorf("after compaction: files %+v, want one segment with nothing dropped", m.Files)
	}
}

// An independent reader (Apache Arrow's Parquet reader) loads the files
// with the same row count and the documented types.
func TestArrowReadsSealedFile(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync = true
	want := record(t, st, "c000000000000001")
	if _, err := h.Seal("c000000000000001"); err != nil {
		t.Fatal(err)
	}
	m, _ := h.Manifest()
	rdr, err := file.OpenParquetFile(m.LiveFiles(h.Dir)[0], false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if got := tbl.NumRows(); got != int64(len(want)) {
		t.Errorf("arrow rows = %d, want %d", got, len(want))
	}
	types := map[string]string{"session_id": "utf8", "seq": "int64", "ts": "timestamp[us, tz=UTC]",
		"input_tokens": "int64", "cost_usd": "float64", "tool_calls": "utf8", "args": "utf8", "attrs": "utf8",
		"spec": "utf8", "source_seqs": "utf8"}
	sc := tbl.Schema()
	for name, typ := range types {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			t.Errorf("arrow schema has no column %s", name)
			continue
		}
		f := sc.Field(idx[0])
		got := f.Type.String()
		if d, ok := f.Type.(*arrow.DictionaryType); ok {
			got = d.ValueType.String()
		}
		if got != typ {
			t.Errorf("arrow type of %s = %s, want %s", name, got, typ)
		}
	}
}

// TestCompactionCrash kills a real process (this test binary, re-executed)
// at each compaction failpoint, then checks that every session's rows are
// live exactly once, and that the next compaction cleans up.
func TestCompactionCrash(t *testing.T) {
	if home := os.Getenv("HISTORY_CRASH_HOME"); home != "" {
		h := history.New(home)
		h.NoSync = true
		h.Compact(history.CompactOptions{SegmentRows: 40})
		os.Exit(0) // not reached when the failpoint fires
	}
	for _, fp := range []string{history.FailSegmentWritten, history.FailManifestSwapped} {
		t.Run(fp, func(t *testing.T) {
			home := t.TempDir()
			st := recorder.Store{Root: home}
			h := history.New(home)
			h.NoSync, h.AutoCompactFiles = true, -1
			var ids []string
			for i := range 6 {
				id := fmt.Sprintf("d00000000000000%d", i)
				record(t, st, id)
				ids = append(ids, id)
			}
			if _, err := h.Seal(ids...); err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				live := liveRows(t, h)
				for _, id := range ids {
					if got, want := len(live[id]), len(readLog(t, st, id)); got != want {
						t.Errorf("%s: %s has %d live rows, want %d", when, id, got, want)
					}
				}
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCompactionCrash$")
			cmd.Env = append(os.Environ(), "HISTORY_CRASH_HOME="+home, history.FailpointEnv+"="+fp)
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ProcessState.Success() || ee.ProcessState.ExitCode() != -1 {
				t.Fatalf("child = %v, want killed by a signal", err)
			}
			check("after the crash")
			res, err := h.Compact(history.CompactOptions{SegmentRows: 40})
			if err != nil {
				t.Fatal(err)
			}
			if res.Removed == 0 {
				t.Errorf("Compact after crash removed no leftovers: %+v", res)
			}
			check("after recovery")
			m, _ := h.Manifest()
			var files []string
			filepath.WalkDir(h.Dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && filepath.Ext(p) == ".parquet" {
					files = append(files, p)
				}
				return nil
			})
			if len(files) != len(m.Files) {
				t.Errorf("%d parquet files on disk, manifest lists %d", len(files), len(m.Files))
			}
		})
	}
}

// Segments are sorted by kind, then session and seq, and carry min/max
// statistics for kind, so a reader can skip row groups by kind.
func TestSegmentsSortedByKindWithStatistics(t *testing.T) {
	home := t.TempDir()
	st := recorder.Store{Root: home}
	h := history.New(home)
	h.NoSync, h.AutoCompactFiles = true, -1
	var ids []string
	for i := range 3 {
		ids = append(ids, fmt.Sprintf("k00000000000000%d", i))
		record(t, st, ids[i])
	}
	if _, err := h.Seal(ids...); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Compact(history.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	m, _ := h.Manifest()
	if len(m.Files) != 1 || !m.Files[0].Segment || m.Files[0].Sessions != 3 {
		t.Fatalf("files %+v, want one segment of 3 sessions", m.Files)
	}
	p := filepath.Join(h.Dir, filepath.FromSlash(m.Files[0].Path))
	rows, err := history.ReadRows(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if a.Kind > b.Kind || a.Kind == b.Kind && (a.SessionID > b.SessionID || a.SessionID == b.SessionID && a.Seq >= b.Seq) {
			t.Fatalf("row %d (%s %s %d) after (%s %s %d): not in kind, session, seq order", i, b.Kind, b.SessionID, b.Seq, a.Kind, a.SessionID, a.Seq)
		}
	}
	r, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	col := r.MetaData().Schema.ColumnIndexByName("kind")
	cc, err := r.MetaData().RowGroup(0).ColumnChunk(col)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := cc.Statistics()
	if err != nil || stats == nil || !stats.HasMinMax() {
		t.Fatalf("kind has no min/max statistics (%v): readers cannot skip row groups", err)
	}
	if min, max := string(stats.EncodeMin()), string(stats.EncodeMax()); min != rows[0].Kind || max != rows[len(rows)-1].Kind {
		t.Errorf("kind statistics [%s, %s], want [%s, %s]", min, max, rows[0].Kind, rows[len(rows)-1].Kind)
	}
}
