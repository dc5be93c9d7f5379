package check

import (
	"flag"
	"os"
	"testing"

	"github.com/agentctl/agentctl/internal/sandbox"
)

var update = flag.Bool("update", false, "rewrite golden files and recorded fixtures under testdata/")

// TestMain lets this test binary host the sandbox: the tests record
// fixture agents with today's runner (replaytest.Record), and their bash,
// custom tools and done checks re-execute it as the sandbox's init. Only
// the tests link the runner; package check does not.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
