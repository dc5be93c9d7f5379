package runner

import (
	// Every registered model API: the proxy serves their wires; a run calls
	// their clients.
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	_ "github.com/agentctl/agentctl/internal/modelapi/all"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/gitsafe"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// Approval scopes.
const (
	ScopeOnce    = session.ScopeOnce
	ScopeSession = session.ScopeSession
)

// Observer sees the run as it happens, for the live view. Event is called
// after the event is durable. Calls come from the runner's goroutine only.
type Observer interface {
	Event(e session.Event)
	Text(delta string)
}

// Config is what one run needs, by mode: what every session has, what
// agentctl's own loop runs, the host of an external agent, and what only
// a resume reads. The caller builds the provider and the tool
// registry from the spec (cmd maps config to implementations).
type Config struct {
	Spec  *spec.Spec
	Store recorder.Store
	// Prompt overrides Spec.Prompt for a new session.
	Prompt   string
	Observer Observer
	Clock    func() time.Time
	// SessionID, if set, is used for a new session instead of a random id.
	SessionID string
	// NoSync skips fsync on appends. Only for crash tests that kill
	// processes (the page cache survives SIGKILL); never for real runs.
	NoSync bool

	// What agentctl's own loop runs: the model, the tools, and what
	// subagents, replays and crash tests lay over them.
	Provider provider.Provider
	Tools    *tools.Registry
	// Failpoint, when set, is called after each event is durable ("after",
	// seq) and inside each tool call after its effect ("in-tool", intent
	// seq). In-process crash injection panics from it; see crashtest.
	Failpoint func(kind string, seq int64)
	// NewProvider builds the provider of a subagent's spec (the task
	// tool); without it task calls fail with an error result.
	NewProvider func(*spec.Spec) (provider.Provider, error)
	// Children, if set, serves subagents' models instead of NewProvider
	// (replay serves each child from its own recording).
	Children ChildSource
	// Parent, for a subagent, names its parent in the new session's
	// header (parent_session_id, parent_seq; attrs root_session_id).
	Parent *Lineage
	// Keys, when set, gives the idempotency key of a side-effecting call
	// (turn: the ordinal of the assistant message that requested it) in
	// place of one derived from this session; "" derives it as usual.
	// replay run passes the recording's keys: its calls stand for the
	// recording's, and a key is the operation's, derived from the event
	// that first requested it, never from an attempt (a replay is one), so
	// a tool that deduplicates by key sees the operation it already did.
	Keys func(turn int, callID, tool string) string

	// Agent runs an external agent's session (spec agent:): the program
	// and the proxy its model calls go through, built by agenthost. The
	// runner keeps what every session has (the log and its fold, the
	// budget, the sandbox, the done checks) and hands it to Agent as a
	// Host; the own loop's fields above are unused.
	Agent Hosted

	// Tags label a new session, over the spec's tags (run --tag, an eval
	// scenario's eval.suite and eval.scenario); the header's attrs record
	// the merge. A subagent's session gets its parent's.
	Tags map[string]string

	// Resume is what only Resume reads: the changes the user allowed.
	Resume ResumeOptions
}

// ResumeOptions are the changes a resume was allowed to make to the
// session it continues; each is recorded before anything runs.
type ResumeOptions struct {
	// SpecChanges lists the top-level keys in which Spec differs
	// from the spec the session recorded (spec.Changes). The caller has
	// checked that the change is wanted; Resume records it as a
	// spec_changed event before anything runs.
	SpecChanges []string
	// AllowModelChange lets Resume continue with a provider or model other
	// than the one the session pinned; the change is recorded as a
	// model_changed event. Without it such a resume is refused.
	AllowModelChange bool
	// Budget holds KEY=VALUE settings (resume --budget
	// max_wall=10m) laid over the budget in force; the change is recorded
	// as a budget_changed event before anything runs.
	Budget []string
	// WorkspaceChoice says what to do when the workspace
	// differs from the recorded git state: WorkspaceAccept or
	// WorkspaceReset; "" refuses (a *WorkspaceMismatchError).
	WorkspaceChoice string
}

// Result is the outcome of Start or Resume. Err is set when the run ended
// on an error (provider failure, broken workspace) rather than a status.
type Result struct {
	SessionID    string         `json:"session_id"`
	Status       session.Status `json:"status"`
	Reason       string         `json:"reason,omitempty"`
	Events       int64          `json:"events"`
	Turns        int            `json:"turns"`
	ToolCalls    int64          `json:"tool_calls"`
	InputTokens  int64          `json:"input_tokens"`
	OutputTokens int64          `json:"output_tokens"`
	CostUSD      float64        `json:"cost_usd"`
	// External: the run was an external agent's (spec agent:), which is
	// not resumed.
	External bool  `json:"external,omitempty"`
	Err      error `json:"-"`
}

// Reasons recorded on session_finished, so exit codes and queries can tell
// why a run failed.
const (
	ReasonEvaluationFailed = "evaluation_failed"
	ReasonProviderError    = session.ReasonProviderError
	ReasonMaxTurns         = "max_turns"
	ReasonSetupError       = "setup_error"
	// ReasonContextOverflow: the next request would not fit
	// compaction.window even after compaction (ErrContextOverflow).
	ReasonContextOverflow = "context_overflow"
	// ReasonEarlierAttemptKilled marks the error event resume records for
	// each process of an earlier invocation it found alive and killed.
	ReasonEarlierAttemptKilled = "earlier_attempt_killed"
)

// run is one invocation of the loop over one session.
type run struct {
	cfg      Config
	sess     *recorder.Session
	st       *state
	id       string
	ws       string
	started  time.Time
	cancelMu sync.Mutex
	cause    string
	sandbox  *sandbox.Config // set by setupSandbox before any tool runs
	fp       failpoint       // crash injection (FailpointEnv)
	cpDue    int64           // seq after which the next checkpoint is worth writing
	capBy    string          // the budget limit that shrank the current call's max output, if one did

	secrets   *secrets       // what the log is redacted with (recorder Options.Redact)
	redactErr string         // the last redaction problem recorded
	textOut   io.WriteCloser // streamed text of the model call in progress, redacted
	sent      sentCalls      // the latest assistant message's calls, unredacted

	git         *gitsafe.Tracker // the run branch, opened on first use (gitstate.go)
	gitErr      error            // a call's changes could not be committed
	progressDue bool             // show the progress files before the next model call
}

func (r *run) now() time.Time {
	if r.cfg.Clock != nil {
		return r.cfg.Clock()
	}
	return time.Now()
}

// newSession is what every new session starts from: its first user
// message (the spec's prompt unless cfg overrides it), its id (cfg's or a
// new one) and its workspace as an absolute path (the spec's, else the
// session's own folder).
func newSession(cfg Config) (prompt, id, ws string, err error) {
	prompt = cfg.Spec.Prompt
	if cfg.Prompt != "" {
		prompt = cfg.Prompt
	}
	id = cfg.SessionID
	if id == "" {
		id = recorder.NewSessionID()
	}
	ws = cfg.Spec.Workspace.Path
	if ws == "" {
		ws = filepath.Join(cfg.Store.SessionDir(id), recorder.WorkspaceDir)
	}
	ws, err = filepath.Abs(ws)
	return prompt, id, ws, err
}

// Start creates a new session from cfg.Spec and runs it until it stops.
func Start(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Spec.External() {
		return startHosted(ctx, cfg)
	}
	defer stopServers(cfg.Tools)
	fp, err := loadFailpoint(cfg.Failpoint, subID(cfg))
	if err != nil {
		return Result{}, err
	}
	if err := tools.CheckMode(cfg.Spec.Mode, cfg.Tools); err != nil {
		return Result{}, fmt.Errorf("start: %w", err)
	}
	if err := needPrice(cfg.Spec, cfg.Spec.Budget.Session(), cfg.Spec.Model.ID); err != nil {
		return Result{}, fmt.Errorf("start: %w", err)
	}
	sp := cfg.Spec
	// The header carries the first user message, so a crash before it is
	// appended can be finished by resume with the same text.
	prompt, id, ws, err := newSession(cfg)
	if err != nil {
		return Result{}, err
	}
	header := session.Event{
		Kind:            session.KindSessionStarted,
		SessionID:       id,
		Name:            sp.Name,
		Provider:        sp.Model.Provider,
		Model:           sp.Model.ID,
		System:          sp.System,
		Spec:            sp.JSON(),
		SpecPath:        sp.Path,
		SpecHash:        specHash(sp),
		AgentctlVersion: buildinfo.Version,
		HarnessCommit:   buildinfo.Commit(),
		Workspace:       ws,
		Attrs:           headerAttrs(cfg.Tools),
		Text:            prompt,
	}
	if p := cfg.Parent; p != nil {
		header.ParentSessionID, header.ParentSeq = p.SessionID, p.Seq
		header.Attrs = subagentAttrs(cfg.Tools, p.Root)
	}
	header.Attrs = session.WithTags(header.Attrs, session.MergeTags(sp.Tags, cfg.Tags), "")
	sess, sec, err := createSession(cfg, &header, ws)
	if err != nil {
		return Result{}, err
	}
	defer sess.Close()
	// The header as written, redacted: the state folded here must be the
	// one a fold of the log gives (replay verify compares them).
	hdr := sess.Header()
	r := &run{cfg: cfg, sess: sess, st: newState(hdr.System), id: id, ws: ws, started: time.Now(), fp: fp, secrets: sec}
	r.st.add(hdr)
	r.observe(hdr)
	r.fp.hit("after", 1)
	if res, stopped, err := r.boot(header.Text); stopped || err != nil {
		return res, err
	}
	return r.loop(ctx)
}

// boot finishes a new session after its header: the session's workspace
// and the first user message. Resume calls it again when a crash cut it
// short; a copied workspace is then copied afresh.
func (r *run) boot(prompt string) (Result, bool, error) {
	if err := prepareWorkspace(r.cfg.Spec, r.ws); err != nil {
		res, err := r.fail(ReasonSetupError, err)
		return res, true, err
	}
	if err := r.setupSandbox(); err != nil {
		res, err := r.fail(ReasonSetupError, err)
		return res, true, err
	}
	first := session.Event{Kind: session.KindUserMessage, Text: prompt}
	if r.gitOn() {
		// The initializer commit: the workspace as the run found it, the
		// base of every diff, before the first tool call.
		sha, err := r.commitWorkspace(context.Background(), "initializer: the workspace of session "+r.id+" before its first call", r.st.LastSeq, "")
		if err != nil {
			res, err := r.fail(ReasonGitError, err)
			return res, true, err
		}
		first.GitSHA = sha
	}
	if err := r.append(first); err != nil {
		return r.result(), true, err
	}
	return Result{}, false, nil
}

// headerAttrs records the tool names offered to the model, in the order
// request digests use, so replay can recompute digests without the spec's
// registry code.
//
// The MCP servers whose tools are offered are recorded too
// ("mcp_servers": session.MCPServer each), so replay can tell a changed
// tool surface and serve the recorded tools offline.
func headerAttrs(reg *tools.Registry) json.RawMessage {
	servers := mcpServers(reg)
	if len(servers) == 0 {
		b, _ := json.Marshal(map[string][]string{"tools": reg.Names()})
		return b
	}
	b, _ := json.Marshal(struct {
		Tools      []string            `json:"tools"`
		MCPServers []session.MCPServer `json:"mcp_servers"`
	}{reg.Names(), servers})
	return b
}

// Resume continues a stopped session: awaiting approval, interrupted, over
// budget, failed on a provider error, or crashed.
func Resume(ctx context.Context, cfg Config, id string) (Result, error) {
	if cfg.Spec.External() {
		return Result{}, fmt.Errorf("resume %s: the session ran an external agent, which keeps its own state agentctl cannot restore; run it again (agentctl run), or re-run it against the recording offline (agentctl replay run %s)", id, id)
	}
	defer stopServers(cfg.Tools)
	fp, err := loadFailpoint(cfg.Failpoint, subID(cfg))
	if err != nil {
		return Result{}, err
	}
	if err := tools.CheckMode(cfg.Spec.Mode, cfg.Tools); err != nil {
		return Result{}, fmt.Errorf("resume %s: %w", id, err)
	}
	sec := newSecrets(cfg.Spec.Workspace.From) // the workspace's .env files join once the header is read
	sess, rec, err := cfg.Store.Open(id, recorder.Options{Clock: cfg.Clock, NoSync: cfg.NoSync, Redact: sec.redactor})
	if err != nil {
		return Result{}, fmt.Errorf("resume %s: %w", id, err)
	}
	defer sess.Close()
	evs, _, err := cfg.Store.Load(id)
	if err != nil {
		return Result{}, fmt.Errorf("resume %s: %w", id, err)
	}
	if len(evs) == 0 || evs[0].Kind != session.KindSessionStarted {
		return Result{}, fmt.Errorf("resume %s: the log does not start with session_started", id)
	}
	st, _ := foldLog(cfg.Store.SessionDir(id), evs)
	// If the last invocation crashed, its segment ends at its last event:
	// the time the session lay dead does not count as wall time.
	st.EndSegment(st.LastTS)
	// The workspace is the session's own folder or the one the spec the
	// user runs names, never a folder the header alone names.
	ws, err := cfg.Store.Workspace(id, evs[0], cfg.Spec.Workspace.Path)
	if err != nil {
		return Result{}, fmt.Errorf("resume %s: %w", id, err)
	}
	r := &run{cfg: cfg, sess: sess, st: st, id: id, ws: ws, started: time.Now(), fp: fp, secrets: sec}
	sec.watch(r.ws)
	if r.st.Status() == session.StatusDone {
		return r.result(), fmt.Errorf("resume %s: the session already finished with status done; fork it to continue (agentctl replay fork)", id)
	}
	if rec.Truncated {
		// Say in the log itself what recovery did, for tomorrow's reader.
		if err := r.append(session.Event{Kind: session.KindError, Reason: "torn_tail_recovered",
			Error: fmt.Sprintf("cut %d bytes of a record torn by a crash; the original log is kept at %s", rec.TornBytes, rec.BrokenCopy)}); err != nil {
			return r.result(), err
		}
	}
	// Nothing of an earlier attempt may run while this one reconciles
	// or repeats its calls.
	if err := r.sweepEarlier(); err != nil {
		return r.result(), fmt.Errorf("resume %s: %w", id, err)
	}
	if human := r.st.NeedsHuman(); len(human) > 0 {
		// Sticky: going on would let the model act on a side effect nobody
		// has checked. Nothing is appended; the status stands.
		var ids []string
		for _, c := range human {
			ids = append(ids, c.ID)
		}
		sort.Strings(ids)
		res := r.result()
		res.Status = session.StatusNeedsHuman
		res.Reason = fmt.Sprintf("call %s still needs a human: check its effect, then record it with 'agentctl resolve %s %s --output TEXT' (it took effect) or '--not-done'",
			strings.Join(ids, ", "), id, ids[0])
		return res, nil
	}
	budget, budgetEv, budgetChanged, err := resumeBudget(cfg, r.st.Budget)
	if err != nil {
		return r.result(), fmt.Errorf("resume %s: %w", id, err)
	}
	if err := needPrice(cfg.Spec, budget, cfg.Spec.Model.ID); err != nil {
		return r.result(), fmt.Errorf("resume %s: %w", id, err)
	}
	if r.st.Status() == session.StatusBudgetExceeded {
		// Going on would only stop again: say what to raise, append nothing.
		inForce := r.st.Budget
		r.st.Budget = budget
		over := r.spent()
		r.st.Budget = inForce
		if over != "" {
			res := r.result()
			res.Status = session.StatusBudgetExceeded
			res.Reason = fmt.Sprintf("%s; the session is still over its budget: raise it with agentctl resume %s --budget %s=VALUE",
				over, id, budgetKeyOf(over))
			return res, nil
		}
	}
	if len(cfg.Resume.SpecChanges) > 0 {
		if err := r.append(session.Event{Kind: session.KindSpecChanged, SpecPath: cfg.Spec.Path, SpecHash: specHash(cfg.Spec),
			Reason: "resume --allow-spec-change; changed: " + strings.Join(cfg.Resume.SpecChanges, ", ")}); err != nil {
			return r.result(), err
		}
	}
	if budgetChanged {
		if err := r.append(budgetEv); err != nil {
			return r.result(), err
		}
	}
	if err := r.pinModel(); err != nil {
		return r.result(), fmt.Errorf("resume %s: %w", id, err)
	}
	if ev, changed := mcpChanged(evs[0], cfg.Tools); changed {
		if err := r.append(ev); err != nil {
			return r.result(), err
		}
		r.cfg.Tools = recordedMCPOnly(evs[0], cfg.Tools)
	}
	if !r.st.Prompted {
		prompt := evs[0].Text
		if prompt == "" {
			prompt = cfg.Spec.Prompt
		}
		if res, stopped, err := r.boot(prompt); stopped || err != nil {
			return res, err
		}
	} else {
		if err := r.setupSandbox(); err != nil {
			return r.fail(ReasonSetupError, err)
		}
		if err := r.verifyWorkspace(ctx, cfg.Resume.WorkspaceChoice); err != nil {
			return r.result(), err
		}
		r.progressDue = true
	}
	if setter, ok := cfg.Provider.(interface{ SetTurn(int) }); ok {
		setter.SetTurn(r.st.Turns)
	}
	return r.loop(ctx)
}

// pinModel refuses to continue a session with another provider or model
// than the one it is pinned to, unless the change is allowed; an allowed
// change is recorded, never silent.
func (r *run) pinModel() error {
	prov, model := r.cfg.Provider.Name(), r.cfg.Spec.Model.ID
	if prov == r.st.Provider && model == r.st.Model {
		return nil
	}
	if !r.cfg.Resume.AllowModelChange {
		return fmt.Errorf("the session is pinned to %s, not %s; pass --allow-model-change to switch (the change is recorded)",
			session.ModelName(r.st.Provider, r.st.Model), session.ModelName(prov, model))
	}
	return r.append(session.Event{Kind: session.KindModelChanged, Provider: prov, Model: model,
		Reason: "resume --allow-model-change; was " + session.ModelName(r.st.Provider, r.st.Model)})
}

// append makes events durable, folds them and shows them, in that order.
// The recorder redacts them (see secrets); what is folded and shown is
// what it wrote, so the state the next request is projected from is the
// one a fold of the log gives.
func (r *run) append(evs ...session.Event) error {
	_, err := r.appendOut(evs...)
	return err
}

// appendOut is append returning the events as written (seq, ts, redacted),
// for the proxy's Sink of an external agent's run.
func (r *run) appendOut(evs ...session.Event) ([]session.Event, error) {
	if p := r.redactionProblem(); p != nil {
		evs = append(p, evs...)
	}
	for i := range evs {
		if evs[i].SessionID == "" && evs[i].Kind == session.KindSessionStarted {
			evs[i].SessionID = r.id
		}
	}
	out, err := r.sess.Append(evs...)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", evs[0].Kind, err)
	}
	for _, e := range out {
		r.st.add(e)
		r.observe(e)
	}
	for _, e := range out {
		r.fp.hit("after", e.Seq)
	}
	return out, nil
}

