package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/fixtures"
	"github.com/agentctl/agentctl/internal/agent"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// SpecFile loads the spec file a recorded session goes on with (resume,
// replay run, replay fork, an eval's replay: and fork_from:): specFile
// when the caller names one, else the file the header records, by the
// rule of the home the session was recorded in:
//
//   - the embedded default agent's spec (home/default-agent/, where `run`
//     with no spec extracts it) is extracted again first, so a session of
//     the default agent goes on once that folder is gone or was edited;
//   - any other recorded spec inside the home is refused: a home from
//     elsewhere (a CI artifact, a colleague's) could have placed it there,
//     and a spec names the commands that run;
//   - else the recorded file, as spec.ForSession loads it.
//
// changes lists the top-level keys the file changed since the session
// recorded it (spec.Changes).
func SpecFile(home string, hdr session.Event, specFile string) (sp *spec.Spec, changes []string, err error) {
	if specFile == "" && hdr.SpecPath != "" {
		home, err := filepath.Abs(home)
		if err != nil {
			return nil, nil, err
		}
		rec := filepath.Clean(hdr.SpecPath)
		defaultDir := filepath.Join(home, "default-agent")
		switch {
		case rec == filepath.Join(defaultDir, fixtures.DefaultAgent):
			if err := extractDefault(defaultDir); err != nil {
				return nil, nil, fmt.Errorf("extract the embedded default agent: %w", err)
			}
		case rec == home || strings.HasPrefix(rec, home+string(filepath.Separator)):
			return nil, nil, fmt.Errorf("the session's recorded spec %s is inside the agentctl home, where a home from elsewhere could have placed it; pass --spec FILE with the spec to go on with", rec)
		}
	}
	if sp, err = spec.ForSession(hdr, specFile); err != nil {
		return nil, nil, err
	}
	return sp, spec.Changes(hdr, sp), nil
}

// extracted holds the default-agent folders this process extracted: an
// eval replays many sessions at once, and extracting replaces the folder
// whole, under the feet of a run reading it.
var extracted struct {
	sync.Mutex
	dirs map[string]bool
}

func extractDefault(dir string) error {
	extracted.Lock()
	defer extracted.Unlock()
	if _, err := os.Stat(filepath.Join(dir, fixtures.DefaultAgent)); err == nil && extracted.dirs[dir] {
		return nil
	}
	if _, err := fixtures.Extract(dir); err != nil {
		return err
	}
	if extracted.dirs == nil {
		extracted.dirs = map[string]bool{}
	}
	extracted.dirs[dir] = true
	return nil
}

// ContinueSpec is the spec a recorded session goes on with: for an import
// or a bare proxied session (StandIn) with no specFile, the minimal
// ImportedSpec made from its events, whose tools are its recorded results
// (standIn names its source); else SpecFile's.
func ContinueSpec(home string, evs []session.Event, specFile string) (sp *spec.Spec, standIn string, changes []string, err error) {
	if len(evs) == 0 {
		return nil, "", nil, fmt.Errorf("the log has no events")
	}
	if standIn = StandIn(evs[0]); standIn != "" && specFile == "" {
		return ImportedSpec(evs), standIn, nil, nil
	}
	sp, changes, err = SpecFile(home, evs[0], specFile)
	return sp, "", changes, err
}

// ForkSessionConfig is a fork of any recorded session: agentctl's own
// run, an external agent's, or an import.
type ForkSessionConfig struct {
	// Store records the fork; Recordings is the home the session was
	// recorded in (its artifacts: an external agent's raw bodies).
	Store, Recordings recorder.Store
	SessionID         string
	Events            []session.Event
	// From is the last seq of the session the fork keeps.
	From int64
	// Spec is the spec the session goes on with (ContinueSpec); StandIn
	// says it is an import's minimal spec, whose tools say they cannot
	// run here.
	Spec    *spec.Spec
	StandIn bool
	// Model, if set, is the model the fork goes live on instead of the
	// session's pinned one.
	Model *spec.Model
	// Prompt, RerunBash: see ForkConfig. Neither applies to an external
	// agent, whose requests and tools are the program's own.
	Prompt    string
	RerunBash bool
	ForkID    string
	Observer  runner.Observer
	// Tags label the new session over its spec's (an eval scenario's
	// eval.suite and eval.scenario; runner.Config.Tags).
	Tags map[string]string
}

