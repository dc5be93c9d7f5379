package replay

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
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
	// RerunBash lets the rebuild of the workspace run the recorded bash
	// calls again, in the sandbox and in log order: their effects are not
	// in the log, so without it a fork past a bash call is refused.
	RerunBash bool
	// NewProvider builds the model of a subagent the fork's task calls
	// start (runner.Config.NewProvider).
	NewProvider func(*spec.Spec) (provider.Provider, error)
	// Tags label the fork over the tags its header copies from the
	// parent's (an eval scenario's eval.suite and eval.scenario).
	Tags map[string]string
}

// ForkReport is the outcome of a fork; --json prints it.
type ForkReport struct {
	SessionID    string `json:"session_id"`
	ParentID     string `json:"parent_session_id"`
	ForkedFrom   int64  `json:"forked_from"`
	Copied       int64  `json:"copied"`
	ModelChanged bool   `json:"model_changed"`
	// Reapplied counts the recorded workspace edits (built-in file tools)
	// re-run to bring the fresh workspace to its state at From; Rerun the
	// bash calls run again (RerunBash); Skipped the custom tool calls not
	// repeated (they may act outside the workspace, so agentctl never
	// repeats one; NotRepeated names them).
	Reapplied   int           `json:"reapplied"`
	Rerun       int           `json:"rerun_bash"`
	Skipped     int           `json:"skipped"`
	NotRepeated []string      `json:"not_repeated,omitempty"`
	Result      runner.Result `json:"result"`
	// GitSHA is the commit of the parent's run branch the fork's
	// workspace was made from (a session with git state), "" when it was
	// rebuilt by re-running calls.
	GitSHA string `json:"git_sha,omitempty"`
}

// Fork starts a new session whose log is the original's events up to From
// (header first, with parent_session_id and forked_from), then continues it
// live with runner.Resume. The fork's workspace is a fresh copy of
// workspace.from with the recorded workspace tool calls up to From applied
// again, so the continuation sees the files as they were at From; a fork
// whose workspace cannot be rebuilt so is refused before anything is
// created, with the calls at fault listed (see planRebuild), never started
// on a partial workspace. A session with git state (its log up to From
// records a git_sha) needs none of that: the fork's run branch starts at
// that commit and its workspace is the commit's files
// (runner.ForkWorkspace), so no recorded call runs again, bash included.
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
	rebuild := cfg.Spec.Workspace.Path == ""
	// With git state the workspace at From is a commit of the parent's run
	// branch: the fork starts from it and no recorded call runs again.
	fromGit := rebuild && kept.GitSHA != ""
	var plan rebuildPlan
	if rebuild && !fromGit {
		plan = planRebuildWith(kept, cfg.Tools, cfg.RerunBash, storeChildren(cfg.Store), 0)
		if len(plan.cannot) > 0 {
			return rep, fmt.Errorf("fork %s: the workspace at seq %d cannot be rebuilt: %d recorded call(s) changed it in ways the log does not hold:\n  %s\nfork from before the first of them, or pass --rerun-bash to run the bash calls again in the sandbox",
				cfg.SessionID, cfg.From, len(plan.cannot), strings.Join(plan.cannot, "\n  "))
		}
	}

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
		ws = filepath.Join(cfg.Store.SessionDir(id), recorder.WorkspaceDir)
	}
	// Tools refuse a relative workspace: a home given as ./.agentctl must
	// not make every call of the fork fail.
	ws, err := filepath.Abs(ws)
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
	}
	hdr.Workspace = ws
	if fromGit {
		if _, err := os.Lstat(cfg.Store.SessionDir(id)); err == nil {
			return rep, fmt.Errorf("fork %s: session %s already exists", cfg.SessionID, id)
		}
		if err := runner.ForkWorkspace(ctx, cfg.Store, cfg.SessionID, kept.GitSHA, id, ws); err != nil {
			_ = os.RemoveAll(cfg.Store.SessionDir(id))
			return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
		}
		rep.GitSHA = kept.GitSHA
	} else if rebuild {
		// The workspace first: a fork whose rebuild fails leaves nothing.
		if _, err := os.Lstat(cfg.Store.SessionDir(id)); err == nil {
			return rep, fmt.Errorf("fork %s: session %s already exists", cfg.SessionID, id)
		}
		n, rerun, err := rebuildWorkspace(ctx, cfg.Spec, cfg.Tools, plan, ws, cfg.Store.Root)
		rep.Reapplied, rep.Rerun = n, rerun
		if err != nil {
			_ = os.RemoveAll(cfg.Store.SessionDir(id))
			return rep, fmt.Errorf("fork %s: rebuild the workspace at seq %d: %w", cfg.SessionID, cfg.From, err)
		}
		rep.Skipped, rep.NotRepeated = len(plan.notRepeated), plan.notRepeated
	}
	// The header is stamped now: the fork starts when it is made (its
	// started, in sessions and the views). The copied events keep their
	// timestamps, so their part of the timeline reads as it happened;
	// session.State starts the copied segment's wall time at the first of
	// them, not at the header.
	hdr.TS = time.Time{}
	hdr.Attrs = session.WithTags(hdr.Attrs, cfg.Tags, "")

	forkEvs := append([]session.Event{hdr}, keep[1:]...)
	// Close the copied segment where the parent was cut, stamped with the
	// last copied event's time: the runner counts wall time per segment,
	// and the time between the parent's run and the fork is not the
	// fork's. A done finish is not copied (a done session cannot go on).
	if l := keep[len(keep)-1]; l.Kind != session.KindSessionFinished {
		forkEvs = append(forkEvs, session.Event{Kind: session.KindSessionFinished, TS: l.TS, Status: string(session.StatusInterrupted),
			Reason: fmt.Sprintf("fork point: %s up to seq %d; the fork continues from here%s", cfg.SessionID, cfg.From, forkDescribe(plan, rebuild, kept))})
	}
	if p, m := cfg.Spec.Model.Provider, cfg.Spec.Model.ID; p != curProv || m != curModel {
		rep.ModelChanged = true
		forkEvs = append(forkEvs, session.ForkModelChanged(p, m, curProv, curModel, 0))
	}
	if cfg.Prompt != "" {
		forkEvs = append(forkEvs, session.Event{Kind: session.KindUserMessage, Text: cfg.Prompt})
	}
	written, err := cfg.Store.WriteSession(forkEvs, recorder.Options{})
	if len(written) == 0 { // no session made
		if rebuild {
			_ = os.RemoveAll(cfg.Store.SessionDir(id))
		}
		return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
	}
	rep.SessionID = id
	rep.Copied = int64(len(keep))
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", cfg.SessionID, err)
	}
	prov := cfg.Provider
	if rep.ModelChanged {
		// A new model starts its own script from its first turn; hide
		// SetTurn so Resume does not skip the turns the original used.
		prov = noSetTurn{prov}
	}
	rc := runner.Config{Spec: cfg.Spec, Store: cfg.Store, Provider: prov, Tools: cfg.Tools, Observer: cfg.Observer, NewProvider: cfg.NewProvider}
	res, err := runner.Resume(ctx, rc, id)
	rep.Result = res
	return rep, err
}