func (r *run) observe(e session.Event) {
	if r.cfg.Observer != nil {
		r.cfg.Observer.Event(e)
	}
}

func (r *run) result() Result {
	res := Result{
		SessionID: r.id, Events: r.st.LastSeq, Turns: r.st.Turns, ToolCalls: r.st.ToolCalls,
		InputTokens: r.st.InputTokens, OutputTokens: r.st.OutputTokens, CostUSD: r.st.CostUSD,
		Status: session.StatusRunning,
	}
	if f := r.st.Finished; f != nil && f.Seq == r.st.LastSeq {
		res.Status, res.Reason = session.Status(f.Status), f.Reason
	}
	return res
}

// finish records the end of this invocation.
func (r *run) finish(status session.Status, reason string) (Result, error) {
	err := r.append(session.Event{Kind: session.KindSessionFinished, Status: string(status), Reason: reason})
	return r.result(), err
}

// fail records an error and a failed finish; the returned Result carries
// the cause so the CLI can exit 1 and say it.
func (r *run) fail(reason string, cause error) (Result, error) {
	_ = r.append(session.Event{Kind: session.KindError, Reason: reason, Error: cause.Error()})
	res, err := r.finish(session.StatusFailed, reason+": "+cause.Error())
	res.Err = cause
	return res, err
}

