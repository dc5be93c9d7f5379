package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// Subagents: the task tool starts a child harness, in this process and
// through this file's loop (Start, Resume), never a parallel one. The
// child works in its parent's workspace and sandbox, with a fresh window,
// the tools its spec lists (never one its parent lacks: spec.CheckChild),
// the parent's approval rules on top of its own, and a budget carved out
// of what the parent has left when the call is dispatched. It records its
// own session, whose header names the parent (parent_session_id) and the
// seq of the task call's tool_intent (parent_seq); its id derives from
// that call's idempotency key (SubagentID), so a resumed parent finds the
// child it started instead of starting another.
//
// The parent's log gets tool_intent, subagent_started, subagent_finished
// (the child's status, result and spend) and the tool_result carrying the
// child's final answer; nothing else of the child. What the child spent is
// charged to the parent's budget (session.State.Subagents).
//
// Interrupting the parent cancels the child's context: the child records
// its interruption, its tools' process groups are killed, and the parent's
// task intent stays without a result, so resume reconciles it by resuming
// the child where it stopped (reconcileTask). A crash of the process takes
// the child with it the same way; resume then finds the child's log.

// Lineage names the parent of a subagent in its header.
type Lineage struct {
	// SessionID is the parent's session, Seq the seq of the parent's
	// tool_intent of the task call.
	SessionID string
	Seq       int64
	// Root is the session at the top of the tree: the trace the child's
	// spans join (internal/recorder/otlp).
	Root string
}

// ChildObserver is the optional ability of an Observer to watch a
// subagent's session too (the live OTLP exporter does). Child is called
// once per child invocation, before it starts.
type ChildObserver interface {
	Child() Observer
}

// observerResumer is the optional ability of an observer to be told the
// events a resumed session already holds (otlp.Live.Resume).
type observerResumer interface {
	Resume(sessionID string, prior []session.Event)
}

// SubagentID is the session id of the child the task call with
// idempotency key key starts: the same on the first run and on every
// resume, so a resumed parent finds its child.
func SubagentID(key string) string {
	h := sha256.Sum256([]byte("agentctl/subagent/" + key))
	return hex.EncodeToString(h[:8])
}

// taskArgs are the task tool's arguments (tools.NewTask's schema).
type taskArgs struct {
	Prompt string `json:"prompt"`
	Agent  string `json:"agent"`
	Spec   string `json:"spec"`
}

// errNoTask is a task call this harness refuses before any child exists.
type errNoTask struct{ msg string }

func (e errNoTask) Error() string { return e.msg }

// ChildCall names the task call a subagent is started for, as a
// ChildSource sees it: Turn (the ordinal of the assistant message that
// requested it) and CallID name the call across a log and its replay,
// whose seqs and keys differ.
type ChildCall struct {
	CallID string
	Turn   int
	// Key is the call's idempotency key in this run; Parent the lineage
	// the child's header will name.
	Key    string
	Parent Lineage
}

// ChildSource is where a harness gets a subagent's model when it is not
// the child spec's own: replay serves each child from its own recording
// (replay.Run). When Config.Children is set it is used instead of
// NewProvider. Child is called from the parent's loop, one call at a
// time; an error is the task call's error result.
type ChildSource interface {
	Child(sp *spec.Spec, call ChildCall) (ChildModel, error)
}

// ChildModel is what a ChildSource gives one subagent.
type ChildModel struct {
	Provider provider.Provider
	// Observer, if set, sees the child's events (else the parent
	// observer's ChildObserver, if it has one).
	Observer Observer
	// Children serves the child's own subagents; nil: it cannot start any.
	Children ChildSource
	// Keys gives the child's calls their keys (Config.Keys); nil derives
	// them from the child's session.
	Keys func(turn int, callID, tool string) string
}

// child is a subagent ready to start or resume.
type child struct {
	id  string
	cfg Config
}

