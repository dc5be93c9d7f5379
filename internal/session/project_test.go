package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func readJSONL(t testing.TB, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		e, err := Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		evs = append(evs, e)
	}
	return evs
}

const testSystem = "You are a careful coding agent."

// TestProjectGolden covers each projection rule with a hand-checked log and
// the payload it must produce (testdata/project/*.golden.json).
func TestProjectGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/project/*.jsonl")
	if len(files) < 10 {
		t.Fatalf("found %d projection cases, want at least 10", len(files))
	}
	for _, in := range files {
		name := strings.TrimSuffix(filepath.Base(in), ".jsonl")
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(Project(readJSONL(t, in), testSystem), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, ".jsonl") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/session -run TestProjectGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Project(%s) =\n%s\nwant\n%s", name, got, want)
			}
		})
	}
}

// TestProjectRules states the rules directly, so a golden file regenerated
// carelessly cannot hide a broken rule.
func TestProjectRules(t *testing.T) {
	load := func(name string) []Message {
		return Project(readJSONL(t, "testdata/project/"+name+".jsonl"), testSystem)
	}
	tests := []struct {
		name  string
		check func([]Message) error
	}{
		{"simple", func(ms []Message) error {
			return roles(ms, "system user assistant tool assistant")
		}},
		{"dangling_then_user", func(ms []Message) error {
			if err := roles(ms, "system user assistant tool tool user"); err != nil {
				return err
			}
			if ms[4].ToolCallID != "b" || ms[4].Content != CancelledContent {
				return fmt.Errorf("dangling call b closed as %+v", ms[4])
			}
			return nil
		}},
		{"dangling_at_end", func(ms []Message) error {
			if err := roles(ms, "system user assistant tool tool"); err != nil {
				return err
			}
			if ms[3].ToolCallID != "x" || ms[4].ToolCallID != "y" || ms[4].Content != CancelledContent {
				return fmt.Errorf("closures out of call order: %+v %+v", ms[3], ms[4])
			}
			return nil
		}},
		{"denied", func(ms []Message) error {
			if err := roles(ms, "system user assistant tool tool assistant"); err != nil {
				return err
			}
			if ms[3].Content != DeniedContent || !strings.Contains(ms[4].Content, "never delete the root") {
				return fmt.Errorf("denials = %q, %q", ms[3].Content, ms[4].Content)
			}
			return nil
		}},
		{"compaction", func(ms []Message) error {
			if err := roles(ms, "system system user assistant tool assistant"); err != nil {
				return err
			}
			if ms[1].Content != SummaryPrefix+"Read schema.sql; users table exists." {
				return fmt.Errorf("summary = %q", ms[1].Content)
			}
			if ms[2].Content != "Migrate the DB. Constraint: never drop the users table." {
				return fmt.Errorf("first user message not pinned verbatim: %q", ms[2].Content)
			}
			return nil
		}},
		{"compaction_twice", func(ms []Message) error {
			if err := roles(ms, "system system user user"); err != nil {
				return err
			}
			if ms[1].Content != SummaryPrefix+"second summary" {
				return fmt.Errorf("latest summary not used: %q", ms[1].Content)
			}
			return nil
		}},
		{"compaction_orphan", func(ms []Message) error {
			return roles(ms, "system system user assistant")
		}},
		{"interrupted_partial", func(ms []Message) error {
			if err := roles(ms, "system user assistant user"); err != nil {
				return err
			}
			if ms[2].Content != "The code starts by" {
				return fmt.Errorf("partial text = %q", ms[2].Content)
			}
			return nil
		}},
		{"reconciled", func(ms []Message) error {
			if err := roles(ms, "system user assistant tool tool"); err != nil {
				return err
			}
			if ms[3].Content != `{"charge":"ch_1"}` || ms[4].Content != CancelledContent {
				return fmt.Errorf("reconciled results = %q, %q", ms[3].Content, ms[4].Content)
			}
			return nil
		}},
		{"unknown_kind", func(ms []Message) error {
			return roles(ms, "system user assistant")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(load(tt.name)); err != nil {
				t.Error(err)
			}
		})
	}
}

func roles(ms []Message, want string) error {
	var got []string
	for _, m := range ms {
		got = append(got, m.Role)
	}
	if g := strings.Join(got, " "); g != want {
		return fmt.Errorf("roles = %q, want %q", g, want)
	}
	return nil
}

// TestProjectorIncremental checks that the runner's incremental form gives
// the batch result after every event of every fixture.
func TestProjectorIncremental(t *testing.T) {
	files, _ := filepath.Glob("testdata/project/*.jsonl")
	for _, in := range files {
		evs := readJSONL(t, in)
		p := NewProjector(testSystem)
		for i, e := range evs {
			p.Add(e)
			got, want := p.Messages(), Project(evs[:i+1], testSystem)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s after seq %d: incremental =\n%+v\nbatch =\n%+v", in, e.Seq, got, want)
			}
		}
	}
}

// TestProjectStablePrefix: appending events never changes the messages
// already projected before the last turn (provider prompt caches rely on a
// stable prefix), unless a compaction happens.
func TestProjectStablePrefix(t *testing.T) {
	evs := readJSONL(t, "testdata/project/simple.jsonl")
	before := Project(evs[:3], testSystem)
	after := Project(evs, testSystem)
	if !reflect.DeepEqual(after[:len(before)-1], before[:len(before)-1]) {
		t.Errorf("prefix changed:\n%+v\n%+v", before, after)
	}
}

func TestDigestIgnoresSeqAndIsStable(t *testing.T) {
	a := []Message{{Role: RoleUser, Content: "x", Seq: 1}}
	b := []Message{{Role: RoleUser, Content: "x", Seq: 9}}
	if Digest(a, []string{"bash"}) != Digest(b, []string{"bash"}) {
		t.Error("digest depends on seq")
	}
	if Digest(a, nil) == Digest([]Message{{Role: RoleUser, Content: "y"}}, nil) {
		t.Error("digest ignores content")
	}
}

func TestUnknownKindKeptVerbatim(t *testing.T) {
	raw := []byte(`{"seq":3,"ts":"2026-11-29T10:00:00Z","kind":"hologram","payload":{"x":1}}`)
	e, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, raw) {
		t.Errorf("Encode(Decode(%s)) = %s", raw, out)
	}
	if _, err := Decode([]byte(`{"seq":1}`)); err == nil {
		t.Error("Decode accepted an event with no kind")
	}
}

func longLog(n int) []Event {
	ts := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	evs := []Event{{Seq: 1, TS: ts, Kind: KindSessionStarted}, {Seq: 2, TS: ts, Kind: KindUserMessage, Text: "goal"}}
	for seq := int64(3); len(evs) < n; {
		id := fmt.Sprintf("c%d", seq)
		evs = append(evs,
			Event{Seq: seq, TS: ts, Kind: KindAssistantMessage, Text: "step", ToolCalls: []ToolCall{{ID: id, Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}}},
			Event{Seq: seq + 1, TS: ts, Kind: KindToolResult, CallID: id, Tool: "bash", Status: ResultOK, Output: "a b c"})
		seq += 2
		if seq%1000 == 1 {
			evs = append(evs, Event{Seq: seq, TS: ts, Kind: KindCompaction, Through: seq - 1, Summary: "so far"})
			seq++
		}
	}
	return evs
}

// BenchmarkProject projects logs of 10k and 100k events; ns/event must stay
// flat (linear growth). See bench/README.md.
func BenchmarkProject(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		evs := longLog(n)
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			for b.Loop() {
				Project(evs, testSystem)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}

// TestProjectorRestore: capturing the state after any event and adding the
// rest gives the same payload as folding everything, for every fixture.
func TestProjectorRestore(t *testing.T) {
	files, _ := filepath.Glob("testdata/project/*.jsonl")
	for _, in := range files {
		evs := readJSONL(t, in)
		want := Project(evs, testSystem)
		for cut := range evs {
			p := NewProjector(testSystem)
			for _, e := range evs[:cut] {
				p.Add(e)
			}
			b, err := json.Marshal(p.State())
			if err != nil {
				t.Fatal(err)
			}
			var st ProjectorState
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			q := RestoreProjector(st)
			for _, e := range evs[cut:] {
				q.Add(e)
			}
			if got := q.Messages(); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s restored after %d events:\n%+v\nwant\n%+v", in, cut, got, want)
			}
		}
	}
}
