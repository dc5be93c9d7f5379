package view_test

import (
	"testing"

	"github.com/agentctl/agentctl/internal/testenv"
)

// TestNoRunnerDeps holds view and diagnose to the pure checks: they read
// recorded logs, so they must not link what re-executes them (the runner,
// its tools, sandbox and MCP client) or a vendor SDK. Before internal/replay/check
// they did, through package replay: 352 and 452 packages, the three SDKs
// among them.
func TestNoRunnerDeps(t *testing.T) {
	for _, pkg := range []string{"github.com/agentctl/agentctl/internal/view", "github.com/agentctl/agentctl/internal/diagnose"} {
		t.Run(pkg, func(t *testing.T) {
			testenv.LinksNone(t, pkg,
				"github.com/openai/openai-go",
				"github.com/anthropics/anthropic-sdk-go",
				"github.com/modelcontextprotocol/go-sdk",
				"github.com/agentctl/agentctl/internal/runner")
		})
	}
}
