package evals

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/spec"
)

// Not run. A scenario that cannot run on this machine is not run, and the
// report says why (ScenarioResult.NotRunReason), instead of running it
// into an error that fails it: a fork's pull request gets no secrets, and
// its eval must not show every live scenario as a regression of the
// program. What a scenario needs is checked before any of it runs: the API
// key of every model it calls live (spec.Model.NeedsKey: the agent's
// model, a fork's, a reviewer's) and what its requires: names.
//
// A not-run scenario is neither passed nor failed (Report.NotRun counts
// it). Against a baseline it is not_run, never regressed or missing, and
// does not fail the gate. A report with a not-run scenario is not OK (its
// JSON "ok" does not claim a pass it did not see) and not Complete (it is
// never a history: baseline); the exit status of
// `agentctl eval` is 0 when every scenario that ran passed and at least
// one ran, and a code of its own (10) when none ran; --require-all makes
// any not-run scenario exit 10.

// notRun says why sc cannot run here, "" when it can.
func (e *engine) notRun(sc *Scenario) string {
	getenv, look := e.cfg.Getenv, e.cfg.LookPath
	if getenv == nil {
		getenv = os.Getenv
	}
	if look == nil {
		look = exec.LookPath
	}
	var why []string
	seen := map[string]bool{}
	key := func(m spec.Model, whose string) {
		if v := m.KeyEnv(); m.NeedsKey() && !seen[v] && getenv(v) == "" {
			seen[v] = true
			why = append(why, fmt.Sprintf("%s is not set (the API key of %s model %s/%s)", v, whose, m.Provider, m.ID))
		}
	}
	switch {
	case sc.Spec != nil:
		key(sc.Spec.Model, "the agent's")
	case sc.Replay != nil && sc.Replay.ForkFrom > 0 && sc.Model != nil:
		key(*sc.Model, "the fork's")
	case sc.Replay != nil && sc.Replay.ForkFrom > 0:
		if m, ok := e.pinned(sc.Replay); ok {
			key(m, "the fork's (the session's pinned)")
		}
	}
	for i := range sc.Assert {
		if r := sc.Assert[i].Reviewer; r != nil {
			key(r.Model, "the reviewer's")
		}
	}
	if r := sc.Requires; r != nil {
		for _, v := range r.Env {
			if !seen[v] && getenv(v) == "" {
				seen[v] = true
				why = append(why, v+" is not set (requires.env)")
			}
		}
		for _, c := range r.Commands {
			if _, err := look(c); err != nil {
				why = append(why, c+" is not installed (requires.commands)")
			}
		}
	}
	return strings.Join(why, "; ")
}

// pinned is the model a fork without a model of its own goes on with
// (replay.ContinueSpec), when the session can be read; a session that
// cannot is the run's error to report.
func (e *engine) pinned(rp *Replay) (spec.Model, bool) {
	src := e.cfg.Store
	if rp.Home != "" {
		src = recorder.Store{Root: rp.Home}
	}
	id, err := src.Resolve(rp.Session)
	if err != nil {
		return spec.Model{}, false
	}
	evs, _, err := src.Load(id)
	if err != nil || len(evs) == 0 {
		return spec.Model{}, false
	}
	sp, _, _, err := replay.ContinueSpec(src.Root, evs, "")
	if err != nil {
		return spec.Model{}, false
	}
	return sp.Model, true
}
