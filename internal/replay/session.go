package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentctl/agentctl/internal/agent"
	"github.com/agentctl/agentctl/internal/agenthost"
	"github.com/agentctl/agentctl/internal/mcp"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// SessionConfig is a replay of any recorded session: agentctl's own run,
// an external agent's (proxied), or an import.
type SessionConfig struct {
	// Store records the replay; Recordings is the home the session ran
	// in (its subagents' logs, its artifacts) and whose folder the tools'
	// sandbox hides.
	Store      recorder.Store
	Recordings recorder.Store
	SessionID  string
	Events     []session.Event
	// Spec is the spec whose tools (or agent program) run. Nil means the
	// session's own (ContinueSpec, by the rule of the Recordings home):
	// for an import, ImportedSpec with the recorded results standing in
	// for its tools; else the spec file the session ran from, never the
	// log's copy.
	Spec *spec.Spec
	// WorkspaceFrom, if set, is the initial workspace copied instead of
	// the spec's workspace.from.
	WorkspaceFrom string
	// Strict stops at the first difference; Offline serves MCP tools'
	// recorded results instead of starting their servers.
	Strict, Offline bool
	// Ignore are regular expressions of text the replay of an external
	// agent treats as volatile besides replaymatch's table (replay run
	// --ignore, a scenario's replay.ignore).
	Ignore   []string
	Observer runner.Observer
	// Tags label the new session over its spec's (an eval scenario's
	// eval.suite and eval.scenario; runner.Config.Tags).
	Tags map[string]string
}

// SessionReport is what a replay found: Own for agentctl's loop and
// imports, External for an external agent's session (exactly one is set).
type SessionReport struct {
	Own      *RunReport      `json:"-"`
	External *ExternalReport `json:"-"`
	// Imported names the tool the session was imported from, when its
	// recorded results stood in for its tools.
	Imported string `json:"-"`
}

// ExternalReport is the replay of an external agent's session: the
// program ran again, the proxy answered from the recording. Its JSON
// fields only grow (`replay run --json`).
type ExternalReport struct {
	SessionID       string          `json:"session_id"`
	ReplaySessionID string          `json:"replay_session_id"`
	LogStatus       string          `json:"log_status"`
	ReplayStatus    string          `json:"replay_status"`
	ReplayReason    string          `json:"replay_reason,omitempty"`
	RecordedTurns   int             `json:"recorded_turns"`
	Turns           int             `json:"turns"`
	Findings        []proxy.Finding `json:"findings"`
	Diverged        bool            `json:"diverged"`
	Kept            bool            `json:"kept"`
	// Normalised is what each normaliser changed (name, count, turns);
	// ContentCaptured false says the session recorded no content, so only
	// the turn count, tool names and model were compared.
	Normalised      []replaymatch.Change `json:"normalised"`
	ContentCaptured bool                 `json:"content_captured"`
}

// ReplaySessionID is the replay's own session, "" when none was recorded.
func (r SessionReport) ReplaySessionID() string {
	if r.External != nil {
		return r.External.ReplaySessionID
	}
	if r.Own != nil {
		return r.Own.ReplaySessionID
	}
	return ""
}

// Differs reports whether the replay did not reproduce the recording: a
// tool result, an MCP server's tool set or the status differs, or the
// external agent's calls diverged.
func (r SessionReport) Differs() bool {
	if r.External != nil {
		return r.External.Diverged || r.External.ReplayStatus != r.External.LogStatus
	}
	return r.Own != nil && len(r.Own.Differences) > 0
}

// Session replays a recorded session, choosing how from the session
// itself, so `agentctl replay run` and an eval's replay: scenario do the
// same: an external agent's program runs again behind a proxy that
// answers from the recording, offline (replayExternal); agentctl's own
// loop re-runs its tools against the recorded model (Run), with the MCP
// servers' tool sets compared with the recorded ones first; an import
// answers from its recorded results. The error is set with a report when
// the replay ran but could not finish; without one nothing was replayed.
func Session(ctx context.Context, cfg SessionConfig) (SessionReport, error) {
	id, evs := cfg.SessionID, cfg.Events
	if len(evs) == 0 {
		return SessionReport{}, fmt.Errorf("replay %s: the log has no events", id)
	}
	sp, imported := cfg.Spec, ""
	if sp == nil {
		var err error
		if sp, imported, _, err = ContinueSpec(cfg.Recordings.Root, evs, ""); err != nil {
			return SessionReport{}, fmt.Errorf("replay %s: %w", id, err)
		}
	}
	if cfg.WorkspaceFrom != "" {
		sp.Workspace.From, sp.Workspace.Path = cfg.WorkspaceFrom, ""
	}
	if sp.Workspace.From != "" {
		if _, err := os.Stat(sp.Workspace.From); err != nil {
			return SessionReport{}, fmt.Errorf("replay %s: the initial workspace %s: %w (hint: --workspace-from DIR)", id, sp.Workspace.From, err)
		}
	}
	if sp.External() {
		rep, err := replayExternal(ctx, cfg, sp)
		return SessionReport{External: rep}, err
	}
	reg := RecordedTools(evs)
	var mcpChanges []ToolDiff
	if imported == "" {
		var offline []session.Event
		if cfg.Offline {
			offline = evs
		}
		var err error
		if reg, err = agent.Tools(sp, cfg.Recordings.Root, offline...); err != nil {
			return SessionReport{}, fmt.Errorf("replay %s: %w", id, err)
		}
		if mcpChanges, err = toolSetChanges(evs[0], mcp.ServersOf(reg)); err != nil {
			return SessionReport{}, fmt.Errorf("replay %s: %w", id, err)
		}
	}
	src := cfg.Recordings
	rep, err := Run(ctx, RunConfig{Store: cfg.Store, SessionID: id, Events: evs, Spec: sp, Tools: reg, Strict: cfg.Strict,
		Observer: cfg.Observer, Recordings: &src, Tags: cfg.Tags})
	if err != nil && rep.ReplaySessionID == "" {
		return SessionReport{}, err
	}
	rep.Differences = append(append([]ToolDiff{}, mcpChanges...), rep.Differences...) // [] in --json, never null
	return SessionReport{Own: &rep, Imported: imported}, err
}