// prepareChild builds the child's config from the call's arguments: the
// same way on dispatch and on resume. budget says whether to carve a
// budget (a child that exists already has its own in its header).
func (r *run) prepareChild(callID string, args json.RawMessage, key string, intentSeq int64, carve bool) (*child, error) {
	var a taskArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, errNoTask{fmt.Sprintf("task arguments are not an object with prompt, agent, spec: %v", err)}
	}
	if strings.TrimSpace(a.Prompt) == "" {
		return nil, errNoTask{"task needs a prompt: what the subagent is to do and report"}
	}
	if r.cfg.NewProvider == nil && r.cfg.Children == nil {
		return nil, errNoTask{"this harness was started without a provider factory, so it cannot start subagents"}
	}
	depth, root, err := r.lineage()
	if err != nil {
		return nil, errNoTask{err.Error()}
	}
	if depth+1 > spec.MaxDepth {
		return nil, errNoTask{fmt.Sprintf("subagents nest at most %d deep and this session is at depth %d; do the work here instead of starting another subagent", spec.MaxDepth, depth)}
	}
	sp, err := r.childSpec(a)
	if err != nil {
		return nil, errNoTask{err.Error()}
	}
	if carve {
		b, err := r.carve(sp.Budget)
		if err != nil {
			return nil, errNoTask{err.Error()}
		}
		sp.Budget = b
	}
	var ts []tools.Tool
	for _, n := range sp.ToolNames() {
		t, ok := r.cfg.Tools.Get(n)
		if !ok {
			return nil, errNoTask{fmt.Sprintf("the subagent asks for tool %s, which this session does not offer", n)}
		}
		ts = append(ts, t)
	}
	reg := tools.NewRegistry(ts...)
	if err := tools.CheckMode(sp.Mode, reg); err != nil {
		return nil, errNoTask{err.Error()}
	}
	lin := Lineage{SessionID: r.id, Seq: intentSeq, Root: root}
	var m ChildModel
	if r.cfg.Children != nil {
		turn := 0
		if c := r.st.Call(callID); c != nil {
			turn = c.Turn
		}
		if m, err = r.cfg.Children.Child(sp, ChildCall{CallID: callID, Turn: turn, Key: key, Parent: lin}); err != nil {
			return nil, errNoTask{fmt.Sprintf("the subagent's model: %v", err)}
		}
	} else if m.Provider, err = r.cfg.NewProvider(sp); err != nil {
		return nil, errNoTask{fmt.Sprintf("the subagent's model: %v", err)}
	}
	obs := m.Observer
	if co, ok := r.cfg.Observer.(ChildObserver); ok && obs == nil {
		obs = co.Child()
	}
	id := SubagentID(key)
	return &child{id: id, cfg: Config{
		Spec: sp, Store: r.cfg.Store, Provider: m.Provider, Tools: reg, Observer: obs, Clock: r.cfg.Clock,
		SessionID: id, NoSync: r.cfg.NoSync, NewProvider: r.cfg.NewProvider, Children: m.Children,
		Parent: &lin, Keys: m.Keys, Tags: session.MergeTags(r.cfg.Spec.Tags, r.cfg.Tags),
		// Crash injection names a child's points by its id (failpoint.go).
		Failpoint: childFailpoint(r.cfg.Failpoint, id),
	}}, nil
}

// childSpec is the spec the child runs: a declared subagent (agent), a
// spec file in the workspace (spec), or the parent's own spec with the
// new prompt; each checked against the parent (spec.CheckChild) and set
// to work in the parent's workspace and sandbox under its approvals.
func (r *run) childSpec(a taskArgs) (*spec.Spec, error) {
	parent := r.cfg.Spec
	var sp *spec.Spec
	var err error
	switch {
	case a.Agent != "" && a.Spec != "":
		return nil, fmt.Errorf("task takes agent or spec, not both")
	case a.Agent != "":
		p, ok := parent.Subagents[a.Agent]
		if !ok {
			names := make([]string, 0, len(parent.Subagents))
			for n := range parent.Subagents {
				names = append(names, n)
			}
			sort.Strings(names)
			known := "the spec declares none"
			if len(names) > 0 {
				known = "declared: " + strings.Join(names, ", ")
			}
			return nil, fmt.Errorf("no subagent named %q (%s)", a.Agent, known)
		}
		if sp, err = spec.Load(p); err != nil {
			return nil, err
		}
	case a.Spec != "":
		// The agent wrote the file: it must be in the workspace, and so
		// must a scripted model's script; its checks are the parent's.
		p, err := tools.Confine(r.ws, a.Spec)
		if err != nil {
			return nil, fmt.Errorf("subagent spec: %w", err)
		}
		if sp, err = spec.LoadChild(p, parent); err != nil {
			return nil, err
		}
		// Done checks are commands: a session without bash may not
		// have its agent write some.
		if len(sp.Done) > 0 && !slices.Contains(parent.ToolNames(), tools.NameBash) {
			return nil, fmt.Errorf("subagent spec %s has done checks, which run commands, and this session has no bash; declare the subagent in the spec (subagents:) instead", a.Spec)
		}
		if sp.Model.Scripted() {
			if _, err := tools.Confine(r.ws, sp.Model.Script); err != nil {
				return nil, fmt.Errorf("subagent spec %s: model.script: %w", a.Spec, err)
			}
		}
	default:
		cp := *parent
		sp = &cp
	}
	if err := spec.CheckChild(parent, sp); err != nil && (a.Agent != "" || a.Spec != "") {
		return nil, fmt.Errorf("subagent spec %s: %w", sp.Path, err)
	}
	cp := *sp
	sp = &cp
	sp.Prompt = a.Prompt
	sp.Workspace = spec.Workspace{Path: r.ws}
	sp.Sandbox = parent.Sandbox
	sp.Approvals = append(slices.Clone(parent.Approvals), sp.Approvals...)
	if sp.ToolTimeout == 0 {
		sp.ToolTimeout = parent.ToolTimeout
	}
	if err := needPrice(sp, sp.Budget.Session(), sp.Model.ID); err != nil {
		return nil, err
	}
	return sp, nil
}

