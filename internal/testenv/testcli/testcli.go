// Package testcli runs agentctl's command tree in the test's own process,
// as a user would run the binary, against a home of the test's.
//
// It is apart from testenv because it links the whole command tree: only
// tests outside the packages the CLI imports can use it.
package testcli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/cli"
)

// Result is one command's exit status and output.
type Result struct {
	Code   int
	Stdout string
	Stderr string
}

// Run runs `agentctl --home HOME ARGS...` with empty stdin.
func Run(t testing.TB, home string, args ...string) Result {
	t.Helper()
	return RunContext(context.Background(), t, home, args...)
}

// RunContext is Run under ctx (a test's deadline or cancel).
func RunContext(ctx context.Context, t testing.TB, home string, args ...string) Result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(ctx, append([]string{"--home", home}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return Result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}

// Must is Run that fails t unless the command exits 0.
func Must(t testing.TB, home string, args ...string) Result {
	t.Helper()
	r := Run(t, home, args...)
	if r.Code != 0 {
		t.Fatalf("agentctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r
}