// noSetTurn hides a provider's SetTurn.
type noSetTurn struct{ provider.Provider }

// rebuildPlan is how a fork's workspace is brought to its state at the
// fork point: the recorded calls to run again, in log order, and the
// calls whose effect cannot be reconstructed.
type rebuildPlan struct {
	// steps are the calls to run again: built-in file edits that ended
	// ok, and (with RerunBash) bash calls.
	steps []*session.Call
	// bash marks the steps that are bash calls.
	bash map[*session.Call]bool
	// cannot says, for each call that changed the workspace in a way the
	// log does not hold, why: a fork past it is refused.
	cannot []string
	// notRepeated names the custom tool calls with side effects, which
	// agentctl never repeats (they may act outside the workspace).
	notRepeated []string
}

// planRebuild decides, for each call the kept part of the log dispatched,
// how its effect on the workspace is reconstructed:
//
//   - a tool without side effects (read_file, grep, …): nothing to redo;
//   - a built-in file edit (write_file, edit_file): run again when it ended
//     ok (one that failed wrote nothing: file tools write whole or not at
//     all); in flight at a crash and never settled, it cannot be;
//   - bash: its effects are not in the log (a file it wrote, a file it
//     deleted), so it is run again only with rerunBash, and one cancelled
//     mid-run or never settled cannot be (its partial effect is unknown);
//   - a custom tool or an MCP server's tool with side effects: never
//     repeated (a payment, an email, an issue filed), and named in
//     notRepeated;
//   - a tool the spec no longer has: what it did is unknown.
//
// The fork's workspace is a fresh copy of workspace.from, so the parent's
// git state is not used: a checkpoint records HEAD, not the work tree, and
// a workspace with uncommitted edits at the fork point would come back
// without them.
//
// A task call's subagent worked in the same workspace: its effects are
// reconstructed from its own recording (children), with the same rules
// for each of its calls, nested subagents included.
func planRebuild(kept *session.State, reg *tools.Registry, rerunBash bool) rebuildPlan {
	return planRebuildWith(kept, reg, rerunBash, nil, 0)
}

