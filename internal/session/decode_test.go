package session

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fixtureRecords returns every record of the logs (events.log, framed as
// the recorder writes them) and JSON-lines files under ../../fixtures and
// testdata, named by file and index.
func fixtureRecords(t testing.TB) (names []string, recs [][]byte) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".scratch") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		switch {
		case d.Name() == "events.log":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			// Frames: length, crc, type, payload (see package recorder).
			for i, off := 0, 12; off+9 <= len(b); i++ {
				n := int(binary.LittleEndian.Uint32(b[off:]))
				if off+9+n > len(b) {
					break // a torn tail
				}
				names = append(names, fmt.Sprintf("%s#%d", path, i))
				recs = append(recs, b[off+9:off+9+n])
				off += 9 + n
			}
		case strings.HasSuffix(d.Name(), ".jsonl") && (strings.Contains(path, "fixtures") || strings.Contains(path, "testdata")):
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			for i := 0; sc.Scan(); i++ {
				if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 && line[0] == '{' {
					names = append(names, fmt.Sprintf("%s:%d", path, i+1))
					recs = append(recs, bytes.Clone(line))
				}
			}
			return sc.Err()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 100 {
		t.Fatalf("found %d fixture records, want at least 100", len(recs))
	}
	return names, recs
}

// checkSame decodes b with Decode and with a Decoder, shared and not, and
// fails unless all three agree (events DeepEqual, errors the same text). It
// reports whether the fast path took the record.
func checkSame(t *testing.T, name string, b []byte) bool {
	t.Helper()
	want, wantErr := Decode(b)
	var fast bool
	for _, shared := range []bool{false, true} {
		in := bytes.Clone(b)
		d := Decoder{Shared: shared}
		_, ok := d.fast(in)
		fast = fast || ok
		got, err := d.Decode(in)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("%s: Decoder{Shared: %v}.Decode(%q) error = %v, want %v", name, shared, b, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Decoder{Shared: %v}.Decode(%q) =\n%#v\nwant\n%#v", name, shared, b, got, want)
		}
	}
	return fast
}

func TestDecoderFixtures(t *testing.T) {
	names, recs := fixtureRecords(t)
	slow, events := 0, 0
	for i, b := range recs {
		fast := checkSame(t, names[i], b)
		// Checkpoints and other tools' transcripts (the corpus, the
		// importers' real files) are not events; they only check that the
		// two decoders agree on foreign JSON.
		if n := filepath.ToSlash(names[i]); strings.Contains(n, "checkpoints.jsonl") || strings.Contains(n, "claude-code") ||
			strings.Contains(n, "corpus/transcripts/") || strings.Contains(n, "internal/transcript/testdata/") {
			continue
		}
		events++
		if !fast {
			slow++
			t.Logf("%s: decoded by encoding/json", names[i])
		}
	}
	// The rest are logs agentctl wrote (and a few newer-version records
	// with unknown fields): nearly all must take the fast path.
	if slow > events/50 {
		t.Errorf("%d of %d fixture events fell back to encoding/json", slow, events)
	}
}

