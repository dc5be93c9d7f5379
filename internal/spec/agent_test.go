package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const agentHead = "name: x\nmodel: {provider: scripted, id: s, script: m.yaml}\n"

// TestAgentSpecErrors: an external-agent spec that holds what only
// agentctl's own loop uses, or a broken command or environment, is
// refused at the line to change.
func TestAgentSpecErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"no command", agentHead + "agent: {env: {A: b}}\n", `:3: agent.command is required`},
		{"empty arg", agentHead + "agent: {command: [node, \"\"]}\n", `agent.command[1] is empty`},
		{"unknown key", agentHead + "agent:\n  command: [node]\n  enviroment: {}\n", `:5: unknown key "enviroment"`},
		{"reserved env", agentHead + "agent:\n  command: [node]\n  env: {OPENAI_BASE_URL: http://x}\n", `agent.env OPENAI_BASE_URL is set by agentctl`},
		{"sandbox env", agentHead + "agent:\n  command: [node]\n  env: {AGENTCTL_SANDBOX_INIT: x}\n", `reserved for the sandbox`},
		{"bad env name", agentHead + "agent:\n  command: [node]\n  env: {\"A-B\": x}\n", `agent.env "A-B" is not a variable name`},
		{"model change", agentHead + "agent: {command: [node], model_change: allow}\n", `agent.model_change "allow" is not refuse or record`},
		{"replay ignore", agentHead + "agent: {command: [node], replay_ignore: ['req_\\w+', '(']}\n", `agent.replay_ignore "(": error parsing regexp`},
		{"tools", agentHead + "agent: {command: [node]}\ntools: [bash]\n", `:4: tools does not apply to an external agent`},
		{"custom tools", agentHead + "agent: {command: [node]}\ncustom_tools: [{name: t, command: [x]}]\n", `custom_tools does not apply`},
		{"approvals", agentHead + "agent: {command: [node]}\napprovals: [{tool: bash}]\n", `approvals does not apply`},
		{"max_tool_calls", agentHead + "agent: {command: [node]}\nbudget: {max_tool_calls: 3}\n", `budget.max_tool_calls does not apply`},
		{"compaction", agentHead + "agent: {command: [node]}\ncompaction: {window: 1000}\n", `compaction does not apply`},
		{"max_turns", agentHead + "agent: {command: [node]}\nmax_turns: 3\n", `max_turns does not apply`},
		{"no model", "name: x\nagent: {command: [node]}\n", `model.provider is required`},
		{"not a list", agentHead + "agent: {command: node}\n", `is a str, but a list is expected`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "agent.yaml")
			os.WriteFile(p, []byte(tt.yaml), 0o644)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "agent.yaml") {
				t.Errorf("Load = %v, want an error naming the file and containing %q", err, tt.want)
			}
		})
	}
}

// TestAgentSpecLoads: a good external-agent spec needs no prompt, keeps its
// command and env, resolves a command with a slash against the spec's
// folder, and round-trips through the header's JSON.
func TestAgentSpecLoads(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.yaml")
	os.WriteFile(p, []byte(agentHead+"agent:\n  command: [./bin/agent, --fast]\n  env: {AGENT_MODEL: s, DEBUG: \"1\"}\n  model_change: record\n  replay_ignore: ['req_\\w+']\nbudget: {max_tokens: 100, max_wall: 30s}\n"), 0o644)
	sp, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !sp.External() {
		t.Fatal("External() = false for a spec with agent:")
	}
	if got, want := sp.Agent.Command[0], filepath.Join(dir, "bin", "agent"); got != want {
		t.Errorf("command[0] = %q, want %q", got, want)
	}
	if sp.Agent.Env["DEBUG"] != "1" || sp.Agent.ModelChangePolicy() != ModelChangeRecord {
		t.Errorf("agent = %+v", sp.Agent)
	}
	back, err := FromHeader(sp.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if back.Agent == nil || back.Agent.Command[1] != "--fast" || back.Agent.Env["AGENT_MODEL"] != "s" || len(back.Agent.ReplayIgnore) != 1 || back.Agent.ReplayIgnore[0] != `req_\w+` {
		t.Errorf("FromHeader(JSON()).Agent = %+v", back.Agent)
	}
	// A plain spec records no agent key, so its hash is what it was.
	os.WriteFile(p, []byte(agentHead+"prompt: hi\n"), 0o644)
	plain, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if plain.External() || strings.Contains(string(plain.JSON()), `"agent"`) {
		t.Errorf("a spec without agent: records %s", plain.JSON())
	}
	if (&Agent{}).ModelChangePolicy() != ModelChangeRefuse {
		t.Error("default model_change is not refuse")
	}
}
