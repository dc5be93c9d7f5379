package evals

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/agent"
	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/crashtest"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
)

// Config is what running a suite needs. Each run's provider, tools and
// backend come from its spec through package agent, as for `agentctl run`,
// with the store's home hidden from the tools.
type Config struct {
	// Store is the home the scenario sessions are recorded in, like any
	// run, so query, replay and bundle work on them.
	Store recorder.Store
	// Exe is the agentctl binary crash_safe runs children with; empty
	// fails crash_safe assertions with a reason.
	Exe string
	// Parallel runs this many scenario repeats at once (default 1).
	Parallel int
	// Shard selects a part of the suite (zero value: all of it).
	Shard Shard
	// Filter keeps the scenarios whose name matches (nil: all).
	Filter *regexp.Regexp
	// Repeat, when positive, overrides every scenario's repeat (--repeat);
	// thresholds stay shares, so the runs needed follow.
	Repeat int
	// Progress is called after each run, from one goroutine at a time.
	Progress func(Progress)
	// Observer, if set, makes an observer for each session (the live
	// OTLP exporter); AfterRun is called when a session stopped (seal it,
	// flush the observer). Both may be called concurrently.
	Observer func() runner.Observer
	AfterRun func(id string, obs runner.Observer)
	// Warn receives warnings (a corrupt history file skipped by a query).
	Warn io.Writer
	// Clock stamps the report (default time.Now).
	Clock func() time.Time
	// Getenv and LookPath say what the machine has, for the scenarios'
	// needs (default os.Getenv, exec.LookPath); see notRun.
	Getenv   func(string) string
	LookPath func(string) (string, error)
}

// Progress reports one finished run.
type Progress struct {
	Done, Total int
	Scenario    string
	Run         RunResult
}

// Runs is how many times sc runs: its repeat, or Config.Repeat.
func (c Config) Runs(sc *Scenario) int {
	if c.Repeat > 0 {
		return c.Repeat
	}
	return sc.Repeat
}

// Shard is part I of N of a suite (1-based). Scenario i (0-based, in file
// order) belongs to shard i mod N + 1, so shards are disjoint, cover the
// suite, and differ in size by at most one. The zero value is the whole
// suite.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ParseShard reads "I/N" with 1 <= I <= N.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("shard %q: use I/N with 1 <= I <= N, e.g. 2/3", s)
	}
	return Shard{Index: i, Count: n}, nil
}

func (sh Shard) String() string {
	if sh.Count == 0 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", sh.Index, sh.Count)
}

// Has reports whether scenario i (0-based) is in the shard.
func (sh Shard) Has(i int) bool { return sh.Count == 0 || i%sh.Count == sh.Index-1 }

// Select returns the indexes of the scenarios a shard and a filter keep.
// The shard is taken over the whole suite, so every job of a sharded CI
// run sees the same split whatever the filter.
func Select(s *Suite, sh Shard, filter *regexp.Regexp) []int {
	var out []int
	for i := range s.Scenarios {
		if sh.Has(i) && (filter == nil || filter.MatchString(s.Scenarios[i].Name)) {
			out = append(out, i)
		}
	}
	return out
}

type engine struct {
	suite *Suite
	cfg   Config
	crash map[int]*crashOnce
}

type crashOnce struct {
	once sync.Once
	res  Result
}

func (e *engine) observer() runner.Observer {
	if e.cfg.Observer == nil {
		return nil
	}
	return e.cfg.Observer()
}

func (e *engine) afterRun(id string, obs runner.Observer) {
	if e.cfg.AfterRun != nil {
		e.cfg.AfterRun(id, obs)
	}
}