// TestDecoderFallback covers the forms the fast path leaves to
// encoding/json, and malformed records: the result must still be Decode's.
func TestDecoderFallback(t *testing.T) {
	for _, rec := range []string{
		`{"seq":1,"ts":"2026-11-29T00:00:00Z","kind":"user_message","text":"hi"}`,
		`{"seq":1,"kind":"user_message","Text":"case-folded key"}`,
		`{"seq":1,"kind":"user_message","text":"a","text":"duplicate"}`,
		`{"seq":1,"kind":"user_message","unknown_field":{"x":[1,2]}}`,
		`{"seq":1,"kind":"user_message","text":null}`,
		`{"seq":1,"kind":"model_call","attrs":null}`,
		`{"seq":1,"kind":"model_call","attrs":{"a": [1, 2.5e3, true, false, null, "\u00e9"]} }`,
		`{"seq":1.0,"kind":"user_message"}`,
		`{"seq":1e2,"kind":"user_message"}`,
		`{"seq":-0,"kind":"user_message"}`,
		`{"seq":99999999999999999999,"kind":"user_message"}`,
		`{"seq":9223372036854775807,"kind":"user_message"}`,
		`{"seq":01,"kind":"user_message"}`,
		`{"seq":"1","kind":"user_message"}`,
		`{"seq":1,"kind":"model_call","cost_usd":0.0125}`,
		`{"seq":1,"kind":"model_call","cost_usd":1e400}`,
		`{"seq":1,"kind":"model_call","cost_usd":-1.5E-3}`,
		`{"seq":1,"kind":"user_message","text":"\ud83d\ude00 surrogate pair"}`,
		`{"seq":1,"kind":"user_message","text":"\ud83d lone surrogate"}`,
		`{"seq":1,"kind":"user_message","text":"bad utf-8 \xff"}`,
		`{"seq":1,"kind":"user_message","text":"tab	raw"}`,
		`{"seq":1,"kind":"user_message","text":"esc \" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u20ac"}`,
		`{"seq":1,"kind":"user_message","text":"bad escape \x"}`,
		`{"seq":1,"kind":"user_message","text":"short \u12"}`,
		`{"seq":1,"kind":"user_message","text":"unterminated`,
		`{"seq":1,"kind":"user_message"} trailing`,
		`{"seq":1,"kind":"user_message"}` + "\n\t ",
		` { "seq" : 1 , "kind" : "user_message" } `,
		`{"seq":1,"kind":"user_message",}`,
		`{"seq":1}`,
		`{}`,
		`[]`,
		`null`,
		``,
		`{"seq":1,"kind":"future_kind","whatever":[{"deep":{"x":1}}]}`,
		`{"seq":1,"kind":"future_kind"}`,
		`{"seq":1,"kind":"assistant_message","tool_calls":[]}`,
		`{"seq":1,"kind":"assistant_message","tool_calls":null}`,
		`{"seq":1,"kind":"assistant_message","tool_calls":[{}]}`,
		`{"seq":1,"kind":"assistant_message","tool_calls":[{"id":"a","name":"b","args":{"p":"x"}},{"id":"c","name":"d"}]}`,
		`{"seq":1,"kind":"assistant_message","tool_calls":[{"id":"a","ID":"b"}]}`,
		`{"seq":1,"kind":"assistant_message","tool_calls":[{"id":"a","id":"b"}]}`,
		`{"seq":1,"kind":"assistant_message","tool_calls":[{"args":null}]}`,
		`{"seq":1,"kind":"assistant_message","tool_calls":[{"args":  [ 1 , {"a" : "b"} ] }]}`,
		`{"seq":1,"kind":"compaction","source_seqs":[]}`,
		`{"seq":1,"kind":"compaction","source_seqs":[1, 2 ,3]}`,
		`{"seq":1,"kind":"compaction","source_seqs":[1.5]}`,
		`{"seq":1,"kind":"compaction","source_seqs":null}`,
		`{"seq":1,"kind":"user_message","ts":"2026-02-29T00:00:00Z"}`,
		`{"seq":1,"kind":"user_message","ts":"2028-02-29T23:59:59.999999999Z"}`,
		`{"seq":1,"kind":"user_message","ts":"2026-11-29T00:00:00.1234567891Z"}`,
		`{"seq":1,"kind":"user_message","ts":"2026-11-29T00:00:00,5Z"}`,
		`{"seq":1,"kind":"user_message","ts":"2026-11-29T00:00:00+02:00"}`,
		`{"seq":1,"kind":"user_message","ts":"2026-11-29T24:00:00Z"}`,
		`{"seq":1,"kind":"user_message","ts":"2026-11-29T23:59:60Z"}`,
		`{"seq":1,"kind":"user_message","ts":"2026-13-01T00:00:00Z"}`,
		`{"seq":1,"kind":"user_message","ts":"2026-11-29t00:00:00Z"}`,
		`{"seq":1,"kind":"user_message","ts":"2026-11-29T00:00:00."}`,
		`{"seq":1,"kind":"user_message","ts":"0000-01-01T00:00:00Z"}`,
		`{"seq":1,"kind":"user_message","ts":null}`,
		`{"seq":1,"kind":"user_message","ts":"\u0032026-11-29T00:00:00Z"}`,
		`{"seq":1,"kind":"user_message","spec":{"a":"` + strings.Repeat("[", 2000) + `"}}`,
		`{"seq":1,"kind":"user_message","spec":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`,
		`{"seq":1,"kind":"user_message","spec":tru}`,
		`{"seq":1,"kind":"user_message","spec":-}`,
		`{"seq":1,"kind":"user_message","spec":"\ud800"}`,
		`{"seq":1,"kind":"user_message","spec":"raw \xff bytes"}`,
		`{"seq":1,"kind":"user_message","spec":{"a":1,}}`,
	} {
		checkSame(t, rec, []byte(rec))
	}
}

