package mcp

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/redact"
)

// The stderr of real crashing runtimes, each ending in lines that say
// nothing of the error (Node's version line, a traceback's frames): Tail
// must name the error.
func TestTailNamesTheErrorOfRealCrashes(t *testing.T) {
	cases := []struct {
		name string
		argv []string
		want string
	}{
		{"node throw", []string{"node", "-e", "throw new Error('NOTES_DB is not set')"}, "Error: NOTES_DB is not set"},
		{"node missing module", []string{"node", "/nonexistent/server/index.js"}, "Error: Cannot find module '/nonexistent/server/index.js'"},
		{"node unhandled rejection", []string{"node", "-e", "Promise.reject(new TypeError('bad config'))"}, "TypeError: bad config"},
		{"python import", []string{"python3", "-c", "import no_such_module_here"}, "ModuleNotFoundError: No module named 'no_such_module_here'"},
		{"python raise", []string{"python3", "-c", "raise SystemError('port in use')"}, "SystemError: port in use"},
		{"shell message", []string{"sh", "-c", "echo starting >&2; echo cannot find my config >&2; exit 7"}, "cannot find my config"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.argv[0]); err != nil {
				t.Skipf("%s is not installed", c.argv[0])
			}
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			s := openStderr("", redact.New())
			cmd.Stderr = s
			if err := cmd.Run(); err == nil {
				t.Fatal("the process did not fail")
			}
			if got := s.Tail(); got != c.want {
				t.Errorf("Tail() = %q, want %q\nstderr:\n%s", got, c.want, s.tail)
			}
		})
	}
}

func TestCrashLineFallsBackToLastWords(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		"only line\n":                  "only line",
		"listening\nshutting down\n\n": "shutting down",
		"Node.js v20.20.2\n":           "Node.js v20.20.2",
		"bye\n    at x (y.js:1:1)\nNode.js v20\n": "bye",
	} {
		if got := crashLine(in); got != want {
			t.Errorf("crashLine(%q) = %q, want %q", in, got, want)
		}
	}
	if !strings.Contains(crashLine("panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/x.go:3 +0x1d\nexit status 2\n"), "panic: boom") {
		t.Error("a Go panic is not named")
	}
}
