// Package failpoint kills the process at a named point of a multi-step
// write (a seal, a compaction, a push, a bundle, a session's creation)
// when an environment variable names that point, so crash tests can run
// the real binary and SIGKILL it exactly there. SIGKILL leaves no chance
// to clean up, as a power cut or an OOM kill would not.
//
// Each package that has such points declares its own variable and point
// names (history.FailpointEnv, ...); this is the one way they die.
package failpoint

import "os"

// Hit kills the process when the environment variable env names point.
func Hit(env, point string) {
	if os.Getenv(env) == point {
		Kill()
	}
}

// Kill sends SIGKILL to the process and never returns: the signal is
// delivered asynchronously, and nothing after the point may run.
func Kill() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill() // SIGKILL on unix
	}
	select {}
}
