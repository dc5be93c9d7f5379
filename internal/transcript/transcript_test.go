package transcript_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/transcript"
	"github.com/agentctl/agentctl/internal/transcript/transcripttest"
)

var update = flag.Bool("update", false, "rewrite the golden event listings")

// corpus is the repository's copy of the third-party transcripts (byte for
// byte; TestCorpusIntact checks them against SOURCES.md).
var corpus = filepath.Join("..", "..", "testdata", "corpus")

func tr(rel string) string { return filepath.Join(corpus, "transcripts", filepath.FromSlash(rel)) }

// TestCorpusIntact checks every transcript copy against the git blob id
// SOURCES.md lists for it, so an edited third-party file is noticed.
func TestCorpusIntact(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(corpus, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `(transcripts/[^`]+)` \\|.*?\\| `([0-9a-f]{12})` \\|").FindAllStringSubmatch(string(src), -1)
	if len(rows) < 26 {
		t.Fatalf("SOURCES.md lists %d transcripts, want 26", len(rows))
	}
	for _, r := range rows {
		b, err := os.ReadFile(filepath.Join(corpus, filepath.FromSlash(r[1])))
		if err != nil {
			t.Fatal(err)
		}
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(b))
		h.Write(b)
		if got := fmt.Sprintf("%x", h.Sum(nil)); !strings.HasPrefix(got, r[2]) {
			t.Errorf("%s: git blob %s, SOURCES.md says %s", r[1], got[:12], r[2])
		}
	}
}

// TestEveryCorpusFileImports imports each corpus file on its own with
// --format auto: the format is told right (its folder names it), every
// session has a header and a conversation, verify finds its structure
// sound, and importing the file again gives the same ids.
func TestEveryCorpusFileImports(t *testing.T) {
	dirFormat := map[string]string{"claude-code": transcript.FormatClaudeCode, "codex": transcript.FormatCodex,
		"swe-agent": transcript.FormatSWEAgent, "openhands": transcript.FormatOpenHands, "inspect-ai": transcript.FormatInspect, "atif": transcript.FormatATIF}
	n := 0
	err := filepath.Walk(filepath.Join(corpus, "transcripts"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(filepath.Join(corpus, "transcripts"), p)
		want := dirFormat[strings.Split(filepath.ToSlash(rel), "/")[0]]
		if strings.HasSuffix(p, ".jsonl") && strings.Contains(rel, "atif/") {
			want = transcript.FormatClaudeCode // the native session an ATIF file was made from
		}
		t.Run(rel, func(t *testing.T) {
			if got, err := transcript.Detect(p); err != nil || got != want {
				t.Fatalf("Detect = %q, %v; want %q", got, err, want)
			}
			ss, err := transcript.Import(transcript.FormatAuto, p)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := transcript.Import(want, p)
			all, all2 := transcript.All(ss), transcript.All(again)
			if len(all) != len(all2) {
				t.Fatalf("%d sessions, then %d", len(all), len(all2))
			}
			for i, s := range all {
				if s.ID() != all2[i].ID() {
					t.Errorf("session %d: id %s, then %s", i, s.ID(), all2[i].ID())
				}
				h := s.Events[0]
				if h.Kind != session.KindSessionStarted || session.ImportedFrom(h) != want || s.Report.SHA256 == "" {
					t.Fatalf("header = %+v", h)
				}
				if s.Report.Counts[string(session.KindAssistantMessage)] == 0 {
					t.Errorf("%s: no assistant message", s.ID())
				}
				// The only structural problems are those the import
				// reported: results whose call the file lacks.
				orphans := 0
				for _, n := range s.Report.Notes {
					if n.Code == transcript.CodeOrphanResult {
						orphans++
					}
				}
				rep := replaycheck.Verify(s.ID(), s.Events, replaycheck.VerifyOptions{})
				problems := 0
				for _, p := range rep.Problems {
					if p.Code != "orphan_tool_result" {
						problems++
					}
				}
				if (rep.Status != replaycheck.StatusStructureOnly && orphans == 0) || problems > 0 || len(rep.Problems) != orphans {
					t.Errorf("%s: %d orphan results reported; verify = %s", s.ID(), orphans, rep.Text())
				}
				// Every record of a real file is imported, or is not part of
				// the conversation (skipped): `agentctl import` exits 0.
				if n := transcript.Lost(s.Report); n > 0 {
					t.Errorf("%s: %d records not imported: %+v", s.ID(), n, s.Report.Notes)
				}
				if st := session.Fold(s.Events); st.Status() != session.StatusImported {
					t.Errorf("%s: status %s, want imported", s.ID(), st.Status())
				}
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 26 {
		t.Errorf("walked %d corpus files, want 26", n)
	}
}

// counts are what `agentctl query` says of a session.
type counts struct {
	User, Responses, Calls, Errors, In, Out int64
}

// TestCountsAgreeWithSource: for one real file of each format, the
// figures the query views give equal those a jq over the source gives;
// each number below was written from the jq shown beside it, never from
// our own output.
func TestCountsAgreeWithSource(t *testing.T) {
	for _, tt := range []struct {
		file string
		want counts
	}{
		// jq -s '{user: [.[]|select(.type=="user" and .isMeta!=true and .isCompactSummary!=true and ((.message.content|type)=="string"
		//   or any(.message.content[]; .type=="text")))]|length, responses: ([.[]|select(.type=="assistant")|.message.id]|unique|length),
		//   calls: [.[]|select(.type=="assistant")|.message.content[]|select(.type=="tool_use")]|length,
		//   errors: [.[]|select(.type=="user")|.message.content|arrays|.[]|select(.type=="tool_result" and .is_error==true)]|length,
		//   in: ([.[]|select(.type=="assistant")]|group_by(.message.id)|map(last.message.usage|.input_tokens+.cache_creation_input_tokens+.cache_read_input_tokens)|add),
		//   out: ([.[]|select(.type=="assistant")]|group_by(.message.id)|map(last.message.usage.output_tokens)|add)}'
		{"claude-code/oneryalcin__fasthooks/sample_main_transcript.jsonl", counts{7, 12, 10, 2, 231864, 1480}},
		// jq -s '{user: [.[]|select(.type=="event_msg" and .payload.type=="user_message")]|length,
		//   responses: runs of model output items (reasoning, function_call, assistant message) between inputs
		//   (function_call_output, user_message, non-assistant message), by reduce,
		//   calls: [.[]|select(.payload.type=="function_call")]|length,
		//   errors: [.[]|select(.payload.type=="function_call_output")|.payload.output|select(test("(?m)^Process exited with code [1-9]"))]|length}'
		// (the rollout has no token_count lines: no usage)
		{"codex/codemie-ai__codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl", counts{3, 20, 38, 1, 0, 0}},
		// jq '{responses: (.trajectory|length), calls: (.trajectory|length), in: .info.model_stats.tokens_sent, out: .info.model_stats.tokens_received}'
		{"swe-agent/SWE-agent__SWE-agent/6e44b9__sweagenttestrepo-1c2844.traj", counts{1, 5, 5, 0, 7141, 243}},
		// jq '{user: [.[]|select(.source=="user" and .action=="message")]|length,
		//   responses: ([.[]|select(.action!=null and .tool_call_metadata!=null)|.tool_call_metadata.model_response.id]|unique|length)
		//     + ([.[]|select(.source=="agent" and .action=="message" and .tool_call_metadata==null)]|length),
		//   calls: [.[]|select(.action!=null and .tool_call_metadata!=null)]|length,
		//   errors: [.[]|select(.observation!=null and .success==false)]|length,
		//   in/out: ([…|.tool_call_metadata.model_response]|unique_by(.id)|map(.usage.prompt_tokens / .completion_tokens)|add)}'
		{"openhands/All-Hands-AI__OpenHands/basic_gui_mode.json", counts{1, 5, 4, 1, 17297, 2024}},
		// jq '.samples[0] | {user: [.messages[]|select(.role=="user")]|length, responses: [.events[]|select(.event=="model")]|length,
		//   calls: [.events[]|select(.event=="tool")]|length, errors: [.messages[]|select(.role=="tool" and .error!=null)]|length,
		//   in: ([.events[]|select(.event=="model")|.output.usage.input_tokens]|add), out: (… .output_tokens …)}'
		{"inspect-ai/UKGovernmentBEIS__inspect_ai/2025-05-12T20-27-36-04-00_browser.json", counts{1, 5, 4, 0, 15235, 281}},
		// jq '{user: [.steps[]|select(.source=="user")]|length, responses: [.steps[]|select(.source=="agent")]|length,
		//   calls: ([.steps[].tool_calls//[]|length]|add), in: ([.steps[].metrics.prompt_tokens//0]|add), out: (… completion_tokens …)}'
		{"atif/harbor-framework__harbor/atif2otel-fixtures/trajectory_pass.json", counts{1, 11, 12, 0, 485630, 3304}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			home := t.TempDir()
			ss, err := transcript.Import(transcript.FormatAuto, tr(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			id := ss[0].ID()
			for _, s := range transcript.All(ss) {
				record(t, home, s.Events)
			}
			if got := queryCounts(t, home, id); got != tt.want {
				t.Errorf("query gives %+v, the source %+v", got, tt.want)
			}
		})
	}
}

func record(t *testing.T, home string, evs []session.Event) {
	t.Helper()
	if _, err := (recorder.Store{Root: home}).WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
}

func queryCounts(t *testing.T, home, id string) counts {
	t.Helper()
	db, err := query.Open(context.Background(), home, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Query(context.Background(), fmt.Sprintf(`SELECT
  (SELECT count(*) FROM events WHERE session_id = '%[1]s' AND kind = 'user_message'),
  (SELECT count(*) FROM events WHERE session_id = '%[1]s' AND kind = 'model_call'),
  s.tool_calls,
  (SELECT count(*) FROM tool_calls WHERE session_id = '%[1]s' AND status = 'error'),
  s.input_tokens, s.output_tokens