// Run runs the selected scenarios of s, each Repeat times, up to
// cfg.Parallel runs at once, and checks their assertions. The report is
// in suite order whatever the parallelism. An error is returned only when
// nothing could be run; failed runs and assertions are in the report.
// When ctx is cancelled the runs stop (their sessions are interrupted and
// resumable) and the report holds what finished.
func Run(ctx context.Context, s *Suite, cfg Config) (*Report, error) {
	if cfg.Parallel < 1 {
		cfg.Parallel = 1
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Warn == nil {
		cfg.Warn = io.Discard
	}
	e := &engine{suite: s, cfg: cfg, crash: map[int]*crashOnce{}}
	began := cfg.Clock()
	rep := &Report{Version: ReportVersion, Suite: s.Name, SuitePath: s.Path, SuiteSHA256: s.SHA256, SuiteScenarios: len(s.Scenarios),
		Home: cfg.Store.Root, Started: began.UTC().Truncate(time.Second), Scenarios: []ScenarioResult{}}
	for i := range s.Scenarios {
		rep.SuiteNames = append(rep.SuiteNames, s.Scenarios[i].Name)
	}
	if cfg.Shard.Count > 0 {
		sh := cfg.Shard
		rep.Shards = []Shard{sh}
	}
	if cfg.Filter != nil {
		rep.Filter = cfg.Filter.String()
	}
	if cfg.Repeat > 0 {
		rep.Repeat = cfg.Repeat
	}
	type unit struct{ sc, slot, rep int }
	var units []unit
	for _, i := range Select(s, cfg.Shard, cfg.Filter) {
		sc := &s.Scenarios[i]
		n := cfg.Runs(sc)
		res := ScenarioResult{Name: sc.Name, Index: i, Line: sc.Line, Repeat: n,
			Threshold: sc.ThresholdValue(), Need: need(sc.ThresholdValue(), n), Runs: make([]RunResult, n)}
		if why := e.notRun(sc); why != "" {
			res.NotRunReason, res.Runs = why, []RunResult{}
			rep.Scenarios = append(rep.Scenarios, res)
			continue
		}
		rep.Scenarios = append(rep.Scenarios, res)
		e.crash[i] = &crashOnce{}
		for r := 0; r < n; r++ {
			units = append(units, unit{i, len(rep.Scenarios) - 1, r})
		}
	}
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	for _, u := range units {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rr := e.runOne(ctx, &s.Scenarios[u.sc], u.sc, u.rep)
			mu.Lock()
			defer mu.Unlock()
			rep.Scenarios[u.slot].Runs[u.rep] = rr
			done++
			if cfg.Progress != nil {
				cfg.Progress(Progress{Done: done, Total: len(units), Scenario: s.Scenarios[u.sc].Name, Run: rr})
			}
		})
	}
	wg.Wait()
	rep.Millis = cfg.Clock().Sub(began).Milliseconds()
	rep.tally()
	return rep, nil
}

// runOne makes one run of a scenario and checks its assertions.
func (e *engine) runOne(ctx context.Context, sc *Scenario, idx, r int) (rr RunResult) {
	began := time.Now()
	rr = RunResult{Repeat: r + 1, Results: []Result{}}
	defer func() { rr.Millis = time.Since(began).Milliseconds() }()
	if ctx.Err() != nil {
		rr.Error = "not run: the eval was interrupted"
		rr.Results = append(rr.Results, Result{Kind: KindRun, Assertion: "run", Message: rr.Error})
		return rr
	}
	var (
		id      string
		err     error
		replayR *replay.SessionReport
		matches *Result // a program's fork: its replayed turns, judged when it ran
		src     []session.Event
	)
	obs := e.observer()
	if sc.Replay != nil && sc.Replay.LiveFromTurn > 0 {
		var x *replay.ExternalForkReport
		x, err = e.forkProgram(ctx, sc, obs)
		if x != nil {
			id = x.SessionID
			m := forkMatches(sc.Replay, x)
			matches = &m
		}
	} else if sc.Replay != nil && sc.Replay.ForkFrom > 0 {
		id, err = e.fork(ctx, sc, obs)
	} else if sc.Replay != nil {
		var rep replay.SessionReport
		rep, src, err = e.replay(ctx, sc, obs)
		id, replayR = rep.ReplaySessionID(), &rep
	} else {
		var res runner.Result
		res, err = e.start(ctx, sc, obs)
		id = res.SessionID
		if err == nil {
			err = res.Err
		}
	}
	if id != "" {
		e.afterRun(id, obs)
	}
	rr.SessionID = id
	if err != nil {
		rr.Error = err.Error()
	}
	if id == "" {
		if rr.Error == "" {
			rr.Error = "the run recorded no session"
		}
		rr.Results = append(rr.Results, Result{Kind: KindRun, Assertion: "run", Message: rr.Error})
		return rr
	}
	evs, tail, lerr := e.cfg.Store.Load(id)
	if lerr != nil {
		rr.Error = fmt.Sprintf("read session %s: %v", id, lerr)
		rr.Results = append(rr.Results, Result{Kind: KindRun, Assertion: "run", Message: rr.Error})
		return rr
	}
	st := session.Fold(evs)
	sum := recorder.SummaryOf(id, st, tail, nil)
	rr.Status, rr.Reason = string(sum.Status), finishReason(evs)
	rr.Tokens, rr.ToolCalls, rr.CostUSD, rr.Turns = sum.InputTokens+sum.OutputTokens, sum.ToolCalls, sum.CostUSD, st.Turns
	if rr.Error != "" {
		rr.Results = append(rr.Results, Result{Kind: KindRun, Assertion: "run", Message: rr.Error})
	}
	f := &facts{id: id, evs: evs, sum: sum}
	if len(evs) > 0 {
		// Assertions and the reviewer read the workspace agentctl made for
		// this run, never a folder the header alone names.
		want := ""
		if sc.Replay == nil && sc.Spec != nil {
			want = sc.Spec.Workspace.Path
		}
		ws, werr := e.cfg.Store.Workspace(id, evs[0], want)
		if werr != nil {
			rr.Error = werr.Error()
			rr.Results = append(rr.Results, Result{Kind: KindRun, Assertion: "run", Message: rr.Error})
			return rr
		}
		f.ws = ws
	}
	for i := range sc.Assert {
		a := &sc.Assert[i]
		var res Result
		switch a.Kind {
		case KindSQL:
			res = e.sql(ctx, a, id)
		case KindCrashSafe:
			res = e.crashSafe(ctx, sc, idx, a)
		case KindReviewer:
			res = e.review(ctx, sc, a, f)
		default:
			res = check(ctx, a, f)
		}
		rr.Results = append(rr.Results, res)
	}
	switch {
	case matches != nil:
		rr.Results = append(rr.Results, *matches)
	case replayR != nil && replayR.External != nil && sc.Replay.Command != "":
		rr.Results = append(rr.Results, programMatches(sc.Replay, replayR.External, replay.RecordedOutcome(src), replay.RecordedOutcome(evs)))
	case replayR != nil:
		rr.Results = append(rr.Results, replayMatches(sc.Replay, replayR))
	}
	rr.OK = rr.Error == ""
	for _, res := range rr.Results {
		rr.OK = rr.OK && res.OK
	}
	return rr
}