// childRecording reads the recording of the subagent that task call c of
// session parent started, and its id.
type childRecording func(parent string, c *session.Call) (*session.State, string, error)

func planRebuildWith(kept *session.State, reg *tools.Registry, rerunBash bool, children childRecording, depth int) rebuildPlan {
	plan := rebuildPlan{bash: map[*session.Call]bool{}}
	var calls []*session.Call
	for _, c := range kept.Calls {
		if c.RequestSeq > 0 && c.Dispatched() && !c.Denied {
			calls = append(calls, c)
		}
	}
	slices.SortFunc(calls, func(a, b *session.Call) int { return cmp.Compare(a.FirstSeq(), b.FirstSeq()) })
	for _, c := range calls {
		name := fmt.Sprintf("call %s (%s, seq %d)", c.ID, c.Tool, c.FirstSeq())
		t, ok := reg.Get(c.Tool)
		outcome := c.Outcome()
		settled := outcome == session.ResultOK || outcome == session.ReconciledRecovered || outcome == session.ReconciledRepeated
		switch {
		case !ok:
			plan.cannot = append(plan.cannot, name+": the spec has no such tool now, so what it did is unknown")
		case c.Tool == tools.NameTask:
			sub, err := childPlan(kept.ID, c, settled, reg, rerunBash, children, depth)
			if err != nil {
				plan.cannot = append(plan.cannot, name+": "+err.Error())
				break
			}
			plan.steps = append(plan.steps, sub.steps...)
			maps.Copy(plan.bash, sub.bash)
			plan.cannot = append(plan.cannot, sub.cannot...)
			plan.notRepeated = append(plan.notRepeated, sub.notRepeated...)
		case !t.SideEffects():
		case isCustom(t):
			plan.notRepeated = append(plan.notRepeated, name)
		case c.Tool == tools.NameBash:
			switch {
			case outcome == session.ResultCancelled || outcome == "pending" || outcome == session.ReconciledNeedsHuman:
				plan.cannot = append(plan.cannot, fmt.Sprintf("%s: %s mid-run; what it had done by then cannot be reproduced", name, unsettled(outcome)))
			case !rerunBash:
				plan.cannot = append(plan.cannot, name+": a bash call; the files it wrote or removed are not in the log")
			default:
				plan.steps = append(plan.steps, c)
				plan.bash[c] = true
			}
		case settled:
			plan.steps = append(plan.steps, c)
		case outcome == "pending" || outcome == session.ReconciledNeedsHuman:
			plan.cannot = append(plan.cannot, fmt.Sprintf("%s: %s, so whether it wrote is unknown", name, unsettled(outcome)))
		}
	}
	return plan
}

// childPlan is the rebuild plan of the subagent task call c started: its
// own recorded calls, each named with the subagent's session.
func childPlan(parent string, c *session.Call, settled bool, reg *tools.Registry, rerunBash bool, children childRecording, depth int) (rebuildPlan, error) {
	if !settled {
		return rebuildPlan{}, fmt.Errorf("%s, so what its subagent had done by then is unknown", unsettled(c.Outcome()))
	}
	if children == nil {
		return rebuildPlan{}, fmt.Errorf("a subagent's effects are in its own recording, which was not given")
	}
	if depth >= spec.MaxDepth {
		return rebuildPlan{}, fmt.Errorf("subagents nest at most %d deep, and this recording nests deeper", spec.MaxDepth)
	}
	cs, id, err := children(parent, c)
	if err != nil {
		return rebuildPlan{}, err
	}
	sub := planRebuildWith(cs, reg, rerunBash, children, depth+1)
	for i, n := range sub.cannot {
		sub.cannot[i] = "subagent " + id + ": " + n
	}
	for i, n := range sub.notRepeated {
		sub.notRepeated[i] = "subagent " + id + ": " + n
	}
	return sub, nil
}

