package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	killpoint "github.com/agentctl/agentctl/internal/failpoint"
)

// FailpointEnv names the environment variable that makes the runner kill
// its own process with SIGKILL at a chosen point, for crash injection
// (`agentctl crashtest`). It is part of every build on purpose: the binary
// that is crash-tested is the binary that ships. Values:
//
//	after:N    right after event seq N is durable
//	in-tool:N  inside the tool call whose tool_intent is seq N, after the
//	           tool's effect and before its result is recorded
//
// Either may end in @SESSION to name a subagent's session instead of the
// one `run` or `resume` was given: after:4@9c1b… kills the process right
// after the child's event 4 (the parent and the child die together).
const FailpointEnv = "AGENTCTL_FAILPOINT"

type failpoint struct {
	kind string
	seq  int64
	// session is the subagent the point names ("" for the top session).
	session string
	// hook, when set (Config.Failpoint), is called at every point instead:
	// in-process crash injection, where the caller decides what a crash is.
	hook func(kind string, seq int64)
}

func parseFailpoint(v string) (failpoint, error) {
	if v == "" {
		return failpoint{}, nil
	}
	v, sess, at := strings.Cut(v, "@")
	kind, n, ok := strings.Cut(v, ":")
	ok = ok && (!at || sess != "")
	seq, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || seq < 1 || (kind != "after" && kind != "in-tool") {
		return failpoint{}, fmt.Errorf("%s=%q: use after:SEQ or in-tool:SEQ, optionally followed by @SESSION", FailpointEnv, v)
	}
	return failpoint{kind: kind, seq: seq, session: sess}, nil
}

// loadFailpoint reads the variable once per run; a malformed value is an
// error rather than a run that silently never crashes. A point fires in
// the session it names: a subagent's (sub, its id) only with @id, the top
// session only without.
func loadFailpoint(hook func(string, int64), sub string) (failpoint, error) {
	if hook != nil {
		return failpoint{hook: hook}, nil
	}
	f, err := parseFailpoint(os.Getenv(FailpointEnv))
	if err == nil && f.session != sub {
		f = failpoint{}
	}
	return f, err
}

// childFailpoint is a subagent's Config.Failpoint: an in-process hook of
// the parent's, told the child's points as KIND@CHILD; nil (the
// environment's, for the child's own id) when the parent has none.
func childFailpoint(parent func(string, int64), child string) func(string, int64) {
	if parent == nil {
		return nil
	}
	return func(kind string, seq int64) { parent(kind+"@"+child, seq) }
}

// hit kills the process if the failpoint is (kind, seq). SIGKILL gives no
// chance to clean up, as a power cut or an OOM kill would not.
func (f failpoint) hit(kind string, seq int64) {
	if f.hook != nil {
		f.hook(kind, seq)
		return
	}
	if f.kind == kind && f.seq == seq {
		killpoint.Kill()
	}
}