func (e *engine) start(ctx context.Context, sc *Scenario, obs runner.Observer) (runner.Result, error) {
	sp := *sc.Spec // runs share nothing they write
	cfg, err := agent.Config(&sp, e.cfg.Store.Root)
	if err != nil {
		return runner.Result{}, err
	}
	cfg.Store, cfg.Observer = e.cfg.Store, obs
	cfg.Tags = e.tags(sc)
	return runner.Start(ctx, cfg)
}

// tags label a scenario's session with its suite and scenario, so that
// the sessions an eval ran are found by them (sessions --tag
// eval.suite=NAME, tags['eval.scenario'] in SQL). Names the suite file
// chose are cut to fit a tag, never refused.
func (e *engine) tags(sc *Scenario) map[string]string {
	t, _ := session.CleanTags(map[string]string{"eval.suite": e.suite.Name, "eval.scenario": sc.Name})
	return t
}

// replay re-runs the scenario's recorded session offline, as `agentctl
// replay run` does (replay.Session: agentctl's loop, an external agent
// behind the replaying proxy, or an import's recorded results); the
// replay is recorded in the eval's home.
//
// A replay with a command runs that program instead (replay.ProgramSpec):
// the recorded events are returned too, for the outcome it must match.
func (e *engine) replay(ctx context.Context, sc *Scenario, obs runner.Observer) (replay.SessionReport, []session.Event, error) {
	src, id, evs, err := e.recorded(sc.Replay, "replay")
	if err != nil {
		return replay.SessionReport{}, nil, err
	}
	cfg := replay.SessionConfig{Store: e.cfg.Store, Recordings: src, SessionID: id, Events: evs,
		WorkspaceFrom: sc.Replay.WorkspaceFrom, Ignore: sc.Replay.Ignore, Observer: obs, Tags: e.tags(sc)}
	if p := sc.Replay.Program(); p != nil {
		if err := e.programHome(p); err != nil {
			return replay.SessionReport{}, nil, fmt.Errorf("replay %s: %w", id, err)
		}
		cfg.Spec = replay.ProgramSpec(evs, *p)
	}
	rep, err := replay.Session(ctx, cfg)
	return rep, evs, err
}