// watchCancel turns the appearance of the cancel file into a context
// cancellation, so tools and model calls stop the same way as on SIGINT.
func (r *run) watchCancel(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	path := filepath.Join(r.cfg.Store.SessionDir(r.id), recorder.CancelFile)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := os.Stat(path); err == nil {
					r.cancelMu.Lock()
					r.cause = "cancel file " + path
					r.cancelMu.Unlock()
					_ = os.Remove(path)
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel() }
}

func (r *run) interruptReason(ctx context.Context) string {
	r.cancelMu.Lock()
	defer r.cancelMu.Unlock()
	if r.cause != "" {
		return r.cause
	}
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c.Error()
	}
	return "signal"
}

// loop runs turns until the session stops.
func (r *run) loop(parent context.Context) (Result, error) {
	ctx, stop := r.watchCancel(parent)
	defer stop()

	if res, done, err := r.reconcile(ctx); done || err != nil {
		return res, err
	}
	if open := r.st.openCalls(); len(open) > 0 {
		if res, stopped, err := r.runCalls(ctx, open); stopped || err != nil {
			return res, err
		}
	}
	// A crash after the model said it was done: evaluate (or act on the
	// evaluation already recorded) instead of asking the model again.
	if r.st.DoneClaim || (r.st.TruncClaim && r.cfg.Spec.Truncated() == spec.TruncatedEvaluate) {
		var res Result
		var stopped bool
		var err error
		if r.st.LastEval != nil {
			res, stopped, err = r.decide(r.st.LastEval.Outcome, r.st.LastEval.Evidence, nil)
		} else {
			res, stopped, err = r.evaluate(ctx)
		}
		if stopped || err != nil {
			return res, err
		}
	}
	sp := r.cfg.Spec
	for {
		if ctx.Err() != nil {
			return r.interrupt(ctx, "", nil)
		}
		r.writeCheckpoint()
		if r.st.Turns >= sp.MaxTurns {
			return r.finish(session.StatusFailed, fmt.Sprintf("%s: the run used all %d turns (raise max_turns in the spec)", ReasonMaxTurns, sp.MaxTurns))
		}
		compactions := r.st.Compactions
		if over, err := r.maybeCompact(ctx); err != nil {
			if ctx.Err() != nil {
				return r.interrupt(ctx, "", nil)
			}
			if errors.Is(err, ErrContextOverflow) {
				return r.fail(ReasonContextOverflow, err)
			}
			return r.failProvider(err)
		} else if over != "" {
			return r.overBudget(over)
		}
		if r.progressDue || r.st.Compactions > compactions {
			if err := r.showProgress(); err != nil {
				return r.result(), err
			}
		}
		req := provider.Request{Model: r.st.Model, Messages: r.st.projector.Messages(), Tools: r.toolDefs()}
		if err := r.fitsWindow(req, "the next request"); err != nil {
			return r.fail(ReasonContextOverflow, err)
		}
		maxOut, over := r.modelBudget(req)
		if over != "" {
			return r.overBudget(over)
		}
		req.MaxTokens = maxOut
		var retries int64
		var retryErr error
		req = r.withRetryLog(req, &retries, &retryErr) // each failed try is a model_call
		began := time.Now()
		callCtx, cancelCall := r.callContext(ctx)
		resp, err := r.cfg.Provider.Complete(callCtx, req, r.onText)
		cancelCall()
		latency := callLatency(resp, began)
		r.flushText()
		if retryErr != nil {
			return r.result(), retryErr
		}
		if err != nil {
			if wallCut(ctx, callCtx) {
				// Cut at the deadline: the call is recorded with what it had
				// streamed and what it cost, and the budget ends the run.
				cut := r.failedCallEvent(req, resp, latency, retries+1, err)
				cut.Error = "cancelled at the max_wall deadline"
				if err := r.append(cut); err != nil {
					return r.result(), err
				}
				return r.overBudget(r.wallReason("the model call"))
			}
			if ctx.Err() != nil {
				// The call was cut: keep what the model had said, and what it
				// cost if the provider reported it.
				if resp.InputTokens+resp.OutputTokens > 0 {
					_ = r.append(r.modelCallEvent(req, resp, latency, "interrupted"))
				}
				return r.interrupt(ctx, resp.Text, nil)
			}
			_ = r.append(r.failedCallEvent(req, resp, latency, retries+1, err))
			return r.failProvider(err)
		}
		mc := r.modelCallEvent(req, resp, latency, "")
		if retries > 0 {
			mc.Attempt = retries + 1
		}
		if err := r.append(assistantEvent(resp), mc); err != nil {
			return r.result(), err
		}
		r.sent = sentCalls{seq: r.st.LastAssistantSeq, calls: resp.ToolCalls}
		if res, handled, stopped, err := r.afterAnswer(ctx, req, resp); handled {
			if stopped || err != nil {
				return res, err
			}
			continue
		}
		if len(resp.ToolCalls) == 0 {
			res, stopped, err := r.evaluate(ctx)
			if stopped || err != nil {
				return res, err
			}
			continue
		}
		if res, stopped, err := r.runCalls(ctx, r.st.openCalls()); stopped || err != nil {
			return res, err
		}
	}
}

