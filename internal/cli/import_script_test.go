package cli_test

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/internal/transcript/transcripttest"
)

// cc21 SRC DST: write to DST the Claude Code transcript SRC (a real corpus
// file) in the shape Claude Code 2.1.x writes parallel calls in, each
// result hanging off its own call's line (transcripttest.ClaudeCode21):
// the corpus holds no 2.1.x file with parallel calls.
func cc21(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: cc21 SRC DST")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	out, err := transcripttest.ClaudeCode21(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Join(out, "\n")+"\n"), 0o644))
}

// jsonset SRC DST KEY=JSON... -KEY...: write to DST the JSON object in SRC
// (a real corpus file) with top-level KEY set to the JSON value, or, for
// -KEY, removed: a variant of a real file, for a case the corpus lacks,
// that says in the script what it changed.
func jsonSet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: jsonset SRC DST KEY=JSON... -KEY...")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var doc map[string]json.RawMessage
	ts.Check(json.Unmarshal(b, &doc))
	for _, a := range args[2:] {
		if k, ok := strings.CutPrefix(a, "-"); ok {
			delete(doc, k)
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok || !json.Valid([]byte(v)) {
			ts.Fatalf("jsonset: %q is not KEY=JSON", a)
		}
		doc[k] = json.RawMessage(v)
	}
	out, err := json.Marshal(doc)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), out, 0o644))
}