FROM sessions s WHERE session_id = '%[1]s'`, id))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("%d rows for %s", len(res.Rows), id)
	}
	n := func(v any) int64 {
		switch x := v.(type) {
		case int64:
			return x
		case int32:
			return int64(x)
		case *big.Int:
			return x.Int64()
		case float64:
			return int64(x)
		}
		return -1
	}
	r := res.Rows[0]
	return counts{n(r[0]), n(r[1]), n(r[2]), n(r[3]), n(r[4]), n(r[5])}
}

// TestGolden lists the events of one file of each format (and the
// sub-agents they bring in) against testdata/golden; -update rewrites the
// listings after a change was checked by hand.
func TestGolden(t *testing.T) {
	for _, tt := range []struct{ name, file string }{
		{"claude-code", "claude-code/codemie-ai__codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"},
		{"claude-code-2.1", "claude-code/codemie-ai__codemie-code/session-9eda1058.jsonl"},
		{"codex", "codex/jazzyalex__agent-sessions/small.jsonl"},
		{"swe-agent", "swe-agent/SWE-agent__SWE-agent/6e44b9__sweagenttestrepo-1c2844.traj"},
		{"openhands", "openhands/All-Hands-AI__OpenHands/basic.json"},
		{"inspect", "inspect-ai/UKGovernmentBEIS__inspect_ai/log_read_sample.eval"},
		{"atif", "atif/harbor-framework__harbor/terminus-2-context-summarization/trajectory.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := transcript.Import(transcript.FormatAuto, tr(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, s := range transcript.All(ss) {
				listing(&b, s)
			}
			golden := filepath.Join("testdata", "golden", tt.name+".golden")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("listing differs from %s:\n%s", golden, diffLines(string(want), b.String()))
			}
		})
	}
}

// listing writes one line per event with the fields that say what it is,
// then the report's notes; times and source paths are left out (the
// corpus may sit anywhere).
func listing(w io.Writer, s *transcript.Session) {
	fmt.Fprintf(w, "session %s", s.ID())
	if s.Report.Part != "" {
		fmt.Fprintf(w, " (%s)", s.Report.Part)
	}
	if p := s.Events[0].ParentSessionID; p != "" {
		fmt.Fprintf(w, " child of %s", p)
	}
	fmt.Fprintln(w)
	for _, e := range s.Events {
		var f []string
		add := func(k, v string) {
			if v != "" {
				f = append(f, k+"="+v)
			}
		}
		num := func(k string, v int64) {
			if v != 0 {
				f = append(f, fmt.Sprintf("%s=%d", k, v))
			}
		}
		add("provider", e.Provider)
		add("model", e.Model)
		add("name", e.Name)
		add("text", excerpt(e.Text))
		for _, c := range e.ToolCalls {
			f = append(f, fmt.Sprintf("call=%s:%s%s", c.ID, c.Name, excerpt(string(c.Args))))
		}
		add("call_id", e.CallID)
		add("tool", e.Tool)
		add("status", e.Status)
		add("error", excerpt(e.Error))
		add("output", excerpt(e.Output))
		num("in", e.InputTokens)
		num("out", e.OutputTokens)
		num("cache_read", e.CacheReadInputTokens)
		num("cache_write", e.CacheCreationInputTokens)
		if e.CostUSD != 0 {
			f = append(f, fmt.Sprintf("cost=%.6f", e.CostUSD))
		}
		num("latency_ms", e.LatencyMS)
		add("response_id", e.ResponseID)
		add("finish", e.FinishReason)
		num("through", e.Through)
		add("summary", excerpt(e.Summary))
		add("child", e.ChildSessionID)
		add("outcome", e.Outcome)
		if len(e.Attrs) > 0 {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(e.Attrs, &m)
			var keys []string
			for k := range m {
				if k != "source_file" {
					keys = append(keys, k)
				}
			}
			sortStrings(keys)
			f = append(f, "attrs="+strings.Join(keys, ","))
		}
		fmt.Fprintf(w, "  %d %s %s\n", e.Seq, e.Kind, strings.Join(f, " "))
	}
	for _, n := range s.Report.Notes {
		d := n.Detail
		if i := strings.Index(d, "/testdata/corpus/"); i >= 0 {
			d = "…" + d[i:]
		}
		fmt.Fprintf(w, "  note line %d %s: %s\n", n.Line, n.Code, d)
	}
	fmt.Fprintf(w, "  not recorded: %s\n", strings.Join(s.Report.NotRecorded, "; "))
}

func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 50 {
		return fmt.Sprintf("%q", string(r[:50])+"…")
	}
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%q", s)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, x, y))
			if len(out) > 8 {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// derive writes a variant of a real corpus file, made by edit, under a
// name that says it is derived and how.
func derive(t *testing.T, rel, name string, edit func(lines []string) []string) string {
	t.Helper()
	b, err := os.ReadFile(tr(rel))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.Join(edit(lines), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// importWritten writes b, a variant of a real file or an export, as name
// in a temporary folder and imports it as format.
func importWritten(t *testing.T, format, name string, b []byte) []*transcript.Session {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err := transcript.Import(format, p)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

const fasthooks = "claude-code/oneryalcin__fasthooks/sample_main_transcript.jsonl"

// TestMalformedVariants: variants derived from a real transcript give the
// documented report, and import what is sound.
func TestMalformedVariants(t *testing.T) {
	orig, err := transcript.Import(transcript.FormatClaudeCode, tr(fasthooks))
	if err != nil {
		t.Fatal(err)
	}
	origFold := session.Fold(orig[0].Events)
	line := func(lines []string, pred func(string) bool) int {
		for i, l := range lines {
			if pred(l) {
				return i
			}
		}
		t.Fatal("no such line")
		return -1
	}
	for _, tt := range []struct {
		name  string
		edit  func([]string) []string
		code  string
		line  int // the note's line (1-based); 0: any
		check func(t *testing.T, s *transcript.Session)
	}{
		{"fasthooks-derived-torn-last-line.jsonl", func(l []string) []string {
			last := l[len(l)-1]
			l[len(l)-1] = last[:len(last)/2]
			return l
		}, transcript.CodeTornLine, 63, func(t *testing.T, s *transcript.Session) {
			// The torn line is the last prompt: everything before it is in.
			if got := session.Fold(s.Events).Turns; got != origFold.Turns {
				t.Errorf("turns %d, want %d", got, origFold.Turns)
			}
		}},
		{"fasthooks-derived-unknown-record-type.jsonl", func(l []string) []string {
			i := line(l, func(s string) bool { return strings.HasPrefix(s, `{"type":"file-history-snapshot"`) })
			l[i] = strings.Replace(l[i], `"type":"file-history-snapshot"`, `"type":"derived-unknown-type"`, 1)
			return l
		}, transcript.CodeUnknownRecord, 1, nil},
		{"fasthooks-derived-result-without-its-call.jsonl", func(l []string) []string {
			// Drop the assistant line that asks for toolu_01BYfGNk…; its
			// result stays.
			i := line(l, func(s string) bool {
				return strings.Contains(s, `"type":"tool_use","id":"toolu_01BYfGNktE4d25hZnxHwFh2s"`)
			})
			return append(l[:i:i], l[i+1:]...)
		}, transcript.CodeOrphanResult, 4, func(t *testing.T, s *transcript.Session) {
			if c := session.Fold(s.Events).Call("toolu_01BYfGNktE4d25hZnxHwFh2s"); c == nil || c.RequestSeq != 0 || c.ResultSeq == 0 {
				t.Errorf("the orphan result is not kept as a call without its request: %+v", c)
			}
			// verify calls the structure broken, at that result.
			rep := replaycheck.Verify(s.ID(), s.Events, replaycheck.VerifyOptions{})
			if rep.Status != replaycheck.StatusBroken || len(rep.Problems) != 1 || rep.Problems[0].Code != "orphan_tool_result" {
				t.Errorf("verify = %s", rep.Text())
			}
		}},
		{"fasthooks-derived-rewound-parentuuid.jsonl", func(l []string) []string {
			// The third prompt ("can you read it back…") is re-parented onto
			// the first answer: the second exchange becomes a branch the
			// conversation left.
			i := line(l, func(s string) bool { return strings.Contains(s, `"uuid":"4ff8f9dd`) })
			l[i] = regexp.MustCompile(`"parentUuid":"[^"]+"`).ReplaceAllString(l[i], `"parentUuid":"5d50bbbc-`+uuidTail(l, "5d50bbbc")+`"`)
			return l
		}, transcript.CodeFork, 10, func(t *testing.T, s *transcript.Session) {
			for _, e := range s.Events {
				if strings.Contains(e.Text, "hello_world.py file and add") {
					t.Errorf("an event of the abandoned branch was imported: seq %d %s", e.Seq, e.Kind)
				}
			}
			if got := session.Fold(s.Events).Turns; got != origFold.Turns-2 {
				t.Errorf("turns %d, want %d (the branch's 2 responses left out)", got, origFold.Turns-2)
			}
		}},
		{"fasthooks-derived-streamed-results-between-lines.jsonl", func(l []string) []string {
			// 2.1.x streams each parallel call's result right after the
			// call's line: move the three results of msg …pPxEy4 between
			// its three tool_use lines.
			var calls, results []int
			for i, s := range l {
				switch {
				case strings.Contains(s, `"uuid":"888a6c2d`), strings.Contains(s, `"uuid":"413ec6a2`), strings.Contains(s, `"uuid":"54fea1cf`):
					calls = append(calls, i)
				case strings.Contains(s, `"uuid":"c42abd7f`), strings.Contains(s, `"uuid":"682e5fb1`), strings.Contains(s, `"uuid":"3822412c`):
					results = append(results, i)
				}
			}
			if len(calls) != 3 || len(results) != 3 {
				t.Fatalf("calls %v results %v", calls, results)
			}
			var out []string
			for i, s := range l {
				switch {
				case i == calls[0] || i == calls[1] || i == calls[2]:
					out = append(out, s)
					for k, c := range calls {
						if c == i {
							out = append(out, l[results[k]])
						}
					}
				case i == results[0] || i == results[1] || i == results[2]:
				default:
					out = append(out, s)
				}
			}
			return out
		}, "", 0, func(t *testing.T, s *transcript.Session) {
			st := session.Fold(s.Events)
			if st.Turns != origFold.Turns || st.InputTokens != origFold.InputTokens || st.OutputTokens != origFold.OutputTokens || st.ToolCalls != origFold.ToolCalls {
				t.Errorf("turns %d in %d out %d calls %d; the original file gives %d, %d, %d, %d",
					st.Turns, st.InputTokens, st.OutputTokens, st.ToolCalls, origFold.Turns, origFold.InputTokens, origFold.OutputTokens, origFold.ToolCalls)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := derive(t, fasthooks, tt.name, tt.edit)
			ss, err := transcript.Import(transcript.FormatClaudeCode, p)
			if err != nil {
				t.Fatal(err)
			}
			s := ss[0]
			if tt.code != "" {
				found := false
				for _, n := range s.Report.Notes {
					if n.Code == tt.code && (tt.line == 0 || n.Line == tt.line) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s note at line %d in %+v", tt.code, tt.line, s.Report.Notes)
				}
			}
			if rep := replaycheck.Verify(s.ID(), s.Events, replaycheck.VerifyOptions{}); len(rep.Problems) > 0 && tt.code != transcript.CodeOrphanResult {
				t.Errorf("verify: %s", rep.Text())
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

// uuidTail is the rest of the uuid of the line whose uuid starts with
// prefix.
func uuidTail(lines []string, prefix string) string {
	re := regexp.MustCompile(`"uuid":"` + prefix + `-([^"]+)"`)
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			return m[1]
		}
	}
	return ""
}

// TestSubagentsLinked: a Claude Code session brings in the sub-agent files
// beside it, an ATIF trajectory the ones its results refer to; each child
// names its parent, and the parent has subagent_started/finished for it.
func TestSubagentsLinked(t *testing.T) {
	for _, tt := range []struct {
		file     string
		children int
	}{
		{"claude-code/codemie-ai__codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", 2},
		{"atif/harbor-framework__harbor/terminus-2-context-summarization/trajectory.json", 3},
	} {
		ss, err := transcript.Import(transcript.FormatAuto, tr(tt.file))
		if err != nil {
			t.Fatal(err)
		}
		p := ss[0]
		if len(p.Children) != tt.children {
			t.Fatalf("%s: %d children, want %d", tt.file, len(p.Children), tt.children)
		}
		st := session.Fold(p.Events)
		for _, c := range p.Children {
			if c.Events[0].ParentSessionID != p.ID() {
				t.Errorf("child %s names parent %q", c.ID(), c.Events[0].ParentSessionID)
			}
			found := false
			for _, id := range st.Children {
				found = found || id == c.ID()
			}
			if !found {
				t.Errorf("the parent has no subagent_started for %s", c.ID())
			}
		}
		for i, e := range p.Events {
			if e.Seq != int64(i+1) {
				t.Fatalf("seqs are not dense after linking: event %d has seq %d", i, e.Seq)
			}
		}
	}
}

// TestATIFRoundTrip: the ATIF export of a session, imported, gives back
// its events (all but the header, which names the import): a session
// agentctl ran (fixtures) and imported ones.
func TestATIFRoundTrip(t *testing.T) {
	type src struct {
		name string
		evs  []session.Event
	}
	var srcs []src
	for _, id := range []string{"7e90000000000001", "7e90000000000006"} {
		evs, _, err := recorder.ReadFile(filepath.Join("..", "..", "fixtures", "replay", "home", "sessions", id, recorder.LogFile))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src{id, evs})
	}
	for _, f := range []string{fasthooks, "openhands/All-Hands-AI__OpenHands/basic_gui_mode.json"} {
		ss, err := transcript.Import(transcript.FormatAuto, tr(f))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src{f, ss[0].Events})
	}
	for _, s := range srcs {
		t.Run(s.name, func(t *testing.T) {
			b, err := transcript.ExportATIF("5e55000000000001", s.evs, nil)
			if err != nil {
				t.Fatal(err)
			}
			ss := importWritten(t, transcript.FormatAuto, "trajectory.json", b)
			got := ss[0].Events
			if len(got) != len(s.evs) {
				t.Fatalf("%d events back, %d exported", len(got), len(s.evs))
			}
			for i := 1; i < len(got); i++ {
				a, _ := session.Encode(s.evs[i])
				g, _ := session.Encode(got[i])
				if !bytes.Equal(a, g) {
					t.Errorf("event %d:\nexported %s\nimported %s", i+1, a, g)
				}
			}
			if h := got[0]; session.ImportedFrom(h) != transcript.FormatATIF || h.Model != s.evs[0].Model || h.System != s.evs[0].System {
				t.Errorf("header = %+v", h)
			}
		})
	}
}

