package tools

import (
	"os"
	"testing"

	"github.com/agentctl/agentctl/internal/sandbox"
)

// TestMain lets this test binary host the sandbox: bash and custom tools
// re-execute it as the sandbox's init.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
