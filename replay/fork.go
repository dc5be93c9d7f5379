package replay

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner"
	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/runner/spec"
	"github.com/agentctl/agentctl/runner/tools"
	"github.com/agentctl/agentctl/session"
)

// ForkConfig is what a fork needs. The caller builds Provider and Tools
// from Spec, which is the original's spec with the model the fork should
// continue against.
type ForkConfig struct {
	Store     recorder.Store
	SessionID string
	Events    []session.Event
	// From is the last seq of the original the fork keeps.
	From int64
	// Spec, Provider and Tools run the continuation. When Spec.Model
	// differs from the original's current model, a model_changed event
	// records the change before the fork continues.
	Spec     *spec.Spec
	Provider provider.Provider
	Tools    *tools.Registry
	// Prompt, if set, is appended as a user message before continuing.
	Prompt string
	// ForkID, if set, names the new session.
	ForkID   string
	Observer runner.Observer
}

// ForkReport is the outcome of a fork; --json prints it.
type ForkReport struct {
	SessionID    string `json:"session_id"`
	ParentID     string `json:"parent_session_id"`
	ForkedFrom   int64  `json:"forked_from"`
	Copied       int64  `json:"copied"`
	ModelChanged bool   `json:"model_changed"`
	// Reapplied counts the recorded workspace tool calls re-run to bring
	// the fresh workspace to its state at From; Skipped the calls not
	// re-run (custom tools that act outside the workspace).
	Reapplied int           `json:"reapplied"`
	Skipped   int           `json:"skipped"`
	Result    runner.Result `json:"result"`
}

// Fork starts a new session whose log is the original's events up to From
// (header first, with parent_session_id and forked_from), then continues it
// live with runner.Resume. The fork's workspace is a fresh copy of
// workspace.from with the recorded workspace tool calls up to From applied
// again, so the continuation sees the files as they were at From.
//
// A cut between an assistant message and its model_call is refused. The
// copied part ends with a session_finished (status interrupted, stamped
// with the last copied event's time) unless it already ends with one; a
// done finish at From is replaced by it, since a done session cannot go
// on. The model is never changed silently: a different model is recorded
// as model_changed.
func Fork(ctx context.Context, cfg ForkConfig) (ForkReport, error) {
	evs := cfg.Events
	rep := ForkReport{ParentID: cfg.SessionID, ForkedFrom: cfg.From}
	if len(evs) == 0 || evs[0].Kind != session.KindSessionStarted {
		return rep, fmt.Errorf("fork %s: the log does not start with session_started", cfg.SessionID)
	}
	last := evs[len(evs)-1].Seq
	if cfg.From < 1 || cfg.From > last {
		return rep, fmt.Errorf("fork %s: --from %d is outside the log (seq 1..%d)", cfg.SessionID, cfg.From, last)
	}
	keep := evs[:cfg.From]
	if k := keep[len(keep)-1]; k.Kind == session.KindAssistantMessage && int(cfg.From) < len(evs) && evs[cfg.From].Kind == session.KindModelCall {
		return rep, fmt.Errorf("fork %s: --from %d separates an assistant message from its model_call; use --from %d", cfg.SessionID, cfg.From, cfg.From+1)
	}
	if l := keep[len(keep)-1]; l.Kind == session.KindSessionFinished && session.Status(l.Status) == session.StatusDone {
		keep = keep[:len(keep)-1]
	}
	kept := session.Fold(keep)
	curProv, curModel := kept.Provider, kept.Model

	id := cfg.ForkID
	if id == "" {
		id = recorder.NewSessionID()
	}
	hdr := evs[0]
	hdr.Seq, hdr.SessionID = 0, id
	hdr.ParentSessionID, hdr.ForkedFrom = cfg.SessionID, cfg.From
	hdr.Spec = cfg.Spec.JSON()
	ws := cfg.Spec.Workspace.Path
	if ws == "" {
		ws = filepath.Join(cfg.Store.SessionDir(id), "workspace")
	}
	hdr.Workspace = ws
	// The header is stamped now: the fork starts when it is made (its
	// started, in sessions and the views). The copied events keep their
	// timestamps, so their part of the timeline reads as it happened;
	// session.State starts the copied segment's wall time at the first of
	// them, not at the header.
	hdr.TS = time.Time{}

	sess, err := cfg.Store.Create(hdr, recorder.Options{})
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
	}
	rep.SessionID = id
	var add []session.Event
	for _, e := range keep[1:] {
		e.Seq = 0
		add = append(add, e)
	}
	rep.Copied = int64(len(keep))
	// Close the copied segment where the parent was cut, stamped with the
	// last copied event's time: the runner counts wall time per segment,
	// and the time between the parent's run and the fork is not the
	// fork's. A done finish is not copied (a done session cannot go on).
	if l := keep[len(keep)-1]; l.Kind != session.KindSessionFinished {
		add = append(add, session.Event{Kind: session.KindSessionFinished, TS: l.TS, Status: string(session.StatusInterrupted),
			Reason: fmt.Sprintf("fork point: %s up to seq %d; the fork continues from here", cfg.SessionID, cfg.From)})
	}
	if p, m := cfg.Spec.Model.Provider, cfg.Spec.Model.ID; p != curProv || m != curModel {
		rep.ModelChanged = true
		add = append(add, session.Event{Kind: session.KindModelChanged, Provider: p, Model: m,
			Reason: fmt.Sprintf("fork --model %s/%s (was %s/%s)", p, m, curProv, curModel)})
	}
	if cfg.Prompt != "" {
		add = append(add, session.Event{Kind: session.KindUserMessage, Text: cfg.Prompt})
	}
	if len(add) > 0 {
		if _, err := sess.Append(add...); err != nil {
			sess.Close()
			return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
		}
	}
	if err := sess.Close(); err != nil {
		return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
	}
	if cfg.Spec.Workspace.Path == "" {
		n, skipped, err := rebuildWorkspace(ctx, cfg.Spec, cfg.Tools, keep, ws, cfg.Store.Root)
		rep.Reapplied, rep.Skipped = n, skipped
		if err != nil {
			return rep, fmt.Errorf("fork %s: rebuild the workspace at seq %d: %w", cfg.SessionID, cfg.From, err)
		}
	}
	prov := cfg.Provider
	if rep.ModelChanged {
		// A new model starts its own script from its first turn; hide
		// SetTurn so Resume does not skip the turns the original used.
		prov = noSetTurn{prov}
	}
	rc := runner.Config{Spec: cfg.Spec, Store: cfg.Store, Provider: prov, Tools: cfg.Tools, Observer: cfg.Observer}
	res, err := runner.Resume(ctx, rc, id)
	rep.Result = res
	return rep, err
}

