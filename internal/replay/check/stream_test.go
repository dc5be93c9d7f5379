package check

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
)

// stream verifies evs with a Verifier alone.
func stream(id string, evs []session.Event) (Report, bool) {
	v := NewVerifier(id)
	for _, e := range evs {
		v.Add(e)
	}
	return v.Report()
}

// variants returns evs and damaged copies of it: every prefix, each model
// call with a wrong digest, each event dropped, neighbours swapped, and
// compactions whose through goes backwards or forwards.
func variants(r *rand.Rand, evs []session.Event) map[string][]session.Event {
	out := map[string][]session.Event{"as recorded": evs}
	for k := range len(evs) {
		out[fmt.Sprintf("first %d", k)] = evs[:k]
	}
	for i, e := range evs {
		edit := func(name string, f func(*session.Event)) {
			c := append([]session.Event(nil), evs...)
			f(&c[i])
			out[fmt.Sprintf("seq %d %s", e.Seq, name)] = c
		}
		switch e.Kind {
		case session.KindModelCall:
			edit("wrong digest", func(e *session.Event) { e.RequestDigest = "sha256:" + strings.Repeat("0", 64) })
			edit("no digest", func(e *session.Event) { e.RequestDigest = "" })
		case session.KindCompaction:
			edit("through 1", func(e *session.Event) { e.Through = 1 })
			edit("through back", func(e *session.Event) { e.Through -= 1 + int64(r.IntN(20)) })
			edit("through ahead", func(e *session.Event) { e.Through += 1 + int64(r.IntN(20)) })
		case session.KindSessionStarted:
			edit("no tools", func(e *session.Event) { e.Attrs = nil })
			edit("imported", func(e *session.Event) { e.Attrs = []byte(`{"imported_from":"claude-code"}`) })
		}
	}
	for range min(len(evs), 20) {
		i := r.IntN(len(evs))
		out[fmt.Sprintf("drop %d", i)] = append(append([]session.Event(nil), evs[:i]...), evs[i+1:]...)
		if i+1 < len(evs) {
			c := append([]session.Event(nil), evs...)
			c[i], c[i+1] = c[i+1], c[i]
			out[fmt.Sprintf("swap %d", i)] = c
		}
	}
	return out
}

// TestVerifierMatchesBatch: a Verifier fed one event at a time gives the
// report verifyBatch gives over the whole log, or asks for it.
func TestVerifierMatchesBatch(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))

	logs := map[string][]session.Event{}
	for _, home := range []string{fixtureHome, testenv.Fixture("home"), testenv.Fixture("diagnose", "home")} {
		st := recorder.Store{Root: home}
		ids, err := st.IDs()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			evs, _, err := st.Load(id)
			if err != nil {
				t.Fatal(err)
			}
			logs[home+"/"+id] = evs
		}
	}
	tmp := t.TempDir()
	for i, agent := range []string{"fix-typo", "long-refactor", "retry-eval", "loop-forever"} {
		logs["recorded "+agent] = replaytest.Record(t, tmp, agent, fmt.Sprintf("00000000000000c%d", i))
	}
	logs["imported codemie"] = replaytest.ImportFile(t, "claude-code/codemie-ai__codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
	logs["imported fasthooks"] = replaytest.ImportFile(t, "claude-code/oneryalcin__fasthooks/sample_main_transcript.jsonl")
	clean := loadFixture(t, fxClean)
	logs["redigested tool_name"] = redigest(clean, ruleNamed(t, "tool_name"))
	logs["redigested output cap"] = redigest(clean, capOutputs)

	cases, redo := 0, 0
	defer func(n int) { maxOrigBuf = n }(maxOrigBuf)
	for _, maxBuf := range []int{maxOrigBuf, 3} {
		maxOrigBuf = maxBuf
		for name, evs := range logs {
			for vname, x := range variants(r, evs) {
				want := verifyBatch("id", x, VerifyOptions{})
				got, ok := stream("id", x)
				cases++
				if !ok {
					redo++
					got = Verify("id", x, VerifyOptions{})
				}
				if all := Verify("id", x, VerifyOptions{}); !reflect.DeepEqual(all, want) {
					t.Fatalf("%s, %s, max buffer %d: Verify =\n%s%+v\nverifyBatch =\n%s%+v", name, vname, maxBuf, all.Text(), all, want.Text(), want)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, %s, max buffer %d: Verifier (ok %v) =\n%s%+v\nverifyBatch =\n%s%+v", name, vname, maxBuf, ok, got.Text(), got, want.Text(), want)
				}
			}
		}
	}
	t.Logf("%d logs, %d cases, %d handed back to verifyBatch", len(logs), cases, redo)
	if redo == 0 || redo > cases/4 {
		t.Errorf("%d of %d cases handed back to verifyBatch, want some but few", redo, cases)
	}
}

// TestVerifyLog: verifying from disk as the log is read, on one goroutine
// or two, reports what Verify of the whole log (or its read error) does,
// for every fixture log, a torn one and a corrupt one included.
func TestVerifyLog(t *testing.T) {
	type log struct{ id, path string }
	var logs []log
	for _, home := range []string{fixtureHome, testenv.Fixture("home"), testenv.Fixture("diagnose", "home")} {
		st := recorder.Store{Root: home}
		ids, err := st.IDs()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			logs = append(logs, log{id, st.LogPath(id)})
		}
	}
	data, err := os.ReadFile(logs[0].path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	corrupt := bytes.Clone(data)
	corrupt[len(corrupt)/2] ^= 0x20
	torn := data[:len(data)-3]
	for name, b := range map[string][]byte{"corrupt": corrupt, "torn": torn} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, log{name, p})
	}
	logs = append(logs, log{"missing", filepath.Join(dir, "missing")})
	var wants []Report
	for _, l := range logs {
		evs, _, err := recorder.ReadFile(l.path)
		want := Verify(l.id, evs, VerifyOptions{})
		if err != nil {
			want = Report{SessionID: l.id, Status: StatusError, Events: int64(len(evs)), Error: err.Error(), Err: err}
		}
		wants = append(wants, want)
		for _, pipe := range []bool{false, true} {
			if got := VerifyLog(l.id, l.path, pipe); !reflect.DeepEqual(got, want) {
				t.Errorf("VerifyLog(%s, pipeline %v) =\n%+v\nwant\n%+v", l.path, pipe, got, want)
			}
		}
	}
	// One scratch for every log in turn, as a VerifyLogs worker does: the
	// reports (divergences included) must not change when later logs are
	// read into the same buffer.
	sc := &scratch{}
	var got []Report
	for _, l := range logs {
		got = append(got, verifyLog(l.id, l.path, false, sc, nil))
	}
	ids := make([]string, len(logs))
	paths := map[string]string{}
	for i, l := range logs {
		ids[i], paths[l.id] = l.id, l.path
	}
	all := VerifyLogs(ids, func(id string) string { return paths[id] })
	for i := range logs {
		if !reflect.DeepEqual(got[i], wants[i]) {
			t.Errorf("%s after the others were read into its buffer =\n%+v\nwant\n%+v", logs[i].id, got[i], wants[i])
		}
		if !reflect.DeepEqual(all[i], wants[i]) {
			t.Errorf("VerifyLogs: %s =\n%+v\nwant\n%+v", logs[i].id, all[i], wants[i])
		}
	}
}