// toolSetChanges compares the MCP servers a session's header recorded with
// those listed now (mcp.ServersOf a registry), as differences of code
// CodeMCPToolsChanged: a server whose tools changed makes a replay's
// results incomparable before a call runs.
func toolSetChanges(hdr session.Event, now []session.MCPServer) ([]ToolDiff, error) {
	recorded, err := session.HeaderMCPServers(hdr)
	if err != nil {
		return nil, err
	}
	var out []ToolDiff
	for _, c := range mcp.Changes(recorded, now) {
		out = append(out, ToolDiff{Code: CodeMCPToolsChanged, Tool: c.Server, Field: "tools_hash",
			Log: c.Recorded, Replay: c.Current + " (" + c.Detail + ")"})
	}
	return out, nil
}

// replayExternal re-runs an external agent against its recording: the
// program starts again in a fresh workspace, under the sandbox with the
// network namespace empty (the spec's allowlist and network: allow are
// dropped), and the proxy answers each model call with the recorded bytes
// (proxy.Replay: matched by position, volatile parts reported, Strict for
// any difference). A call that diverges gets a provider-shaped error
// naming the turn.
func replayExternal(ctx context.Context, cfg SessionConfig, sp *spec.Spec) (*ExternalReport, error) {
	id, evs, src := cfg.SessionID, cfg.Events, cfg.Recordings
	exprs := cfg.Ignore
	if sp.Agent != nil {
		exprs = append(append([]string{}, sp.Agent.ReplayIgnore...), cfg.Ignore...)
	}
	ignore, err := replaymatch.Ignores(exprs)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", id, err)
	}
	// The run's side threads (its agent's title or quota calls) are
	// sessions of their own: each thread of the agent is served its own
	// recorded answers.
	sides, err := proxy.SideThreads(src, id)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", id, err)
	}
	rb, err := proxy.NewReplay(proxy.ReplayConfig{Events: evs, Strict: cfg.Strict, Ignore: ignore, Sides: sides,
		Artifacts: func(rel string) ([]byte, error) { return proxy.ReadArtifact(src.SessionDir(id), rel) }})
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", id, err)
	}
	// Offline: nothing but the proxy is reachable from the agent.
	sp.Sandbox.Network, sp.Sandbox.Allow = sandbox.NetworkDeny, nil
	res, err := runner.Start(ctx, runner.Config{Spec: sp, Store: cfg.Store, Agent: &agenthost.Agent{Backend: rb, ReplayOf: id}, Observer: cfg.Observer, Tags: cfg.Tags})
	if err != nil && res.SessionID == "" {
		return nil, fmt.Errorf("replay %s: %w", id, err)
	}
	rep := &ExternalReport{SessionID: id, ReplaySessionID: res.SessionID, LogStatus: string(session.Fold(evs).Status()),
		ReplayStatus: string(res.Status), ReplayReason: res.Reason, RecordedTurns: rb.Turns(), Turns: res.Turns,
		Findings: rb.Findings(), Diverged: rb.Diverged(), Kept: cfg.Store.Root == src.Root,
		Normalised: rb.Normalised(), ContentCaptured: rb.ContentCaptured()}
	if rep.Findings == nil {
		rep.Findings = []proxy.Finding{}
	}
	return rep, err
}

// StandIn names the source whose recorded tool results stand in for the
// tools when the session with header hdr is replayed with no spec file:
// the tool an import came from (session.ImportedFrom), "proxy" for a
// session `agentctl proxy` recorded for a program agentctl did not start
// (no spec file, so no program to re-run: its recorded model turns meet
// the agent's tool results as its next request carried them), else "".
func StandIn(hdr session.Event) string {
	if from := session.ImportedFrom(hdr); from != "" {
		return from
	}
	if bareProxied(hdr) {
		return "proxy"
	}
	return ""
}

func bareProxied(hdr session.Event) bool {
	if hdr.SpecPath != "" || len(hdr.Attrs) == 0 {
		return false
	}
	var a struct {
		By string `json:"recorded_by"`
	}
	return json.Unmarshal(hdr.Attrs, &a) == nil && a.By == "proxy"
}
