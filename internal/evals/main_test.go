package evals_test

import (
	"context"
	"os"
	"testing"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/sandbox"
)

// asAgentctl makes this test binary act as the agentctl binary, so
// crash_safe assertions (which run agentctl children) work in tests.
const asAgentctl = "AGENTCTL_EVALS_TEST_AS_AGENTCTL"

// TestMain lets this test binary host the sandbox (done checks and custom
// tools re-execute it) and stand in for agentctl.
func TestMain(m *testing.M) {
	sandbox.Init()
	if os.Getenv(asAgentctl) == "1" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	}
	os.Setenv(asAgentctl, "1")
	os.Exit(m.Run())
}