func (r *run) modelCallEvent(req provider.Request, resp provider.Response, latency int64, errText string) session.Event {
	model := resp.Model
	if model == "" {
		model = req.Model
	}
	e := session.Event{
		Kind:          session.KindModelCall,
		RequestDigest: session.Digest(req.Messages, toolNames(req.Tools)),
		Provider:      r.cfg.Provider.Name(),
		Model:         model,
		LatencyMS:     latency,
		InputTokens:   resp.InputTokens,
		OutputTokens:  resp.OutputTokens,
		CostUSD:       r.billed(resp, req.Model),
		FinishReason:  resp.FinishReason,
		Error:         errText,

		CacheReadInputTokens:     resp.CacheReadTokens,
		CacheCreationInputTokens: resp.CacheCreationTokens,
		MaxTokens:                req.MaxTokens,
		ResponseID:               resp.ResponseID,
	}
	if req.Purpose != "" {
		e.Attrs = json.RawMessage(fmt.Sprintf(`{"purpose":%q}`, req.Purpose))
	}
	return e
}

// toolNames lists the offered tools for the request digest. Defs are in
// Registry.Names order, which the header records.
func toolNames(defs []provider.ToolDef) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

func (r *run) toolDefs() []provider.ToolDef {
	var out []provider.ToolDef
	for _, d := range r.cfg.Tools.Defs() {
		out = append(out, provider.ToolDef{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	return out
}

// interrupt closes the invocation after a cancel: calls not yet run are
// closed as cancelled, partial assistant text is kept.
func (r *run) interrupt(ctx context.Context, partial string, unrun []*callState) (Result, error) {
	var evs []session.Event
	for _, cs := range unrun {
		evs = append(evs, session.Event{Kind: session.KindToolResult, CallID: cs.Call.ID, Tool: cs.Call.Name,
			Status: session.ResultCancelled, Error: "cancelled before it ran: the run was interrupted"})
	}
	reason := r.interruptReason(ctx)
	evs = append(evs,
		session.Event{Kind: session.KindInterrupted, Text: partial, Reason: reason},
		session.Event{Kind: session.KindSessionFinished, Status: string(session.StatusInterrupted), Reason: reason})
	err := r.append(evs...)
	return r.result(), err
}

// IdempotencyKey derives the operation id of a call from the event that
// requested it, never from the attempt: the same on the first run and on
// every resume or replay.
func IdempotencyKey(sessionID string, assistantSeq int64, index int, tool string) string {
	return fmt.Sprintf("%s-%d-%d-%s", sessionID, assistantSeq, index, tool)
}

// keyOf is the idempotency key of call cs: the one Config.Keys gives, or
// the one derived from the event of this session that requested it.
func (r *run) keyOf(cs *callState) string {
	if r.cfg.Keys != nil {
		if k := r.cfg.Keys(cs.Turn, cs.Call.ID, cs.Call.Name); k != "" {
			return k
		}
	}
	return IdempotencyKey(r.id, cs.AssistantSeq, cs.Index, cs.Call.Name)
}

// runCalls dispatches the open calls of the latest assistant message in
// order. stopped is true when the invocation ended (approval, budget,
// interruption, needs_human).
func (r *run) runCalls(ctx context.Context, calls []*callState) (Result, bool, error) {
	sp := r.cfg.Spec
	for i, cs := range calls {
		if ctx.Err() != nil {
			res, err := r.interrupt(ctx, "", calls[i:])
			return res, true, err
		}
		name := cs.Call.Name
		args := r.callArgs(cs)
		t, ok := r.cfg.Tools.Get(name)
		if !ok {
			if err := r.toolError(cs, fmt.Sprintf("tool %q is not available in %s mode; available: %s", name, sp.Mode, strings.Join(r.cfg.Tools.Names(), ", "))); err != nil {
				return r.result(), true, err
			}
			continue
		}
		if err := tools.Validate(t, args); err != nil {
			if err := r.toolError(cs, err.Error()); err != nil {
				return r.result(), true, err
			}
			continue
		}
		if rule, gated := matchApproval(sp.Approvals, r.ws, name, args); gated && cs.Granted == "" {
			if r.st.Grants[name] {
				if err := r.append(session.Event{Kind: session.KindApprovalGranted, CallID: cs.Call.ID, Tool: name,
					Scope: ScopeSession, Reason: "covered by an earlier grant for the session"}); err != nil {
					return r.result(), true, err
				}
			} else {
				if !cs.Requested {
					if err := r.append(session.Event{Kind: session.KindApprovalRequest, CallID: cs.Call.ID, Tool: name,
						Args: cs.Call.Args, Reason: "rule " + rule}); err != nil {
						return r.result(), true, err
					}
				}
				res, err := r.finish(session.StatusAwaitingApproval,
					fmt.Sprintf("call %s (%s) waits for approval: agentctl approve %s %s, or deny", cs.Call.ID, name, r.id, cs.Call.ID))
				return res, true, err
			}
		}
		if over := r.toolBudget(); over != "" {
			res, err := r.overBudget(over)
			return res, true, err
		}
		if err := r.sandboxReady(t); err != nil {
			res, ferr := r.fail(ReasonSetupError, err)
			return res, true, ferr
		}
		key := ""
		if t.SideEffects() {
			key = r.keyOf(cs)
		}
		if err := r.append(session.Event{Kind: session.KindToolIntent, CallID: cs.Call.ID, Tool: name,
			Args: cs.Call.Args, IdempotencyKey: key}); err != nil {
			return r.result(), true, err
		}
		if name == tools.NameTask {
			// A child harness, not a tool process (subagent.go).
			interrupted, err := r.runTask(ctx, cs, args, key)
			if err != nil {
				return r.result(), true, err
			}
			if interrupted {
				out, err := r.interrupt(ctx, "", calls[i+1:])
				return out, true, err
			}
			continue
		}
		res, cut := r.execute(ctx, t, cs, args, key)
		if res.Harness != nil {
			// The run stops as on a failed log write: no end is recorded,
			// the intent stays pending, and resume reconciles the call.
			return r.result(), true, fmt.Errorf("call %s (%s): %w; the call's result is not recorded, and 'agentctl resume %s' reconciles it", cs.Call.ID, name, res.Harness, r.id)
		}
		if r.gitErr != nil {
			out, err := r.fail(ReasonGitError, r.gitErr)
			return out, true, err
		}
		if cut {
			out, err := r.overBudget(r.wallReason(fmt.Sprintf("call %s (%s)", cs.Call.ID, name)))
			return out, true, err
		}
		if res.Status == session.ResultCancelled || ctx.Err() != nil {
			out, err := r.interrupt(ctx, "", calls[i+1:])
			return out, true, err
		}
	}
	return r.result(), false, nil
}

// execute runs one tool call with args (see callArgs) and records its
// result. Subprocess output is redacted as it is captured (and so is the
// artifact of the whole output); the recorder redacts the rest. The call
// runs under what is left of max_wall (callContext); cut reports that the
// deadline cancelled it, and its result then says so.
func (r *run) execute(ctx context.Context, t tools.Tool, cs *callState, args json.RawMessage, key string) (res tools.Result, cut bool) {
	began := time.Now()
	var gate func(string) error
	if cs.Granted == "" && !r.st.Grants[cs.Call.Name] {
		// Decide again on the path the tool resolves at its I/O.
		gate = approvalGate(r.cfg.Spec.Approvals, cs.Call.Name)
	}
	callCtx, cancel := r.callContext(ctx)
	maxOut := r.outputCap()
	res = t.Run(callCtx, tools.Call{Args: args, Workspace: r.ws, IdempotencyKey: key,
		Timeout: time.Duration(r.cfg.Spec.ToolTimeout), Env: PassEnv(r.cfg.Spec.Sandbox.Env), MaxOutput: maxOut,
		Sandbox: r.sandbox, Redactor: r.redactor(), ArtifactPath: r.artifactPath(cs.Call.ID), Gate: gate})
	cancel()
	if res.Harness != nil {
		// Not the tool's answer: nothing is recorded, and the caller stops
		// the run (see tools.Result.Harness).
		return res, false
	}
	res.Output = r.capOutput(res.Output)
	if cut = wallCut(ctx, callCtx) && res.Status == session.ResultCancelled; cut {
		res.Error = fmt.Sprintf("cancelled at the max_wall deadline (%s) after %s; its processes were killed",
			r.budget().MaxWall, time.Since(began).Round(time.Millisecond))
	}
	// Crash injection: the effect happened, its result is not durable yet.
	r.fp.hit("in-tool", r.st.LastSeq)
	ev := session.Event{Kind: session.KindToolResult, CallID: cs.Call.ID, Tool: cs.Call.Name, Status: res.Status,
		Output: res.Output, Error: res.Error, LatencyMS: time.Since(began).Milliseconds()}
	if t.SideEffects() {
		ev.GitSHA = r.commitCall(ctx, cs)
	}
	if res.Artifact != "" {
		ev.Artifact = filepath.ToSlash(filepath.Join(recorder.ArtifactsDir, filepath.Base(res.Artifact)))
	}
	if err := r.append(ev); err != nil {
		// The writer is failed; the result is lost and the intent stays
		// pending, which resume reconciles.
		return tools.Result{Status: session.ResultCancelled, Error: err.Error()}, false
	}
	return res, cut
}

func (r *run) toolError(cs *callState, msg string) error {
	return r.append(session.Event{Kind: session.KindToolResult, CallID: cs.Call.ID, Tool: cs.Call.Name,
		Status: session.ResultError, Error: msg})
}

// PassEnv copies the named variables of agentctl's own environment (a
// spec's sandbox.env) into a tool's otherwise scrubbed environment: what
// a run, a fork's rebuild and an MCP server's start all pass.
func PassEnv(names []string) []string {
	var out []string
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			out = append(out, n+"="+v)
		}
	}
	return out
}

// createSession stamps the header and creates the session's log, the
// workspace's secrets redacted from what it records: stamped here so the
// state folded in memory and the log agree on when the session started.
func createSession(cfg Config, header *session.Event, ws string) (*recorder.Session, *secrets, error) {
	header.TS = time.Now()
	if cfg.Clock != nil {
		header.TS = cfg.Clock()
	}
	sec := newSecrets(cfg.Spec.Workspace.From)
	sec.watch(ws)
	sess, err := cfg.Store.Create(*header, recorder.Options{Clock: cfg.Clock, NoSync: cfg.NoSync, Redact: sec.redactor})
	if err != nil {
		return nil, nil, fmt.Errorf("create session: %w", err)
	}
	return sess, sec, nil
}