// recorded loads the session a replay: scenario names, from its home.
func (e *engine) recorded(rp *Replay, op string) (recorder.Store, string, []session.Event, error) {
	src := e.cfg.Store
	if rp.Home != "" {
		src = recorder.Store{Root: rp.Home}
	}
	id, err := src.Resolve(rp.Session)
	if err != nil {
		return src, "", nil, fmt.Errorf("%s %s: %w", op, rp.Session, err)
	}
	evs, _, err := src.Load(id)
	if err == nil && len(evs) == 0 {
		err = errors.New("the log has no events")
	}
	if err != nil {
		return src, "", nil, fmt.Errorf("%s %s: %w", op, id, err)
	}
	return src, id, evs, nil
}

// programHome refuses a program workspace that holds the eval's home:
// every run copies the folder into a session of that home, which would
// then copy itself.
func (e *engine) programHome(p *replay.Program) error {
	if p.WorkspaceFrom == "" {
		return nil
	}
	home, err1 := filepath.Abs(e.cfg.Store.Root)
	from, err2 := filepath.Abs(p.WorkspaceFrom)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if home == from || strings.HasPrefix(home, from+string(filepath.Separator)) {
		return fmt.Errorf("the program's workspace_from %s holds the agentctl home %s, and every run copies it into that home; name the program's own folder, or use another home (--home)", from, home)
	}
	return nil
}

// forkProgram runs the scenario's program with the recorded model turns
// 1..live_from_turn-1 replayed and the rest served live by the scenario's
// model (default: the recorded one), as `agentctl replay fork` does for
// an external agent (replay.ForkSession).
func (e *engine) forkProgram(ctx context.Context, sc *Scenario, obs runner.Observer) (*replay.ExternalForkReport, error) {
	rp := sc.Replay
	src, id, evs, err := e.recorded(rp, "fork")
	if err != nil {
		return nil, err
	}
	p := rp.Program()
	if err := e.programHome(p); err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	seq, err := replay.ForkSeqOfTurn(evs, rp.LiveFromTurn)
	if err != nil {
		return nil, fmt.Errorf("fork %s: live_from_turn %w", id, err)
	}
	rep, err := replay.ForkSession(ctx, replay.ForkSessionConfig{Store: e.cfg.Store, Recordings: src, SessionID: id, Events: evs,
		From: seq, Spec: replay.ProgramSpec(evs, *p), Model: sc.Model, Observer: obs, Tags: e.tags(sc)})
	return rep.External, err
}

// fork forks the scenario's recorded session after replay.fork_from and
// goes on live, as `agentctl replay fork` does (replay.ForkSession, with
// the spec replay.ContinueSpec chooses): with the scenario's model if it
// names one, else the session's pinned model. The fork is recorded in the
// eval's home.
func (e *engine) fork(ctx context.Context, sc *Scenario, obs runner.Observer) (string, error) {
	rp := sc.Replay
	src, id, evs, err := e.recorded(rp, "fork")
	if err != nil {
		return "", err
	}
	sp, standIn, _, err := replay.ContinueSpec(src.Root, evs, "")
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	if rp.WorkspaceFrom != "" {
		sp.Workspace.From, sp.Workspace.Path = rp.WorkspaceFrom, ""
	}
	rep, err := replay.ForkSession(ctx, replay.ForkSessionConfig{Store: e.cfg.Store, Recordings: src, SessionID: id, Events: evs,
		From: rp.ForkFrom, Spec: sp, StandIn: standIn != "", Model: sc.Model, Prompt: sc.Prompt, Observer: obs, Tags: e.tags(sc)})
	if rep.SessionID() == "" && err == nil {
		err = fmt.Errorf("fork %s: no session was made", id)
	}
	return rep.SessionID(), err
}