// BenchmarkImportLargest imports the largest corpus file (a 515 KB Codex
// rollout); bench/import compares its MB/s with `jq -c . FILE`.
func BenchmarkImportLargest(b *testing.B) {
	p := tr("codex/codemie-ai__codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		if _, err := transcript.Import(transcript.FormatCodex, p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestClaudeCodeUsage: an imported turn counts usage as the live provider
// does (cache reads and writes in input_tokens, the breakdown kept, each
// part priced) from the transcript's first response, msg_012yp674…:
// input 9, cache write 5,061, cache read 12,834, output 8 on
// claude-haiku-4-5; its response id and its thinking block are kept.
func TestClaudeCodeUsage(t *testing.T) {
	ss, err := transcript.Import(transcript.FormatClaudeCode, tr(fasthooks))
	if err != nil {
		t.Fatal(err)
	}
	evs := ss[0].Events
	a, mc := evs[2], evs[3]
	if a.Kind != session.KindAssistantMessage || mc.Kind != session.KindModelCall {
		t.Fatalf("events 3, 4 = %s, %s", a.Kind, mc.Kind)
	}
	if mc.ResponseID != "msg_012yp674BDbdduJCYtTe3GMH" || mc.InputTokens != 9+5061+12834 || mc.CacheReadInputTokens != 12834 ||
		mc.CacheCreationInputTokens != 5061 || mc.OutputTokens != 8 {
		t.Fatalf("model_call = %+v", mc)
	}
	// $1/M input, $0.10/M cache reads, $1.25/M five-minute writes, $5/M output.
	want := (9*1.0 + 12834*0.10 + 5061*1.25 + 8*5.0) / 1e6
	if d := mc.CostUSD - want; d > 1e-12 || d < -1e-12 {
		t.Errorf("cost_usd = %v, want %v", mc.CostUSD, want)
	}
	var attrs map[string][]json.RawMessage
	if json.Unmarshal(a.Attrs, &attrs) != nil || len(attrs["thinking"]) != 1 || !bytes.Contains(attrs["thinking"][0], []byte(`"signature"`)) {
		t.Errorf("assistant attrs = %s, want the thinking block verbatim", a.Attrs)
	}
}

// as21 derives the Claude Code 2.1.x shape of parallel calls (each result
// hanging off its own call's line) from a real file: the corpus's files
// with parallel calls (2.0.64, 2.0.76) chain their results one after
// another, and its 2.1.x files make no parallel calls.
func as21(t *testing.T, lines []string) []string {
	t.Helper()
	out, err := transcripttest.ClaudeCode21(lines)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rawCalls counts, from the raw JSON of a Claude Code file, its tool_use
// blocks and the tool_result blocks that answer one of them.
func rawCalls(t *testing.T, p string) (calls, results int) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	var res []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		_ = json.Unmarshal([]byte(l), &r)
		var blocks []struct {
			Type, ID  string
			ToolUseID string `json:"tool_use_id"`
		}
		if json.Unmarshal(r.Message.Content, &blocks) != nil {
			continue
		}
		for _, bl := range blocks {
			switch bl.Type {
			case "tool_use":
				ids[bl.ID] = true
				calls++
			case "tool_result":
				res = append(res, bl.ToolUseID)
			}
		}
	}
	for _, id := range res {
		if ids[id] {
			results++
		}
	}
	return calls, results
}

// TestClaudeCodeParallelResults: the results of parallel calls that hang
// off their own call's line (2.1.x) are the conversation's, not a rewind:
// every call has its result, the counts are the source's, and verify finds
// nothing pending. A rewind in the same shape is still a fork.
func TestClaudeCodeParallelResults(t *testing.T) {
	for _, rel := range []string{fasthooks, "claude-code/codemie-ai__codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"} {
		t.Run(rel, func(t *testing.T) {
			p := derive(t, rel, "derived-2.1-results-off-their-calls.jsonl", func(l []string) []string { return as21(t, l) })
			checkEveryCallAnswered(t, p)
		})
	}
	t.Run("rewind", func(t *testing.T) {
		// The 2.1.x shape, then the third prompt re-parented onto the first
		// answer (as TestMalformedVariants' rewind): the second exchange,
		// its call and its result, is a branch the conversation left.
		p := derive(t, fasthooks, "derived-2.1-rewound.jsonl", func(l []string) []string {
			l = as21(t, l)
			for i := range l {
				if strings.Contains(l[i], `"uuid":"4ff8f9dd`) {
					l[i] = regexp.MustCompile(`"parentUuid":"[^"]+"`).ReplaceAllString(l[i], `"parentUuid":"5d50bbbc-`+uuidTail(l, "5d50bbbc")+`"`)
				}
			}
			return l
		})
		ss, err := transcript.Import(transcript.FormatClaudeCode, p)
		if err != nil {
			t.Fatal(err)
		}
		fork := false
		for _, n := range ss[0].Report.Notes {
			fork = fork || (n.Code == transcript.CodeFork && n.Line == 10)
		}
		if !fork {
			t.Errorf("no fork note at line 10: %+v", ss[0].Report.Notes)
		}
		if c := session.Fold(ss[0].Events).Call("toolu_01HaquTrAhq2raBg86UfK1s6"); c != nil {
			t.Errorf("the rewound branch's call was imported: %+v", c)
		}
	})
}

// checkEveryCallAnswered imports the Claude Code file p and checks that
// nothing in it reads as a rewind: every call and result of the source is
// imported, each call has its result, and verify finds nothing pending.
func checkEveryCallAnswered(t *testing.T, p string) {
	t.Helper()
	calls, results := rawCalls(t, p)
	ss, err := transcript.Import(transcript.FormatClaudeCode, p)
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	for _, n := range s.Report.Notes {
		if n.Code == transcript.CodeFork || n.Code == transcript.CodeNoResult {
			t.Errorf("note %+v", n)
		}
	}
	if got := s.Report.Counts[string(session.KindToolIntent)]; got != calls {
		t.Errorf("%d calls imported, the source has %d", got, calls)
	}
	if got := s.Report.Counts[string(session.KindToolResult)]; got != results {
		t.Errorf("%d results imported, the source has %d", got, results)
	}
	st := session.Fold(s.Events)
	for _, e := range s.Events {
		if e.Kind == session.KindToolIntent {
			if c := st.Call(e.CallID); c == nil || c.ResultSeq == 0 {
				t.Errorf("call %s has no result", e.CallID)
			}
		}
	}
	if rep := replaycheck.Verify(s.ID(), s.Events, replaycheck.VerifyOptions{}); len(rep.Problems) > 0 {
		t.Errorf("verify: %s", rep.Text())
	}
}

// TestClaudeCodeParallelCallOffProgress: Claude Code 2.1.x runs a call
// while the rest of its message streams, and writes the call's progress
// line (a PostToolUse hook_progress, parentToolUseID naming the call) into
// the chain; the message's next tool_use line can hang off that progress
// line while the one after it hangs off the first call's line, so the
// chain to the last message passes the message by that line. It is part of
// its message (same message.id as lines on the chain), not a rewind: its
// call and its result are imported. Derived from the real fasthooks
// session's three-call message (lines 44-46) in the 2.1.x shape: a
// progress line in the shape 2.1.x writes is inserted after the first
// call's line, the second call's line re-parented onto it, the third onto
// the first call's line.
func TestClaudeCodeParallelCallOffProgress(t *testing.T) {
	p := derive(t, fasthooks, "derived-2.1-call-off-progress.jsonl", func(l []string) []string {
		l = as21(t, l)
		first, second, third := "888a6c2d-"+uuidTail(l, "888a6c2d"), "413ec6a2", "54fea1cf"
		const progress = "9b7e2a10-5c1d-4f3e-8a2b-6d0c4e1f7a93"
		reparent := regexp.MustCompile(`^\{"parentUuid":"[^"]+"`)
		var out []string
		for _, line := range l {
			switch {
			case strings.Contains(line, `"uuid":"`+second):
				line = reparent.ReplaceAllString(line, `{"parentUuid":"`+progress+`"`)
			case strings.Contains(line, `"uuid":"`+third):
				line = reparent.ReplaceAllString(line, `{"parentUuid":"`+first+`"`)
			}
			out = append(out, line)
			if strings.Contains(line, `"uuid":"`+first) {
				out = append(out, `{"parentUuid":"`+first+`","isSidechain":false,"userType":"external","cwd":"/workspace","sessionId":"c45af7b1-cb7c-4e51-93db-8cbb250a877a","version":"2.0.76","gitBranch":"","type":"progress","data":{"type":"hook_progress","hookEvent":"PostToolUse","hookName":"PostToolUse:Write","command":"callback"},"parentToolUseID":"toolu_0121Xkn9uW9TJCnTjQjc656P","toolUseID":"toolu_0121Xkn9uW9TJCnTjQjc656P","timestamp":"2026-01-02T19:20:28.300Z","uuid":"`+progress+`"}`)
			}
		}
		if len(out) != len(l)+1 {
			t.Fatal("the first call's line is not in the file")
		}
		return out
	})
	checkEveryCallAnswered(t, p)
}

// TestATIFObservationsWithoutCallID: Harbor's terminus-2 writes results
// with no source_call_id (ATIF allows it); the real trajectory's steps 9
// and 10 each have one call and one such result. Each is paired with its
// step's call by position, the export to ATIF holds every observation of
// the source's agent steps, and importing the export gives the events back.
func TestATIFObservationsWithoutCallID(t *testing.T) {
	p := tr("atif/harbor-framework__harbor/terminus-2-context-summarization/trajectory.json")
	// From the raw JSON: the results of the agent and user steps (a system
	// step's result is its compaction summary), and those naming no call.
	var raw struct {
		Steps []struct {
			Source      string `json:"source"`
			Observation *struct {
				Results []struct {
					SourceCallID *string `json:"source_call_id"`
				} `json:"results"`
			} `json:"observation"`
		} `json:"steps"`
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	results, noID := 0, 0
	for _, st := range raw.Steps {
		if st.Observation == nil || st.Source == "system" {
			continue
		}
		for _, r := range st.Observation.Results {
			results++
			if r.SourceCallID == nil {
				noID++
			}
		}
	}
	if results != 7 || noID != 2 {
		t.Fatalf("the source has %d results, %d without source_call_id; this test was written for 7 and 2", results, noID)
	}
	ss, err := transcript.Import(transcript.FormatATIF, p)
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	if got := s.Report.Counts[string(session.KindToolResult)]; got != results {
		t.Errorf("%d results imported, the source has %d", got, results)
	}
	st := session.Fold(s.Events)
	for _, id := range []string{"call_5_task_complete", "call_6_task_complete"} {
		if c := st.Call(id); c == nil || c.ResultSeq == 0 {
			t.Errorf("call %s has no result", id)
		}
	}
	if rep := replaycheck.Verify(s.ID(), s.Events, replaycheck.VerifyOptions{}); len(rep.Problems) > 0 {
		t.Errorf("verify: %s", rep.Text())
	}
	out, err := transcript.ExportATIF(s.ID(), s.Events, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	exported := 0
	for _, st := range raw.Steps {
		if st.Observation != nil && st.Source == "agent" {
			exported += len(st.Observation.Results)
		}
	}
	if exported != results {
		t.Errorf("the export holds %d observations, the source %d", exported, results)
	}
	back := filepath.Join(t.TempDir(), "trajectory.json")
	if err := os.WriteFile(back, out, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := transcript.Import(transcript.FormatATIF, back)
	if err != nil {
		t.Fatal(err)
	}
	if len(again[0].Events) != len(s.Events) {
		t.Fatalf("%d events back, %d exported", len(again[0].Events), len(s.Events))
	}
	for i := 1; i < len(s.Events); i++ {
		a, _ := session.Encode(s.Events[i])
		g, _ := session.Encode(again[0].Events[i])
		if !bytes.Equal(a, g) {
			t.Errorf("event %d:\nexported %s\nimported %s", i+1, a, g)
		}
	}
}

// TestATIFUnpairedResults: results that name no call and that position
// cannot pair (two results, one call) are kept, shown as what the
// environment told the agent, and exported back as unpaired results. A
// variant of the real terminus-2 trajectory: step 9 gets a second result.
func TestATIFUnpairedResults(t *testing.T) {
	p := tr("atif/harbor-framework__harbor/terminus-2-context-summarization/trajectory.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	step := doc["steps"].([]any)[8].(map[string]any)
	if step["step_id"].(float64) != 9 {
		t.Fatal("step 9 is not the ninth")
	}
	obs := step["observation"].(map[string]any)
	obs["results"] = append(obs["results"].([]any), map[string]any{"content": "derived: a second result"})
	b, _ = json.Marshal(doc)
	dir := t.TempDir()
	v := filepath.Join(dir, "terminus-2-derived-two-results-one-call.json")
	if err := os.WriteFile(v, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err := transcript.Import(transcript.FormatATIF, v)
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	kept := 0
	for _, e := range s.Events {
		if e.Kind == session.KindUserMessage && (strings.Contains(e.Text, "Are you sure you want to mark") || e.Text == "derived: a second result") {
			kept++
		}
	}
	if kept != 2 {
		t.Errorf("%d of the 2 unpaired results kept", kept)
	}
	out, err := transcript.ExportATIF(s.ID(), s.Events, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`derived: a second result`)) {
		t.Error("the export lacks the unpaired result")
	}
	back := filepath.Join(dir, "back.json")
	if err := os.WriteFile(back, out, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := transcript.Import(transcript.FormatATIF, back)
	if err != nil {
		t.Fatal(err)
	}
	if len(again[0].Events) != len(s.Events) {
		t.Fatalf("%d events back, %d exported", len(again[0].Events), len(s.Events))
	}
}

// TestATIFSubagentPathsConfined: a sub-agent trajectory_path is the file's
// word, not the user's. In a copy of the real terminus-2 folder, the ref
// to trajectory.summarization-1-summary.json is made to name a named pipe,
// /dev/zero, an absolute path and a ../ path outside the folder, or a
// symlink leading out: each is refused with a note naming the path, the
// import ends (no hang: the pipe has no writer), and the other two
// sub-agents are still imported.
func TestATIFSubagentPathsConfined(t *testing.T) {
	const sub = "trajectory.summarization-1-summary.json"
	outside := tr("atif/harbor-framework__harbor/atif2otel-fixtures/trajectory_pass.json")
	for _, tt := range []struct {
		name string
		path string                         // the ref's trajectory_path ("": unchanged)
		make func(t *testing.T, dir string) // what to put at dir/sub
	}{
		{"fifo", "", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, sub), 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}},
		{"dev-zero", "/dev/zero", nil},
		{"absolute", "", nil}, // path set below: the real trajectory_pass.json
		{"dotdot", "../atif2otel-fixtures/trajectory_pass.json", nil},
		{"symlink-out", "", func(t *testing.T, dir string) {
			if err := os.Symlink(outside, filepath.Join(dir, sub)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "terminus-2-context-summarization")
			if err := os.MkdirAll(filepath.Join(root, "atif2otel-fixtures"), 0o755); err != nil {
				t.Fatal(err)
			}
			copyFile(t, outside, filepath.Join(root, "atif2otel-fixtures", "trajectory_pass.json"))
			src := tr("atif/harbor-framework__harbor/terminus-2-context-summarization")
			ents, err := os.ReadDir(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Name() != sub || tt.make == nil {
					copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dir, e.Name()))
				}
			}
			path := tt.path
			if tt.name == "absolute" {
				path, _ = filepath.Abs(outside)
			}
			if tt.make != nil {
				tt.make(t, dir)
			}
			named := sub
			if path != "" {
				named = path
				b, err := os.ReadFile(filepath.Join(dir, "trajectory.json"))
				if err != nil {
					t.Fatal(err)
				}
				q, _ := json.Marshal(path)
				b = bytes.Replace(b, []byte(`"trajectory_path": "`+sub+`"`), []byte(`"trajectory_path": `+string(q)), 1)
				if err := os.WriteFile(filepath.Join(dir, "trajectory.json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			type res struct {
				ss  []*transcript.Session
				err error
			}
			done := make(chan res, 1)
			go func() {
				ss, err := transcript.Import(transcript.FormatATIF, filepath.Join(dir, "trajectory.json"))
				done <- res{ss, err}
			}()
			var r res
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("the import still runs after 20s (it opened %s)", named)
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			p := r.ss[0]
			if len(p.Children) != 2 {
				t.Errorf("%d children imported, want the other 2", len(p.Children))
			}
			refused := false
			for _, n := range p.Report.Notes {
				refused = refused || (n.Code == transcript.CodeNotImported && strings.Contains(n.Detail, fmt.Sprintf("%q", named)))
			}
			if !refused {
				t.Errorf("no not_imported note naming %q: %+v", named, p.Report.Notes)
			}
			if transcript.Lost(p.Report) != 1 {
				t.Errorf("Lost = %d, want 1", transcript.Lost(p.Report))
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSWEAgentHistoryOnly: a .traj that holds only its history (no
// trajectory steps) imports its responses, calls and results from the
// history. Variants of the real 1.x (function calling) and 0.x files with
// "trajectory" removed; the counts are the history's, from its raw JSON.
func TestSWEAgentHistoryOnly(t *testing.T) {
	for _, rel := range []string{"swe-agent/SWE-agent__SWE-agent/marshmallow-code__marshmallow-1867__function_calling.traj", "swe-agent/SWE-agent__SWE-agent/pydicom__pydicom-1458.traj"} {
		t.Run(rel, func(t *testing.T) {
			b, err := os.ReadFile(tr(rel))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			delete(doc, "trajectory")
			var hist []struct {
				Role        string            `json:"role"`
				Action      string            `json:"action"`
				IsDemo      bool              `json:"is_demo"`
				ToolCalls   []json.RawMessage `json:"tool_calls"`
				ToolCallIDs []string          `json:"tool_call_ids"`
			}
			if err := json.Unmarshal(doc["history"], &hist); err != nil {
				t.Fatal(err)
			}
			responses, calls, results := 0, 0, 0
			afterAction, prompted := false, false
			for _, h := range hist {
				switch {
				case h.Role == "assistant":
					responses++
					calls += len(h.ToolCalls)
					afterAction = len(h.ToolCalls) == 0 && strings.TrimSpace(h.Action) != ""
					if afterAction {
						calls++
					}
				case h.Role == "tool":
					results += len(h.ToolCallIDs)
				case h.Role == "user" && !h.IsDemo && !prompted:
					prompted = true
				case h.Role == "user" && !h.IsDemo && afterAction:
					results++
					afterAction = false
				}
			}
			b, _ = json.Marshal(doc)
			ss := importWritten(t, transcript.FormatSWEAgent, "derived-history-only.traj", b)
			r := ss[0].Report
			if r.Counts[string(session.KindAssistantMessage)] != responses || r.Counts[string(session.KindToolIntent)] != calls || r.Counts[string(session.KindToolResult)] != results {
				t.Errorf("imported %d responses, %d calls, %d results; the history has %d, %d, %d", r.Counts[string(session.KindAssistantMessage)],
					r.Counts[string(session.KindToolIntent)], r.Counts[string(session.KindToolResult)], responses, calls, results)
			}
			if responses == 0 || calls == 0 || results == 0 || transcript.Lost(r) != 0 {
				t.Errorf("counts %d %d %d, lost %d", responses, calls, results, transcript.Lost(r))
			}
			if rep := replaycheck.Verify(ss[0].ID(), ss[0].Events, replaycheck.VerifyOptions{}); len(rep.Problems) > 0 {
				t.Errorf("verify: %s", rep.Text())
			}
		})
	}
}

// TestInspectScorerCallsAndSourceCost: model events whose output is not
// among a sample's messages (a scorer's calls) are billed model_calls, and
// the cost the log recorded is taken for a model the price table does not
// know. Variants of real logs: browser.json's sample with a copy of its
// last model event given another message id, as a model-graded scorer's
// call would be; log_read_sample.eval (ollama/gemma3, not in the table)
// with a total_cost added to its model event's usage.
func TestInspectScorerCallsAndSourceCost(t *testing.T) {
	t.Run("scorer", func(t *testing.T) {
		b, err := os.ReadFile(tr("inspect-ai/UKGovernmentBEIS__inspect_ai/2025-05-12T20-27-36-04-00_browser.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		sample := doc["samples"].([]any)[0].(map[string]any)
		evs := sample["events"].([]any)
		var last map[string]any
		var in float64
		models := 0
		for _, e := range evs {
			m := e.(map[string]any)
			if m["event"] == "model" {
				last, models = m, models+1
				in += m["output"].(map[string]any)["usage"].(map[string]any)["input_tokens"].(float64)
			}
		}
		cp, _ := json.Marshal(last)
		var scorer map[string]any
		_ = json.Unmarshal(cp, &scorer)
		scorer["output"].(map[string]any)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["id"] = "derived-scorer-call"
		in += scorer["output"].(map[string]any)["usage"].(map[string]any)["input_tokens"].(float64)
		sample["events"] = append(evs, scorer)
		b, _ = json.Marshal(doc)
		ss := importWritten(t, transcript.FormatInspect, "browser-derived-scorer-call.json", b)
		s := ss[0]
		if got := s.Report.Counts[string(session.KindModelCall)]; got != models+1 {
			t.Errorf("%d model_calls, the log has %d model events", got, models+1)
		}
		if st := session.Fold(s.Events); st.InputTokens != int64(in) {
			t.Errorf("input tokens %d, the log's model events hold %d", st.InputTokens, int64(in))
		}
		for _, n := range s.Report.Notes {
			if strings.Contains(n.Detail, "model event") {
				t.Errorf("note %+v", n)
			}
		}
		if rep := replaycheck.Verify(s.ID(), s.Events, replaycheck.VerifyOptions{}); len(rep.Problems) > 0 {
			t.Errorf("verify: %s", rep.Text())
		}
	})
	t.Run("source-cost", func(t *testing.T) {
		zr, err := zip.OpenReader(tr("inspect-ai/UKGovernmentBEIS__inspect_ai/log_read_sample.eval"))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		const cost = 0.000123
		edited := 0
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(f.Name, "samples/") {
				var doc map[string]any
				if err := json.Unmarshal(b, &doc); err != nil {
					t.Fatal(err)
				}
				for _, e := range doc["events"].([]any) {
					if m := e.(map[string]any); m["event"] == "model" {
						m["output"].(map[string]any)["usage"].(map[string]any)["total_cost"] = cost
						edited++
					}
				}
				b, _ = json.Marshal(doc)
			}
			w, err := zw.Create(f.Name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(b)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if edited != 1 {
			t.Fatalf("%d model events, this test was written for 1", edited)
		}
		ss := importWritten(t, transcript.FormatInspect, "log_read_sample-derived-total-cost.eval", buf.Bytes())
		if st := session.Fold(ss[0].Events); st.CostUSD != cost {
			t.Errorf("cost %v, the log recorded %v", st.CostUSD, cost)
		}
	})
}

// TestInspectSampleWithoutEventsBefore: a sample whose tool message or
// scores come before any event of the conversation (derived from a real
// log: its messages cut down, its events dropped) imports, timed by the
// header, instead of reading the event before the first (it panicked).
func TestInspectSampleWithoutEventsBefore(t *testing.T) {
	b, err := os.ReadFile(tr("inspect-ai/UKGovernmentBEIS__inspect_ai/2025-05-12T20-27-36-04-00_browser.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		keep func(role string) bool
		// want: the events the sample gives (its scores, and an orphan
		// result per tool message).
		wantResults, wantOrphans int
	}{
		{"only-scores", func(string) bool { return false }, 0, 0},
		{"tool-first", func(role string) bool { return role == "tool" }, 4, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			sample := doc["samples"].([]any)[0].(map[string]any)
			var msgs []any
			for _, m := range sample["messages"].([]any) {
				if tt.keep(m.(map[string]any)["role"].(string)) {
					msgs = append(msgs, m)
				}
			}
			sample["messages"], sample["events"] = msgs, []any{}
			if len(sample["scores"].(map[string]any)) == 0 {
				t.Fatal("the sample has no scores; this test was written for a scored one")
			}
			doc["samples"] = []any{sample}
			out, _ := json.Marshal(doc)
			ss := importWritten(t, transcript.FormatInspect, "browser-derived-"+tt.name+".json", out)
			s := ss[0]
			if got := s.Report.Counts[string(session.KindToolResult)]; got != tt.wantResults {
				t.Errorf("%d tool_results, want %d", got, tt.wantResults)
			}
			orphans := 0
			for _, n := range s.Report.Notes {
				if n.Code == transcript.CodeOrphanResult {
					orphans++
				}
			}
			if orphans != tt.wantOrphans {
				t.Errorf("%d orphan results noted, want %d: %+v", orphans, tt.wantOrphans, s.Report.Notes)
			}
			if got, want := s.Report.Counts[string(session.KindEvaluation)], len(sample["scores"].(map[string]any)); got != want {
				t.Errorf("%d evaluations, the sample has %d scores", got, want)
			}
		})
	}
}

// TestImportRefusesFIFO: a named pipe given to import (or met in a folder)
// is refused at once, not read until a writer comes.
func TestImportRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trajectory.json")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	for _, format := range []string{transcript.FormatAuto, transcript.FormatATIF} {
		done := make(chan error, 1)
		go func() {
			_, err := transcript.Import(format, p)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: err = %v", format, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the import of a named pipe still runs after 20s", format)
		}
	}
}

// TestClaudeCodeSubagentNotImported: a sub-agent file beside the session
// that cannot be imported is named in the session's report (here the real
// codemie folder with agent-50243ee8.jsonl swapped for a named pipe), and
// the other sub-agent still comes in.
func TestClaudeCodeSubagentNotImported(t *testing.T) {
	src := tr("claude-code/codemie-ai__codemie-code/-tmp-private")
	dir := t.TempDir()
	for _, n := range []string{"4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", "agent-36541525.jsonl"} {
		copyFile(t, filepath.Join(src, n), filepath.Join(dir, n))
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "agent-50243ee8.jsonl"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	ss, err := transcript.Import(transcript.FormatClaudeCode, filepath.Join(dir, "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss[0].Children) != 1 {
		t.Errorf("%d children, want 1", len(ss[0].Children))
	}
	found := false
	for _, n := range ss[0].Report.Notes {
		found = found || (n.Code == transcript.CodeNotImported && strings.Contains(n.Detail, "agent-50243ee8.jsonl"))
	}
	if !found || transcript.Lost(ss[0].Report) != 1 {
		t.Errorf("no not_imported note for agent-50243ee8.jsonl: %+v", ss[0].Report.Notes)
	}
}
