// Package agenthost runs agents agentctl does not drive: the program a
// spec's agent: names, started in the sandbox with agentctl's proxy served
// inside its network namespace (sandbox.Config.Serve), so the proxy is all
// it can reach. The proxy records the program's model calls into the
// session through a Sink that appends via the runner's Host (one fold for
// everything, serialised: calls arrive on the proxy's goroutines), and its
// Policy enforces the pinned model (agent.model_change), the budget at
// dispatch and, with a deadline on the program, max_wall. SIGINT reaches
// the program's process group and its namespace; agentGrace later it is
// killed. Its exit status decides the end: done checks after exit 0,
// failed (agent_failed) otherwise.
//
// A call of the program that shares nothing with its conversation (a
// title or quota call: session.Route, in the proxy) is a side thread,
// recorded as a session of its own (proxy.Config.OpenSide) so that the
// run's log stays one conversation. Its spend is the run's: the side
// sink folds it in memory and the policy charges it with the log's
// (runner.Host.SpentWith). Memory suffices because an external agent's
// run is never resumed, so its budget lives within one invocation. A
// side thread that diverged in a replay fails the run as a divergence of
// its own conversation would.
//
// It is apart from the runner so the runner does not link the proxy, and
// so everything about the program (its environment, its process, its
// fork) is in one place. A fork (Fork) runs the program again from its
// start, its first calls served from the recording and the rest live.
package agenthost
