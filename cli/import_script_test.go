package cli_test

import (
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/transcript/transcripttest"
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