// randomEvent returns an event with random fields set, strings drawn from
// an alphabet rich in what JSON escapes.
func randomEvent(r *rand.Rand) Event {
	alphabet := []string{"a", "Z", " ", "\n", "\t", "\"", "\\", "/", "<", ">", "&", "é", "€", "😀", "\u2028", "\x00", "\x1f", "\x7f", "\xff", "{", "}"}
	str := func() string {
		if r.IntN(3) == 0 {
			return ""
		}
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.Int64()
		case 2:
			return -r.Int64N(1000)
		}
		return r.Int64N(100000)
	}
	raw := func() json.RawMessage {
		if r.IntN(3) == 0 {
			return nil
		}
		v := map[string]any{"s": str(), "n": r.Float64(), "a": []any{num(), true, nil, str()}}
		b, _ := json.Marshal(v)
		return b
	}
	kinds := append(append([]Kind(nil), Kinds...), "future_kind")
	e := Event{
		Seq: num(), Kind: kinds[r.IntN(len(kinds))], SessionID: str(), Name: str(), Provider: str(),
		Model: str(), System: str(), Spec: raw(), SpecPath: str(), SpecHash: str(),
		AgentctlVersion: str(), HarnessCommit: str(), Workspace: str(), ParentSessionID: str(),
		ForkedFrom: num(), Text: str(), RequestDigest: str(), LatencyMS: num(), InputTokens: num(),
		OutputTokens: num(), FinishReason: str(), CallID: str(), Tool: str(), Args: raw(),
		IdempotencyKey: str(), Output: str(), Artifact: str(), Scope: str(), Through: num(),
		Summary: str(), Status: str(), Outcome: str(), Reason: str(), Evidence: str(),
		Error: str(), ChildSessionID: str(), Attrs: raw(),
		GitSHA: str(),
	}
	switch r.IntN(3) {
	case 0:
		e.TS = time.Date(2000+r.IntN(100), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e9), time.UTC)
	case 1:
		e.TS = time.Date(2026, 11, 29, 10, 0, r.IntN(60), r.IntN(1000)*1e6, time.FixedZone("x", 3600*(r.IntN(25)-12)))
	}
	if r.IntN(2) == 0 {
		e.CostUSD = float64(r.IntN(100000)) / 1e5
	}
	for range r.IntN(3) {
		e.ToolCalls = append(e.ToolCalls, ToolCall{ID: str(), Name: str(), Args: raw()})
	}
	for range r.IntN(4) {
		e.SourceSeqs = append(e.SourceSeqs, num())
	}
	return e
}

func TestDecoderRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	fast := 0
	const n = 3000
	for i := range n {
		b, err := Encode(randomEvent(r))
		if err != nil {
			t.Fatal(err)
		}
		if checkSame(t, fmt.Sprintf("seed %d event %d", seed, i), b) {
			fast++
		}
	}
	// Strings with invalid UTF-8 fall back; the rest must not.
	if fast < n/10 {
		t.Errorf("fast path took %d of %d random events", fast, n)
	}
}

// FuzzDecoder: the Decoder agrees with Decode on any input, whether it
// takes the fast path or falls back.
func FuzzDecoder(f *testing.F) {
	_, recs := fixtureRecords(f)
	for _, b := range recs {
		f.Add(b)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		b, _ := Encode(randomEvent(r))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSame(t, "fuzz", b)
	})
}

func BenchmarkDecode(b *testing.B) {
	names, all := fixtureRecords(b)
	var recs [][]byte
	size := 0
	for i, r := range all {
		if strings.HasSuffix(names[i], ".log") || strings.Contains(names[i], ".log#") {
			recs = append(recs, r)
			size += len(r)
		}
	}
	b.Run("encoding/json", func(b *testing.B) {
		b.SetBytes(int64(size))
		for range b.N {
			for _, r := range recs {
				_, _ = Decode(r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/event")
	})
	b.Run("Decoder", func(b *testing.B) {
		b.SetBytes(int64(size))
		d := Decoder{Shared: true}
		for range b.N {
			for _, r := range recs {
				_, _ = d.Decode(r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/event")
	})
}