// lineage is how deep this session is among subagents (0 for one `run`
// started, and for a fork, which starts a tree of its own) and the session
// at the top, read from the headers up the chain of parents: a header a
// step (recorder.Store.Ancestors), since it runs on every task call.
func (r *run) lineage() (depth int, root string, err error) {
	links, err := r.cfg.Store.Ancestors(r.id, recorder.RelSubagent)
	if err != nil {
		return 0, "", fmt.Errorf("find the subagent depth: %w", err)
	}
	root = r.id
	if len(links) > 0 {
		root = links[len(links)-1].Parent
	}
	return len(links), root, nil
}

// tokensSpent, costSpent and callsSpent are what the budget charges the
// session: its own model and tool calls plus what its subagents spent.
func (r *run) tokensSpent() int64 { return r.st.Tokens() + r.st.Subagents.Tokens() }
func (r *run) costSpent() float64 { return r.st.CostUSD + r.st.Subagents.CostUSD }
func (r *run) callsSpent() int64  { return r.st.ToolCalls + r.st.Subagents.ToolCalls }
func minLimit[T int64 | float64 | time.Duration](own, left T) T {
	if own <= 0 || left < own {
		return left
	}
	return own
}

// carve is the child's budget: its spec's, cut down in each limit to what
// the parent has left at dispatch (the task call itself counted). A parent
// with nothing left of a limit starts no child: a child limit of 0 would
// mean none.
func (r *run) carve(own spec.Budget) (spec.Budget, error) {
	b := r.budget()
	out := own
	if b.MaxTokens > 0 {
		left := b.MaxTokens - r.tokensSpent()
		if left < 1 {
			return out, fmt.Errorf("no tokens left to give a subagent (max_tokens %d, %d spent)", b.MaxTokens, r.tokensSpent())
		}
		out.MaxTokens = minLimit(own.MaxTokens, left)
	}
	if b.MaxToolCalls > 0 {
		left := b.MaxToolCalls - r.callsSpent()
		if left < 1 {
			return out, fmt.Errorf("no tool calls left to give a subagent (max_tool_calls %d, this task call was the last)", b.MaxToolCalls)
		}
		out.MaxToolCalls = minLimit(own.MaxToolCalls, left)
	}
	if b.MaxCostUSD > 0 {
		left := b.MaxCostUSD - r.costSpent()
		if left <= 0 {
			return out, fmt.Errorf("no cost budget left to give a subagent (max_cost_usd %.4f, $%.4f spent)", b.MaxCostUSD, r.costSpent())
		}
		out.MaxCostUSD = minLimit(own.MaxCostUSD, left)
	}
	if b.MaxWall > 0 {
		left := b.MaxWall - r.wall()
		if left <= 0 {
			return out, fmt.Errorf("no wall time left to give a subagent (max_wall %s)", b.MaxWall)
		}
		out.MaxWall = spec.Duration(minLimit(time.Duration(own.MaxWall), left))
	}
	return out, nil
}

