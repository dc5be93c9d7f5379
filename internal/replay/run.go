package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// Codes of offline replay findings.
const (
	// CodeResultDiffers: a tool call re-run in the fresh workspace gave a
	// different status, output or error than the recording.
	CodeResultDiffers = "tool_result_differs"
	// CodeResultMissing: the recording has a result the replay never
	// produced (the replay stopped earlier, or took another path).
	CodeResultMissing = "tool_result_missing"
	// CodeResultExtra: the replay produced a result the recording lacks.
	CodeResultExtra = "tool_result_extra"
	// CodeStatusDiffers: the replay finished with another status.
	CodeStatusDiffers = "status_differs"
	// CodeMCPToolsChanged: an MCP server lists other tools than the
	// session recorded (its tools hash differs; field tools_hash, log the
	// recorded hash, replay the live one and what changed).
	CodeMCPToolsChanged = "mcp_tools_changed"
)

// RunConfig is what an offline replay needs. The caller builds Tools from
// Spec (cmd maps config to implementations); no provider is built: the
// recorded assistant turns stand in for the model.
type RunConfig struct {
	// Store records the replay as a session of its own (a scratch home is
	// fine); the original is never written.
	Store recorder.Store
	// SessionID of the original, and its events.
	SessionID string
	Events    []session.Event
	// Spec is the original's spec (spec.FromHeader); its workspace.from is
	// copied fresh for the replay. Tools is built from it.
	Spec  *spec.Spec
	Tools *tools.Registry
	// Strict stops the replay at the first tool result that differs.
	Strict bool
	// ReplayID, if set, names the replay session.
	ReplayID string
	// Observer, if set, sees the replay's events (a live view).
	Observer runner.Observer
	// Recordings is the store holding the original's subagents' sessions
	// (the home it ran in). With it a task call's child is served from its
	// own recording (children.go); without it task calls get an error
	// result and diverge.
	Recordings *recorder.Store
	// Tags label the new session over its spec's (an eval scenario's
	// eval.suite and eval.scenario; runner.Config.Tags).
	Tags map[string]string
}

