package replay

import (
	"os"
	"testing"

	"github.com/agentctl/agentctl/internal/sandbox"
)

// TestMain lets this test binary host the sandbox: bash, custom tools and
// done checks re-execute it as the sandbox's init.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