// runTask dispatches a task call whose intent is recorded: it starts the
// child, waits for it, and records its end and result. interrupted is
// true when the parent was interrupted while the child ran; the intent
// then stays open for resume to reconcile.
func (r *run) runTask(ctx context.Context, cs *callState, args json.RawMessage, key string) (interrupted bool, err error) {
	began := time.Now()
	intentSeq := r.st.LastSeq
	ch, perr := r.prepareChild(cs.Call.ID, args, key, intentSeq, true)
	if perr != nil {
		return false, r.append(session.Event{Kind: session.KindToolResult, CallID: cs.Call.ID, Tool: cs.Call.Name,
			Status: session.ResultError, Error: perr.Error(), LatencyMS: time.Since(began).Milliseconds()})
	}
	if err := r.append(session.Event{Kind: session.KindSubagentStarted, CallID: cs.Call.ID, Tool: cs.Call.Name, ChildSessionID: ch.id}); err != nil {
		return false, err
	}
	_, runErr := Start(ctx, ch.cfg)
	if ctx.Err() != nil {
		return true, nil
	}
	// Crash injection: the child ran, its end is not in the parent's log.
	r.fp.hit("in-tool", intentSeq)
	fin, res, err := r.childEnd(ch.id, runErr)
	if err != nil {
		return false, err
	}
	res.Kind, res.CallID, res.Tool, res.LatencyMS = session.KindToolResult, cs.Call.ID, cs.Call.Name, time.Since(began).Milliseconds()
	fin.CallID, fin.Tool = cs.Call.ID, cs.Call.Name
	return false, r.append(fin, res)
}

// childEnd reads the child's log and returns its subagent_finished event
// (status, answer, spend) and the result the parent's model reads: the
// final answer when the child is done, an error naming its status and
// reason otherwise. runErr is what Start or Resume returned.
func (r *run) childEnd(id string, runErr error) (fin, res session.Event, err error) {
	evs, _, lerr := r.cfg.Store.Load(id)
	if len(evs) == 0 {
		msg := fmt.Sprintf("subagent %s did not start", id)
		for _, e := range []error{runErr, lerr} {
			if e != nil {
				msg += ": " + e.Error()
				break
			}
		}
		fin = session.Event{Kind: session.KindSubagentFinished, ChildSessionID: id, Status: string(session.StatusFailed), Error: msg}
		return fin, session.Event{Status: session.ResultError, Error: msg}, nil
	}
	st := session.Fold(evs)
	answer := ""
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == session.KindAssistantMessage {
			answer = evs[i].Text
			break
		}
	}
	status := st.Status()
	spend := session.Spend{InputTokens: st.InputTokens + st.Subagents.InputTokens, OutputTokens: st.OutputTokens + st.Subagents.OutputTokens,
		CostUSD: st.CostUSD + st.Subagents.CostUSD, ToolCalls: st.ToolCalls + st.Subagents.ToolCalls}
	fin = session.Event{Kind: session.KindSubagentFinished, ChildSessionID: id, Status: string(status), Output: answer,
		InputTokens: spend.InputTokens, OutputTokens: spend.OutputTokens, CostUSD: spend.CostUSD, Attrs: session.SpendAttrs(spend)}
	if status == session.StatusDone {
		return fin, session.Event{Status: session.ResultOK, Output: answer}, nil
	}
	msg := fmt.Sprintf("subagent %s ended %s", id, status)
	if reason := st.Reason(); reason != "" {
		msg += ": " + reason
	}
	if runErr != nil && !strings.Contains(msg, runErr.Error()) {
		msg += " (" + runErr.Error() + ")"
	}
	msg += fmt.Sprintf("; its log: agentctl show %s", id)
	fin.Error = msg
	return fin, session.Event{Status: session.ResultError, Output: answer, Error: msg}, nil
}