// noSetTurn hides a provider's SetTurn.
type noSetTurn struct{ provider.Provider }

// rebuildWorkspace copies workspace.from into ws and re-runs the recorded
// calls of tools that act on the workspace only (the built-ins) that ended
// ok, in log order. Custom tools may act on the world (a payment, an email)
// and are never repeated.
func rebuildWorkspace(ctx context.Context, sp *spec.Spec, reg *tools.Registry, evs []session.Event, ws, home string) (int, int, error) {
	// The re-applied calls hide the home as the original run's did.
	sb, err := runner.SandboxConfig(sp, home)
	if err != nil {
		return 0, 0, err
	}
	if sp.Workspace.From != "" {
		if err := runner.CopyTree(sp.Workspace.From, ws); err != nil {
			return 0, 0, err
		}
	} else if err := os.MkdirAll(ws, 0o755); err != nil {
		return 0, 0, err
	}
	n, skipped := 0, 0
	// The calls that ended ok, in the order of their results.
	var done []*session.Call
	for _, c := range session.Fold(evs).Calls {
		if c.ResultSeq > 0 && c.Status == session.ResultOK && c.RequestSeq > 0 {
			done = append(done, c)
		}
	}
	slices.SortFunc(done, func(a, b *session.Call) int { return cmp.Compare(a.ResultSeq, b.ResultSeq) })
	for _, c := range done {
		t, ok := reg.Get(c.Tool)
		if !ok || !t.SideEffects() {
			continue
		}
		if _, custom := t.(*tools.Command); custom {
			skipped++
			continue
		}
		res := t.Run(ctx, tools.Call{Args: c.Args, Workspace: ws, Sandbox: sb})
		if res.Status != session.ResultOK {
			return n, skipped, fmt.Errorf("re-run %s (call %s, seq %d): %s", c.Tool, c.ID, c.ResultSeq, res.Error)
		}
		n++
	}
	return n, skipped, nil
}
