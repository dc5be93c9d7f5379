// Package agent is the composition root: it turns a spec into what runs
// it, the model provider, the tool registry (built-ins of the mode, the
// spec's commands, the MCP servers' tools, the mode check over all of
// them) and, for an external agent, the proxy's model backend, so that
// `agentctl run`, resume, replay, eval and the tests assemble an agent
// the same way.
//
// Before this package, the command line, the eval runner and three test
// helpers each built the registry by hand; one dropped the tools'
// descriptions, none of the test copies applied the mode check or listed
// MCP tools, and the providers' default base URLs were written in three
// places. Here each rule is written once:
//
//	cfg, err := agent.Config(sp, home) // runner.Config{Spec, Provider, Tools, NewProvider} or {Spec, Backend}
//	res, err := runner.Start(ctx, cfg)
//
// home is the agentctl home: the sandbox of the tools and of MCP servers
// hides it (with the credential folders) from what the agent runs.
package agent