// ToolDiff is one difference between a recorded tool result and the
// replay's.
type ToolDiff struct {
	Code   string `json:"code"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Seq is the result's seq in the original, ReplaySeq in the replay.
	Seq       int64  `json:"seq,omitempty"`
	ReplaySeq int64  `json:"replay_seq,omitempty"`
	Field     string `json:"field,omitempty"`
	Log       string `json:"log"`
	Replay    string `json:"replay"`
	// Turn is the ordinal of the assistant message that requested the
	// call (0 for a status difference).
	Turn int `json:"turn,omitempty"`
	// Session, when set, is the subagent session of the recording the
	// difference is in ("" for the replayed session itself), and
	// ReplaySession the replay's session of that subagent.
	Session       string `json:"session,omitempty"`
	ReplaySession string `json:"replay_session,omitempty"`
	// ChildSessionID, on a task call's difference, is the recorded
	// subagent whose replay gave the result, and ChildTurn the last of its
	// turns the replay served (the one that answered).
	ChildSessionID string `json:"child_session_id,omitempty"`
	ChildTurn      int    `json:"child_turn,omitempty"`
}

// StatusEndOfRecording is the replay status of an imported session whose
// source stopped after a tool result: every recorded turn was replayed,
// and the replay's own log ends when the recording has no next turn.
const StatusEndOfRecording = "end_of_recording"

// RunReport is the outcome of an offline replay; its JSON form is the
// --json output of `agentctl replay run` and only grows.
type RunReport struct {
	SessionID       string     `json:"session_id"`
	ReplaySessionID string     `json:"replay_session_id"`
	LogStatus       string     `json:"log_status"`
	ReplayStatus    string     `json:"replay_status"`
	Reason          string     `json:"reason,omitempty"`
	Turns           int        `json:"turns"`
	RecordedTurns   int        `json:"recorded_turns"`
	ToolResults     int        `json:"tool_results"`
	Same            int        `json:"same"`
	Differences     []ToolDiff `json:"differences"`
	// Stopped is true when --strict stopped the replay at a difference.
	Stopped bool `json:"stopped"`
	// Subagents are the replayed children, depth first in start order;
	// their differences are in Differences, named by Session.
	Subagents []SubagentReport `json:"subagents,omitempty"`
}

// SubagentReport is one subagent of a replay: its recording and the
// child session the replay started for it.
type SubagentReport struct {
	SessionID       string `json:"session_id"`
	ReplaySessionID string `json:"replay_session_id"`
	// ParentSessionID is the recording's parent of this child.
	ParentSessionID string `json:"parent_session_id"`
	LogStatus       string `json:"log_status"`
	ReplayStatus    string `json:"replay_status"`
	Turns           int    `json:"turns"`
	RecordedTurns   int    `json:"recorded_turns"`
	ToolResults     int    `json:"tool_results"`
	Same            int    `json:"same"`
}

// ErrInPlaceWorkspace is returned by Run for a spec whose workspace.path
// names a folder used in place: re-running its tools would change the
// user's files.
var ErrInPlaceWorkspace = errors.New("replay: the session used its workspace in place (workspace.path)")

// Run re-executes a recorded session offline: a new session is recorded in
// cfg.Store with the same spec, whose model is the recording itself
// (provider "recorded"), whose tools run for real in a fresh copy of
// workspace.from, and whose approvals are the recorded decisions. Each tool
// result is compared with the recorded one as it arrives.
//
// An imported session has no spec and no tools of agentctl's: the caller
// passes ImportedSpec and RecordedTools (or a spec file's tools, to re-run
// them), the replay gives the recording's later user prompts once the
// turns before them are served, and its status is not compared (the
// recording has no end of ours).
func Run(ctx context.Context, cfg RunConfig) (RunReport, error) {
	evs := cfg.Events
	rep := RunReport{SessionID: cfg.SessionID, Differences: []ToolDiff{}}
	if len(evs) == 0 || evs[0].Kind != session.KindSessionStarted {
		return rep, fmt.Errorf("replay run %s: the log does not start with session_started", cfg.SessionID)
	}
	if cfg.Spec.Workspace.Path != "" {
		return rep, fmt.Errorf("replay run %s: %w: %s; copy it and pass the copy as the initial workspace", cfg.SessionID, ErrInPlaceWorkspace, cfg.Spec.Workspace.Path)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	obs := newCompare(cfg.SessionID, "", evs, cfg.Strict, cancel, cfg.Recordings)
	obs.next = cfg.Observer
	fold := obs.origFold
	rep.LogStatus = string(fold.Status())
	decisions := recordedDecisions(fold, evs)

	sp := *cfg.Spec
	sp.Model.Provider = "recorded"
	prov := provider.NewRecorded(evs)
	rep.RecordedTurns = prov.Turns()

	rc := runner.Config{Spec: &sp, Store: cfg.Store, Provider: prov, Tools: cfg.Tools, Observer: obs, SessionID: cfg.ReplayID,
		Keys: obs.recordedKey, Tags: cfg.Tags}
	if cfg.Recordings != nil {
		rc.Children = obs
	}
	res, err := runner.Start(ctx, rc)
	// An imported session's later prompts come from its user; the replay
	// gives each once the turns before it are served, as the user did.
	var follow []followUp
	if fold.ImportedFrom != "" {
		follow = followUps(evs)
	}
	for err == nil && ctx.Err() == nil {
		if res.Status == session.StatusAwaitingApproval {
			var decided bool
			decided, err = applyRecordedDecisions(cfg.Store, res.SessionID, decisions)
			if err != nil || !decided {
				break
			}
		} else if res.Status == session.StatusDone && len(follow) > 0 && follow[0].afterTurns <= res.Turns {
			var add []session.Event
			for len(follow) > 0 && follow[0].afterTurns <= res.Turns {
				add = append(add, session.Event{Kind: session.KindUserMessage, Text: follow[0].text})
				follow = follow[1:]
			}
			if err = appendEvents(cfg.Store, res.SessionID, add); err != nil {
				break
			}
		} else {
			break
		}
		res, err = runner.Resume(ctx, rc, res.SessionID)
	}
	rep.ReplaySessionID, rep.ReplayStatus, rep.Reason, rep.Turns = res.SessionID, string(res.Status), res.Reason, res.Turns
	if fold.ImportedFrom != "" && res.Status == session.StatusFailed && res.Turns == rep.RecordedTurns &&
		strings.Contains(res.Reason, provider.ErrRecordingExhausted.Error()) {
		// The source's run stopped after a tool result (an exit, a
		// submission): every recorded turn was replayed, and the model the
		// replay stands in for has nothing more to say.
		rep.ReplayStatus = StatusEndOfRecording
		rep.Reason = fmt.Sprintf("every recorded turn was replayed; the %s run stopped after its last tool result", fold.ImportedFrom)
		if fold.SourceStatus != "" {
			rep.Reason += " (its end state: " + fold.SourceStatus + ")"
		}
	}
	if err != nil && res.SessionID == "" {
		return rep, fmt.Errorf("replay run %s: %w", cfg.SessionID, err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	rep.ToolResults, rep.Same, rep.Stopped = obs.results, obs.same, obs.anyStopped()
	rep.Differences = append(rep.Differences, obs.diffs...)
	if !rep.Stopped {
		rep.Differences = append(rep.Differences, obs.finish(rep.ReplayStatus, fold.ImportedFrom != "")...)
	}
	// A subagent's differences follow its parent's, depth first.
	rep.Differences, rep.Subagents = obs.childReports(rep.Differences, nil, rep.Stopped)
	return rep, err
}

// finish is the differences of o's session once its replay ended with
// status replay: the recorded results it never produced, and its end
// status (not compared for an imported session). o.mu is held.
func (o *compareObserver) finish(replay string, imported bool) []ToolDiff {
	var out []ToolDiff
	for _, id := range o.order {
		if !o.seen[id] {
			e := o.orig[id]
			out = append(out, o.named(ToolDiff{Code: CodeResultMissing, CallID: id.id, Tool: e.Tool, Seq: e.Seq, Turn: id.turn,
				Log: resultText(e), Replay: "(no result)"}))
		}
	}
	if log := string(o.origFold.Status()); replay != log && !imported {
		out = append(out, o.named(ToolDiff{Code: CodeStatusDiffers, Field: "status", Log: log, Replay: replay}))
	}
	return out
}

// named marks d as a difference in o's subagent session (nothing for the
// top session).
func (o *compareObserver) named(d ToolDiff) ToolDiff {
	if o.child != "" {
		d.Session, d.ReplaySession = o.child, o.fold.ID
	}
	return d
}

// callKey names a call across a log and its replay, whose seqs differ:
// the turn that requested it and its id (a model may reuse an id in a
// later turn).
type callKey struct {
	turn int
	id   string
}

func keyOf(c *session.Call) callKey { return callKey{c.Turn, c.ID} }

// recordedResults is, for each call of the recording that got one, the
// event that gave it its result: its tool_result, or a reconciled event
// that recovered or repeated it after a crash (that is the result the
// session went on with). order lists the calls in log order.
func recordedResults(fold *session.State, evs []session.Event) (map[callKey]session.Event, []callKey) {
	orig := map[callKey]session.Event{}
	var order []callKey
	for _, c := range fold.Calls {
		seq := c.ResultSeq
		if c.ReconciledSeq > seq && (c.Reconciled == session.ReconciledRecovered || c.Reconciled == session.ReconciledRepeated) {
			seq = c.ReconciledSeq
		}
		if e, ok := session.EventAt(evs, seq); ok && seq > 0 {
			orig[keyOf(c)] = e
			order = append(order, keyOf(c))
		}
	}
	return orig, order
}

// recordedDecisions is the approval decision the recording made for each
// call it decided.
func recordedDecisions(fold *session.State, evs []session.Event) map[callKey]session.Event {
	out := map[callKey]session.Event{}
	for _, c := range fold.Calls {
		if e, ok := session.EventAt(evs, c.DecisionSeq); ok && c.DecisionSeq > 0 {
			out[keyOf(c)] = e
		}
	}
	return out
}

// applyRecordedDecisions appends, for each call of the replay waiting for
// approval, the decision the recording made. decided is false when the
// recording has none (it stopped waiting too).
func applyRecordedDecisions(st recorder.Store, id string, decisions map[callKey]session.Event) (bool, error) {
	evs, _, err := st.Load(id)
	if err != nil {
		return false, err
	}
	var add []session.Event
	fold := session.Fold(evs)
	for _, c := range fold.AwaitingApproval() {
		d, ok := session.DecisionOf(decisions[keyOf(c)])
		if !ok {
			return false, nil
		}
		ev, err := session.Decide(fold, c.ID, d)
		if err != nil {
			return false, err
		}
		add = append(add, ev)
	}
	if len(add) == 0 {
		return false, nil
	}
	sess, _, err := st.Open(id, recorder.Options{})
	if err != nil {
		return false, err
	}
	defer sess.Close()
	_, err = sess.Append(add...)
	return err == nil, err
}

// appendEvents appends evs to session id of st.
func appendEvents(st recorder.Store, id string, evs []session.Event) error {
	sess, _, err := st.Open(id, recorder.Options{})
	if err != nil {
		return err
	}
	defer sess.Close()
	_, err = sess.Append(evs...)
	return err
}

func resultText(e session.Event) string {
	if e.Output != "" {
		return e.Output
	}
	if e.Error != "" {
		return "error: " + e.Error
	}
	return "(" + e.Status + ")"
}

// compareObserver compares each tool result with the recorded one as the
// runner records it. It folds the replay's events to name each call as
// the recording does (callKey).
type compareObserver struct {
	orig   map[callKey]session.Event
	order  []callKey
	next   runner.Observer
	strict bool
	stop   func()
	// origID is the recorded session compared against, origFold its fold;
	// child is origID when it is a subagent's ("" at the top).
	origID, child string
	origFold      *session.State
	origTurns     int
	// calls are the recording's calls by callKey (read only).
	calls map[callKey]*session.Call
	// recordings holds the recorded subagents (nil: none are served);
	// children are those this session's replay started, by task call.
	recordings *recorder.Store
	children   map[callKey]*childReplay
	started    []callKey

	mu      sync.Mutex
	fold    *session.State
	seen    map[callKey]bool
	diffs   []ToolDiff
	results int
	same    int
	stopped bool
}

// recordedKey is the idempotency key the replay's side-effecting call
// (turn, id, tool) runs under (runner.Config.Keys): the key the recording's
// call of that turn and id ran under, or for a call the recording never
// dispatched the key derived from the recording's event that requested it.
// A replayed call stands for the recorded one, and a key names the
// operation, never the attempt: a tool that deduplicates by key (a payment
// API) answers the replay with the operation it already did instead of
// doing a new one, and what the replay compares is the same call. A task
// call keeps the replay's own key, which names the replay's subagent
// session (runner.SubagentID): the recorded child's id would collide with
// the recording in a kept replay's home.
func (o *compareObserver) recordedKey(turn int, id, tool string) string {
	c := o.calls[callKey{turn, id}]
	if c == nil || tool == tools.NameTask {
		return ""
	}
	if c.IdempotencyKey != "" && c.Tool == tool {
		return c.IdempotencyKey
	}
	if c.RequestSeq == 0 {
		return ""
	}
	return runner.IdempotencyKey(o.origID, c.RequestSeq, c.Index, tool)
}

func (o *compareObserver) Event(e session.Event) {
	if o.next != nil {
		o.next.Event(e)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fold.Add(e)
	if e.Kind != session.KindToolResult || o.stopped {
		return // the cancellations that follow a strict stop are not compared
	}
	o.results++
	key := keyOf(o.fold.Call(e.CallID))
	o.seen[key] = true
	want, ok := o.orig[key]
	if !ok {
		o.diffs = append(o.diffs, o.named(ToolDiff{Code: CodeResultExtra, CallID: e.CallID, Tool: e.Tool, ReplaySeq: e.Seq, Turn: key.turn, Log: "(no result)", Replay: resultText(e)}))
		return
	}
	if ch := o.children[key]; ch != nil {
		// A subagent's result names its session (an error says where its
		// log is): the replay's child stands for the recorded one.
		ch.obs.mu.Lock()
		if id := ch.obs.fold.ID; id != "" {
			e.Output = strings.ReplaceAll(e.Output, id, ch.obs.origID)
			e.Error = strings.ReplaceAll(e.Error, id, ch.obs.origID)
		}
		ch.obs.mu.Unlock()
	}
	before := len(o.diffs)
	add := func(field, a, b string) {
		if a != b {
			d := o.named(ToolDiff{Code: CodeResultDiffers, CallID: e.CallID, Tool: e.Tool, Seq: want.Seq, ReplaySeq: e.Seq, Turn: key.turn, Field: field, Log: a, Replay: b})
			if ch := o.children[key]; ch != nil {
				d.ChildSessionID, d.ChildTurn = ch.obs.origID, ch.prov.Turn()
			}
			o.diffs = append(o.diffs, d)
		}
	}
	if want.Kind == session.KindReconciled {
		// A reconciliation records what the call returned as one text (a
		// repeat's error appended to its output), with no status.
		got := e.Output
		if e.Status != session.ResultOK && e.Error != "" {
			got = strings.TrimSpace(got + "\n" + e.Error)
		}
		add("output", want.Output, got)
	} else {
		add("status", want.Status, e.Status)
		add("output", want.Output, e.Output)
		add("error", want.Error, e.Error)
	}
	if len(o.diffs) == before {
		o.same++
		return
	}
	if o.strict {
		o.stopped = true
		o.stop()
	}
}

func (o *compareObserver) Text(delta string) {
	if o.next != nil {
		o.next.Text(delta)
	}
}