// ForkSessionReport is what a fork made: Own for agentctl's loop and
// imports, External for an external agent's session (exactly one is set).
type ForkSessionReport struct {
	Own      *ForkReport
	External *ExternalForkReport
	// Model is the model the fork went live on.
	Model spec.Model
}

// SessionID is the fork's session, "" when none was made.
func (r ForkSessionReport) SessionID() string {
	if r.External != nil {
		return r.External.SessionID
	}
	if r.Own != nil {
		return r.Own.SessionID
	}
	return ""
}

// Result is the fork's run.
func (r ForkSessionReport) Result() runner.Result {
	if r.External != nil {
		return r.External.Result
	}
	if r.Own != nil {
		return r.Own.Result
	}
	return runner.Result{}
}

// ForkSession forks a recorded session at seq From, choosing how from the
// spec it goes on with, so `agentctl replay fork` and an eval's
// fork_from: scenario do the same: an external agent runs again with its
// first calls served from the recording (ForkExternal); agentctl's own
// loop and an import copy the events and go on live (Fork), an import's
// tools saying they cannot run here. The error is set with a report when
// the fork ran but did not end well; without a session nothing was made.
func ForkSession(ctx context.Context, cfg ForkSessionConfig) (ForkSessionReport, error) {
	id := cfg.SessionID
	live := *cfg.Spec // the caller's spec is not changed
	if cfg.Model != nil {
		live.Model = *cfg.Model
	}
	rep := ForkSessionReport{Model: live.Model}
	if cfg.Spec.External() {
		if cfg.Prompt != "" {
			return rep, fmt.Errorf("fork %s: a prompt: the session ran an external agent, whose requests come from the program itself (its first message is the spec's prompt, which its replayed calls must match); edit the spec's prompt and run it instead", id)
		}
		if cfg.RerunBash {
			return rep, fmt.Errorf("fork %s: re-running bash calls: the session ran an external agent, which runs its own tools again in the fork's fresh workspace", id)
		}
		backend, err := agent.Backend(&live)
		if err != nil {
			return rep, fmt.Errorf("fork %s: %w", id, err)
		}
		src := cfg.Recordings
		sides, err := proxy.SideThreads(src, id)
		if err != nil {
			return rep, fmt.Errorf("fork %s: %w", id, err)
		}
		x, err := ForkExternal(ctx, ExternalForkConfig{Store: cfg.Store, SessionID: id, Events: cfg.Events, From: cfg.From,
			Artifacts: func(rel string) ([]byte, error) { return proxy.ReadArtifact(src.SessionDir(id), rel) },
			Sides:     sides, Spec: cfg.Spec, Live: backend, Provider: live.Model.Provider, Model: live.Model.ID,
			ForkID: cfg.ForkID, Observer: cfg.Observer, Tags: cfg.Tags})
		rep.External = &x
		return rep, err
	}
	rc, err := agent.Config(&live, cfg.Store.Root)
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", id, err)
	}
	if cfg.StandIn {
		rc.Tools = UnavailableTools(cfg.Events)
	}
	own, err := Fork(ctx, ForkConfig{Store: cfg.Store, SessionID: id, Events: cfg.Events, From: cfg.From, Spec: &live,
		Provider: rc.Provider, Tools: rc.Tools, Prompt: cfg.Prompt, ForkID: cfg.ForkID, Observer: cfg.Observer,
		RerunBash: cfg.RerunBash, NewProvider: rc.NewProvider, Tags: cfg.Tags})
	rep.Own = &own
	return rep, err
}