func replayMatches(rp *Replay, sr *replay.SessionReport) Result {
	if x := sr.External; x != nil {
		return externalMatches(rp, x)
	}
	rep := sr.Own
	res := Result{Kind: KindReplayMatches, Assertion: "replay_matches: " + rep.SessionID, OK: true}
	if len(rep.Differences) == 0 {
		res.Message = fmt.Sprintf("%d tool results as recorded, status %s", rep.ToolResults, rep.ReplayStatus)
		return res
	}
	var p []string
	for _, d := range rep.Differences {
		switch d.Code {
		case replay.CodeStatusDiffers:
			p = append(p, fmt.Sprintf("[%s] log has %s, replay produced %s", d.Code, d.Log, d.Replay))
			continue
		case replay.CodeMCPToolsChanged:
			p = append(p, fmt.Sprintf("[%s] mcp server %s: log has %s, the server now lists %s", d.Code, d.Tool, d.Log, d.Replay))
			continue
		}
		field := ""
		if d.Field != "" {
			field = " " + d.Field
		}
		p = append(p, fmt.Sprintf("[%s] call %s (%s)%s: log has %q, replay produced %q", d.Code, d.CallID, d.Tool, field, clip.Bytes(d.Log, 60), clip.Bytes(d.Replay, 60)))
	}
	res.Message = fmt.Sprintf("%d differences from the recording: %s", len(rep.Differences), strings.Join(p, "; "))
	res.OK = rp.AllowDifferences
	d := rep.Differences[0]
	res.Divergence = &Divergence{Turn: d.Turn, Seq: d.Seq, What: p[0]}
	if d.Code != replay.CodeStatusDiffers && d.Code != replay.CodeMCPToolsChanged {
		res.Divergence.Log, res.Divergence.Replay = diffWindow(d.Log, d.Replay, maxDiffText)
	}
	return res
}

// externalMatches judges the replay of an external agent's session: its
// model calls matched the recording (volatile parts aside) and it ended
// with the recorded status.
func externalMatches(rp *Replay, x *replay.ExternalReport) Result {
	res := Result{Kind: KindReplayMatches, Assertion: "replay_matches: " + x.SessionID, OK: true}
	var p []string
	for _, f := range x.Findings {
		if f.Fatal {
			p = append(p, fmt.Sprintf("%s diverged: %s", f.Where(x.ReplaySessionID), f.What))
			if res.Divergence == nil {
				res.Divergence = &Divergence{Turn: f.Turn, Seq: f.Seq, What: f.What}
			}
		}
	}
	if x.ReplayStatus != x.LogStatus {
		p = append(p, fmt.Sprintf("[%s] log has %s, replay produced %s", replay.CodeStatusDiffers, x.LogStatus, x.ReplayStatus))
	}
	if len(p) == 0 && !x.Diverged {
		res.Message = fmt.Sprintf("%d of %d recorded model calls as recorded, status %s", x.Turns, x.RecordedTurns, x.ReplayStatus)
		if sum := replaymatch.Summary(x.Normalised); sum != "" {
			res.Message += "; normalised: " + sum
		}
		return res
	}
	res.Message = fmt.Sprintf("the external agent's replay differs from the recording: %s", strings.Join(p, "; "))
	res.OK = rp.AllowDifferences
	return res
}

// programMatches judges a program's run against a recording: every
// request it sent matched the recorded one at its turn (a divergence names
// the turn), it made the recorded number of model calls, and it ended as
// the recording did (status, and the final answer: the text of the last
// model answer).
func programMatches(rp *Replay, x *replay.ExternalReport, want, got replay.Outcome) Result {
	res := Result{Kind: KindReplayMatches, Assertion: "replay_matches: " + x.SessionID, OK: true}
	if d := divergence(x.Findings, x.Diverged); d != "" {
		// What follows a divergence (fewer calls, another ending) is its
		// consequence: the first differing request is the news.
		res.Message, res.OK = "the program's requests differ from the recording: "+d, rp.AllowDifferences
		return res
	}
	var p []string
	if x.Turns != x.RecordedTurns {
		p = append(p, fmt.Sprintf("the program made %d model calls, the recording %d", x.Turns, x.RecordedTurns))
	}
	if got.Status != want.Status {
		why := ""
		if x.ReplayReason != "" {
			why = " (" + x.ReplayReason + ")"
		}
		p = append(p, fmt.Sprintf("[%s] the recording ended %s, the program's run %s%s", replay.CodeStatusDiffers, want.Status, got.Status, why))
	}
	if got.Answer != want.Answer {
		p = append(p, fmt.Sprintf("final answer: log has %q, the program's run %q", clip.Bytes(want.Answer, 60), clip.Bytes(got.Answer, 60)))
	}
	if len(p) == 0 {
		res.Message = fmt.Sprintf("the program made the %d recorded model calls as recorded and ended %s with the recorded answer", x.Turns, got.Status)
		return res
	}
	res.Message = "the program's run differs from the recording: " + strings.Join(p, "; ")
	res.OK = rp.AllowDifferences
	return res
}

