package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// FailpointEnv names the environment variable that makes the runner kill
// its own process with SIGKILL at a chosen point, for crash injection
// (`agentctl crashtest`). It is part of every build on purpose: the binary
// that is crash-tested is the binary that ships. Values:
//
//	after:N    right after event seq N is durable
//	in-tool:N  inside the tool call whose tool_intent is seq N, after the
//	           tool's effect and before its result is recorded
const FailpointEnv = "AGENTCTL_FAILPOINT"

type failpoint struct {
	kind string
	seq  int64
	// hook, when set (Config.Failpoint), is called at every point instead:
	// in-process crash injection, where the caller decides what a crash is.
	hook func(kind string, seq int64)
}

func parseFailpoint(v string) (failpoint, error) {
	if v == "" {
		return failpoint{}, nil
	}
	kind, n, ok := strings.Cut(v, ":")
	seq, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || seq < 1 || (kind != "after" && kind != "in-tool") {
		return failpoint{}, fmt.Errorf("%s=%q: use after:SEQ or in-tool:SEQ", FailpointEnv, v)
	}
	return failpoint{kind: kind, seq: seq}, nil
}

// loadFailpoint reads the variable once per run; a malformed value is an
// error rather than a run that silently never crashes.
func loadFailpoint(hook func(string, int64)) (failpoint, error) {
	if hook != nil {
		return failpoint{hook: hook}, nil
	}
	return parseFailpoint(os.Getenv(FailpointEnv))
}

// hit kills the process if the failpoint is (kind, seq). SIGKILL gives no
// chance to clean up, as a power cut or an OOM kill would not.
func (f failpoint) hit(kind string, seq int64) {
	if f.hook != nil {
		f.hook(kind, seq)
		return
	}
	if f.kind == kind && f.seq == seq {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously; never go on
	}
}
