package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// A production case: a session recorded from a program agentctl did not
// start (collected from its telemetry, recorded by `agentctl proxy` with no
// spec, imported) has no spec that names the program, so Session would
// answer its replay from the recording alone and the program would never
// run. Program names the program, and ProgramSpec makes the external-agent
// spec that runs it behind the replaying proxy (Session, with its Spec) or
// onto another model from a turn on (ForkSession, at ForkSeqOfTurn).

// Program is a program to run against a recorded session's model traffic.
type Program struct {
	// Command is a shell command line (sh -c), run in the workspace.
	Command string
	// WorkspaceFrom is the folder copied, fresh for every run, into the
	// workspace the program starts in ("": an empty one).
	WorkspaceFrom string
	// ReadOnly are host folders the program may read besides the
	// sandbox's own (a node_modules a link in the workspace points to);
	// Env are names of variables passed through from agentctl's
	// environment.
	ReadOnly, Env []string
}

// ProgramWall bounds one run of a Program (the spec's budget.max_wall): a
// program that waits forever on a model that will not answer must not
// hold a CI job.
const ProgramWall = 10 * time.Minute

// ProgramSpec is the spec that runs p as the external agent of the
// recorded session evs: pinned to the model the session recorded (a
// request for another is recorded as model_changed, as the recording's
// program may have asked for several), its network the proxy alone, no
// done checks (the program's exit status is its outcome).
func ProgramSpec(evs []session.Event, p Program) *spec.Spec {
	hdr := evs[0]
	name := hdr.Name
	if name == "" {
		name = "program"
	}
	return &spec.Spec{
		Name:      name,
		Model:     spec.Model{Provider: hdr.Provider, ID: recordedModel(evs), MaxTokens: spec.DefaultMaxTokens},
		Mode:      tools.ModeWrite,
		Workspace: spec.Workspace{From: p.WorkspaceFrom},
		Agent: &spec.Agent{Command: []string{"sh", "-c", p.Command},
			ModelChange: spec.ModelChangeRecord},
		Sandbox: spec.Sandbox{ReadOnly: slices.Clone(p.ReadOnly), Env: slices.Clone(p.Env)},
		Budget:  spec.Budget{MaxWall: spec.Duration(ProgramWall)},
	}
}

// recordedModel is the model the session pinned, else the first its
// model calls name (a collected session's header may have none).
func recordedModel(evs []session.Event) string {
	if evs[0].Model != "" {
		return evs[0].Model
	}
	for _, e := range evs {
		if e.Kind == session.KindModelCall && e.Model != "" {
			return e.Model
		}
	}
	return ""
}

// RecordedTurns is the number of model calls a replay of evs serves (the
// turns proxy.Replay counts).
func RecordedTurns(evs []session.Event) (int, error) {
	rb, err := proxy.NewReplay(proxy.ReplayConfig{Events: evs})
	if err != nil {
		return 0, err
	}
	return rb.Turns(), nil
}

// ForkSeqOfTurn is the seq a fork that goes live at model turn n (1-based)
// is made at: the recorded model_call of turn n-1, so turns 1..n-1 are
// replayed (proxy.TurnsThrough of it is n-1), or the session's first
// event for n = 1 (everything live).
func ForkSeqOfTurn(evs []session.Event, n int) (int64, error) {
	rb, err := proxy.NewReplay(proxy.ReplayConfig{Events: evs})
	if err != nil {
		return 0, err
	}
	switch turns := rb.Turns(); {
	case n < 1:
		return 0, fmt.Errorf("turn %d: turns count from 1", n)
	case n > turns:
		return 0, fmt.Errorf("turn %d: the session recorded %d model calls; go live at turn 1..%d", n, turns, turns)
	case n == 1:
		return evs[0].Seq, nil
	}
	return rb.TurnSeq(n - 1), nil
}

// Outcome is how a session ended, as a program's replay must end too:
// its status and its final answer (the text of its last assistant
// message).
type Outcome struct {
	Status session.Status `json:"status"`
	Answer string         `json:"answer"`
}

// RecordedOutcome is the outcome of a recorded session: the status its
// session_finished records, or for a session that records none of
// agentctl's (an import, a collected trace: status imported) done when its
// last assistant message called no tool, else failed.
func RecordedOutcome(evs []session.Event) Outcome {
	var o Outcome
	last := -1
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == session.KindAssistantMessage && !fromRequest(evs[i]) {
			last = i
			break
		}
	}
	if last >= 0 {
		o.Answer = evs[last].Text
	}
	st := session.Fold(evs).Status()
	switch {
	case st != session.StatusImported && st != "":
		o.Status = st
	case last >= 0 && len(evs[last].ToolCalls) == 0:
		o.Status = session.StatusDone
	default:
		o.Status = session.StatusFailed
	}
	return o
}

// fromRequest reports an assistant message the proxy recorded from a
// request's history (the program's own message, not a model answer).
func fromRequest(e session.Event) bool {
	var a struct {
		FromRequest bool `json:"from_request"`
	}
	return len(e.Attrs) > 0 && json.Unmarshal(e.Attrs, &a) == nil && a.FromRequest
}