// forkMatches judges the replayed part of a program's fork: the turns
// before live_from_turn must match the recording (the rest is judged by
// the assertions).
func forkMatches(rp *Replay, x *replay.ExternalForkReport) Result {
	res := Result{Kind: KindReplayMatches, Assertion: "replay_matches: " + x.ParentID, OK: true}
	if d := divergence(x.Findings, x.Diverged); d != "" {
		res.Message, res.OK = "the program's replayed turns differ from the recording: "+d, rp.AllowDifferences
		return res
	}
	res.Message = fmt.Sprintf("turns 1..%d as recorded, %d live", x.Replayed, x.Live)
	return res
}

// divergence is the first request of a program that did not match its
// recorded turn, with the count of later ones, "" when none diverged.
func divergence(fs []proxy.Finding, diverged bool) string {
	var first *proxy.Finding
	more := 0
	for i := range fs {
		if fs[i].Fatal {
			if first == nil {
				first = &fs[i]
			} else {
				more++
			}
		}
	}
	switch {
	case first != nil && more > 0:
		return fmt.Sprintf("turn %d diverged: %s (and %d later turns)", first.Turn, first.What, more)
	case first != nil:
		return fmt.Sprintf("turn %d diverged: %s", first.Turn, first.What)
	case diverged:
		return "a request diverged from the recording"
	}
	return ""
}

// sql runs a sql assertion over the home's views scoped to the session.
// It passes when the first column of the first row is true (a boolean
// true, a non-zero number, or the text true/t/yes/1).
func (e *engine) sql(ctx context.Context, a *Assertion, id string) Result {
	db, err := query.Open(ctx, e.cfg.Store.Root, e.cfg.Warn)
	if err != nil {
		return fail(a, "open the history: %v", err)
	}
	defer db.Close()
	// The views hold the run's session only, through every reload.
	if err := db.Scope(ctx, id); err != nil {
		return fail(a, "%v", err)
	}
	// The suite's SQL reads the run's rows, not the machine's files.
	if err := db.Confine(ctx); err != nil {
		return fail(a, "%v", err)
	}
	res, err := db.Query(ctx, *a.SQL)
	if err != nil {
		return fail(a, "%s", firstLine(err.Error()))
	}
	if len(res.Rows) == 0 || len(res.Columns) == 0 {
		return fail(a, "the query returned no rows")
	}
	v := res.Rows[0][0]
	if truthy(v) {
		return pass(a, "%s = %v", res.Columns[0], v)
	}
	return fail(a, "the query returned %s = %v, want true", res.Columns[0], v)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		return fmt.Sprint(x) != "0"
	case float32:
		return x != 0
	case float64:
		return x != 0
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "t", "yes", "1":
			return true
		}
	}
	return false
}

// crashSafe runs the scenario's crash matrix once per eval (the matrix
// does not depend on which repeat asks) and gives every repeat its result.
func (e *engine) crashSafe(ctx context.Context, sc *Scenario, idx int, a *Assertion) Result {
	c := e.crash[idx]
	c.once.Do(func() {
		if e.cfg.Exe == "" {
			c.res = fail(a, "crash_safe needs the agentctl binary to run children with, and none was given")
			return
		}
		points, err := crashtest.ParsePoints(a.CrashSafe.Points)
		if err != nil {
			c.res = fail(a, "%v", err)
			return
		}
		par := a.CrashSafe.Parallel
		if par == 0 {
			par = e.cfg.Parallel
		}
		rep, err := crashtest.Run(ctx, crashtest.Options{Exe: e.cfg.Exe, Spec: sc.Agent, Points: points, Parallel: par, Seed: 1})
		if err != nil {
			c.res = fail(a, "the crash matrix did not run: %v", err)
			return
		}
		if rep.Violations > 0 {
			var p []string
			for _, o := range rep.Outcomes {
				if o.Outcome == "violation" && len(p) < 5 {
					p = append(p, fmt.Sprintf("%s: %s", o.Point, strings.Join(o.Problems, ", ")))
				}
			}
			c.res = fail(a, "%d of %d crash points violated (baseline %s): %s; reproduce with: agentctl crashtest %s",
				rep.Violations, len(rep.Outcomes), rep.Baseline.Status, strings.Join(p, "; "), sc.Agent)
			return
		}
		c.res = pass(a, "%d crash points, no violation (baseline %s, %d events)", len(rep.Outcomes), rep.Baseline.Status, rep.Baseline.Events)
	})
	return c.res
}