// reconcileTask settles a task call whose intent has no result: the child
// never started (start it now, with the same id), finished (take its
// result), or stopped part way (resume it where it stopped). It is never
// started afresh when its log exists. stopped is true when the run ended
// (interrupted again, or needs_human).
func (r *run) reconcileTask(ctx context.Context, cs *callState) (Result, bool, error) {
	settled := func(outcome, output, why string, evs ...session.Event) (Result, bool, error) {
		evs = append(evs, session.Event{Kind: session.KindReconciled, CallID: cs.Call.ID, Tool: cs.Call.Name,
			IdempotencyKey: cs.IntentKey, Outcome: outcome, Output: output, Reason: why})
		if err := r.append(evs...); err != nil {
			return r.result(), true, err
		}
		if outcome == session.ReconciledNeedsHuman {
			res, err := r.finish(session.StatusNeedsHuman, fmt.Sprintf("task call %s with idempotency key %s: %s; check the subagent by hand, then record the outcome with agentctl resolve",
				cs.Call.ID, cs.IntentKey, why))
			return res, true, err
		}
		return r.result(), false, nil
	}
	if cs.IntentKey == "" {
		return settled(session.ReconciledNeedsHuman, "", "the task intent has no idempotency key, so its subagent cannot be found")
	}
	id := SubagentID(cs.IntentKey)
	intentSeq := r.st.Call(cs.Call.ID).IntentSeq
	var pre []session.Event
	if !slices.Contains(r.st.Children, id) {
		pre = append(pre, session.Event{Kind: session.KindSubagentStarted, CallID: cs.Call.ID, Tool: cs.Call.Name, ChildSessionID: id})
	}
	_, statErr := os.Stat(r.cfg.Store.LogPath(id))
	exists := statErr == nil
	var outcome, why string
	var runErr error
	switch {
	case !exists:
		ch, perr := r.prepareChild(cs.Call.ID, cs.Call.Args, cs.IntentKey, intentSeq, true)
		if perr != nil {
			return settled(session.ReconciledRecovered, "", "the subagent had not started and cannot be: "+perr.Error(), pre...)
		}
		if len(pre) > 0 {
			if err := r.append(pre...); err != nil {
				return r.result(), true, err
			}
			pre = nil
		}
		_, runErr = Start(ctx, ch.cfg)
		outcome, why = session.ReconciledRepeated, fmt.Sprintf("the subagent %s had not started; started it with the call's key", id)
	default:
		cst, _, ferr := r.cfg.Store.Fold(id)
		switch status := cst.Status(); {
		case ferr != nil && cst.Events == 0:
			return settled(session.ReconciledNeedsHuman, "", fmt.Sprintf("the subagent's log %s cannot be read: %v", r.cfg.Store.LogPath(id), ferr), pre...)
		case status == session.StatusRunning:
			return settled(session.ReconciledNeedsHuman, "", fmt.Sprintf("the subagent %s is running in another process", id), pre...)
		case status == session.StatusCorrupt:
			return settled(session.ReconciledNeedsHuman, "", fmt.Sprintf("the subagent's log %s is damaged", r.cfg.Store.LogPath(id)), pre...)
		case status == session.StatusInterrupted || status == session.StatusCrashed:
			ch, perr := r.prepareChild(cs.Call.ID, cs.Call.Args, cs.IntentKey, intentSeq, false)
			if perr != nil {
				return settled(session.ReconciledNeedsHuman, "", fmt.Sprintf("the subagent %s stopped %s and cannot be resumed: %v", id, status, perr), pre...)
			}
			if len(pre) > 0 {
				if err := r.append(pre...); err != nil {
					return r.result(), true, err
				}
				pre = nil
			}
			if rs, ok := ch.cfg.Observer.(observerResumer); ok {
				if prior, _, err := r.cfg.Store.Load(id); err == nil {
					rs.Resume(id, prior)
				}
			}
			_, runErr = Resume(ctx, ch.cfg, id)
			outcome, why = session.ReconciledRepeated, fmt.Sprintf("the subagent %s had stopped (%s); resumed it where it stopped", id, status)
		default:
			outcome, why = session.ReconciledRecovered, fmt.Sprintf("the subagent %s had ended (%s); took its result", id, status)
		}
	}
	if ctx.Err() != nil {
		res, err := r.interrupt(ctx, "", nil)
		return res, true, err
	}
	fin, res, err := r.childEnd(id, runErr)
	if err != nil {
		return r.result(), true, err
	}
	fin.CallID, fin.Tool = cs.Call.ID, cs.Call.Name
	out := res.Output
	if res.Status != session.ResultOK {
		out = strings.TrimSpace(out + "\n" + res.Error)
	}
	evs := pre
	if !r.subagentFinished(id) {
		evs = append(evs, fin)
	}
	return settled(outcome, out, why, evs...)
}

// subagentFinished reports whether the log holds a subagent_finished for
// child id (a crash came after it and before the call's result), so its
// spend is charged once.
func (r *run) subagentFinished(id string) bool {
	evs, _, err := r.cfg.Store.Load(r.id)
	if err != nil && len(evs) == 0 {
		return false
	}
	return slices.ContainsFunc(evs, func(e session.Event) bool {
		return e.Kind == session.KindSubagentFinished && e.ChildSessionID == id
	})
}

// subagentAttrs is a subagent header's attrs: the tools (headerAttrs) and
// the session at the top of its tree, whose trace its spans join.
func subagentAttrs(reg *tools.Registry, root string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Tools []string `json:"tools"`
		Root  string   `json:"root_session_id"`
	}{reg.Names(), root})
	return b
}

// subID is the session id a failpoint must name to fire in a run of cfg:
// a subagent's own id, "" for a session `run` or `resume` was given.
func subID(cfg Config) string {
	if cfg.Parent == nil {
		return ""
	}
	return cfg.SessionID
}