// storeChildren reads a subagent's recording from st: the session whose
// id derives from the task call's idempotency key (runner.SubagentID),
// which the lineage confirms as the subagent of the parent's task call at
// its tool_intent seq (a log handed over may hold another session under
// that id, or one whose header claims a parent that never started it).
func storeChildren(st recorder.Store) childRecording {
	var lin *recorder.Lineage
	return func(parent string, c *session.Call) (*session.State, string, error) {
		if c.IdempotencyKey == "" {
			return nil, "", fmt.Errorf("the task call has no idempotency key, so its subagent's recording cannot be found")
		}
		id := runner.SubagentID(c.IdempotencyKey)
		if lin == nil {
			l, err := st.Lineage()
			if err != nil {
				return nil, id, fmt.Errorf("its subagent's recording %s: %v", id, err)
			}
			lin = l
		}
		if _, ok := lin.Header(id); !ok {
			_, err := st.Header(id)
			return nil, id, fmt.Errorf("its subagent's recording %s, which holds what it did to the workspace: %v", id, err)
		}
		ln := lin.LinkOf(id)
		if ln.Relation != recorder.RelSubagent || ln.Parent != parent || ln.ParentSeq != c.IntentSeq || !slices.Contains(lin.Subagents(parent), id) {
			why := ""
			for _, sk := range lin.Skips() {
				if sk.ID == id {
					why = ": " + sk.Reason
				}
			}
			return nil, id, fmt.Errorf("the session %s names parent %q at seq %d (%s), not %s at seq %d: it is not this call's subagent%s", id, ln.Parent, ln.ParentSeq, orNone(ln.Relation), parent, c.IntentSeq, why)
		}
		evs, _, err := st.Load(id)
		if len(evs) == 0 {
			if err == nil {
				err = fmt.Errorf("the log is empty")
			}
			return nil, id, fmt.Errorf("its subagent's recording %s, which holds what it did to the workspace: %v", id, err)
		}
		cs := session.Fold(evs)
		if cs.ID == "" {
			cs.ID = id
		}
		return cs, id, nil
	}
}

// orNone names a relation, or its absence.
func orNone(r recorder.Relation) string {
	if r == "" {
		return "no parent"
	}
	return string(r)
}

func unsettled(outcome string) string {
	switch outcome {
	case session.ResultCancelled:
		return "cancelled"
	case session.ReconciledNeedsHuman:
		return "left to a human after a crash"
	}
	return "in flight at a crash"
}

// isCustom reports whether t is a tool that may act on the world outside
// the workspace and is therefore never repeated: a custom command, or a
// tool of an MCP server (internal/mcp; its tools know their server's record).
func isCustom(t tools.Tool) bool {
	if _, custom := t.(*tools.Command); custom {
		return true
	}
	_, mcpTool := t.(interface{ MCPServerRecord() session.MCPServer })
	return mcpTool
}

// forkDescribe says how the fork's workspace was made.
func forkDescribe(plan rebuildPlan, rebuild bool, kept *session.State) string {
	if rebuild && kept.GitSHA != "" {
		return fmt.Sprintf("; workspace from the run branch at commit %s (recorded at seq %d); no call was run again", kept.GitSHA, kept.GitSeq)
	}
	return plan.describe(rebuild)
}

// describe is what the fork point's session_finished adds about the
// workspace, so the fork's own log says how it was made.
func (p rebuildPlan) describe(rebuilt bool) string {
	if !rebuilt {
		return "; the workspace is the spec's workspace.path as it is now"
	}
	var edits, bash []string
	for _, c := range p.steps {
		if p.bash[c] {
			bash = append(bash, c.ID)
		} else {
			edits = append(edits, c.ID)
		}
	}
	out := fmt.Sprintf("; workspace rebuilt from workspace.from: %d edit(s) re-applied", len(edits))
	if len(bash) > 0 {
		out += fmt.Sprintf(", %d bash call(s) run again (--rerun-bash: %s)", len(bash), strings.Join(bash, ", "))
	}
	if len(p.notRepeated) > 0 {
		out += fmt.Sprintf(", custom call(s) not repeated: %s", strings.Join(p.notRepeated, "; "))
	}
	return out
}

// rebuildWorkspace copies workspace.from into ws and runs the plan's steps
// again, in log order, in the sandbox the original run's calls had (the
// home hidden). A step that ended ok then and fails now stops the rebuild;
// a bash call that failed then is not expected to succeed now.
func rebuildWorkspace(ctx context.Context, sp *spec.Spec, reg *tools.Registry, plan rebuildPlan, ws, home string) (edits, bash int, err error) {
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
	for _, c := range plan.steps {
		t, _ := reg.Get(c.Tool)
		res := t.Run(ctx, tools.Call{Args: c.Args, Workspace: ws, Sandbox: sb,
			Timeout: time.Duration(sp.ToolTimeout), Env: runner.PassEnv(sp.Sandbox.Env)})
		if res.Status != session.ResultOK && c.Outcome() == session.ResultOK {
			return edits, bash, fmt.Errorf("re-run %s (call %s, seq %d): %s", c.Tool, c.ID, c.FirstSeq(), res.Error)
		}
		if plan.bash[c] {
			bash++
		} else {
			edits++
		}
	}
	return edits, bash, nil
}
