package view_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestNoRunnerDeps holds view and diagnose to the pure checks: they read
// recorded logs, so they must not link what re-executes them (the runner,
// its tools, sandbox and MCP client) or a vendor SDK. Before replay/check
// they did, through package replay: 352 and 452 packages, the three SDKs
// among them.
func TestNoRunnerDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH to list the dependencies with")
	}
	forbidden := []string{
		"github.com/openai/openai-go",
		"github.com/anthropics/anthropic-sdk-go",
		"github.com/modelcontextprotocol/go-sdk",
		"github.com/agentctl/agentctl/runner",
	}
	for _, pkg := range []string{"github.com/agentctl/agentctl/view", "github.com/agentctl/agentctl/diagnose"} {
		t.Run(pkg, func(t *testing.T) {
			out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
				}
				t.Fatalf("go list -deps %s: %v", pkg, err)
			}
			deps := strings.Fields(string(out))
			var bad []string
			for _, dep := range deps {
				for _, f := range forbidden {
					if strings.HasPrefix(dep, f) {
						bad = append(bad, dep)
					}
				}
			}
			if len(bad) > 0 {
				t.Errorf("%s links %d of its %d packages from the runner or a vendor SDK (`go list -f '{{.ImportPath}}: {{.Imports}}' -deps %s` shows through what):\n%s",
					pkg, len(bad), len(deps), pkg, strings.Join(bad, "\n"))
			}
			t.Logf("%s: %d packages", pkg, len(deps))
		})
	}
}
