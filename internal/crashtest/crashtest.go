// Package crashtest kills agent runs at every event boundary and inside
// every side-effecting tool call, resumes them, and checks that the crash
// changed nothing a user could notice: the final status and workspace match
// an uncrashed run, every side effect happened exactly once, no
// acknowledged event was lost, and every intent has exactly one outcome.
//
// Each run is a real child process of the agentctl binary, killed with
// SIGKILL by its own failpoint (runner.FailpointEnv), in a home of its own.
// All runs use the same session id so idempotency keys, and therefore the
// tools' ledgers, are comparable across runs.
//
// Run is safe to call from one goroutine; it runs points concurrently
// (Options.Parallel) in separate homes.
package crashtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
)

// SessionID is the id every run of a crash test uses.
const SessionID = "c4a5c4a5c4a5c4a5"

// NoSyncEnv, set to 1, makes a run skip fsync. Crash tests set it for
// their children by default: a SIGKILL loses no written data (the page
// cache survives it), so fsync is not what a process-kill test exercises,
// and it is most of the time of a run. Options.Fsync keeps it.
const NoSyncEnv = "AGENTCTL_UNSAFE_NO_FSYNC"

// NoSealEnv, set to 1, makes a run or resume leave its session out of the
// Parquet history. Crash tests set it for their children: their homes are
// thrown away after the oracle read the logs, and sealing each finished
// child was about a seventh of the crash matrix's time.
const NoSealEnv = "AGENTCTL_NO_HISTORY_SEAL"

// maxResumes bounds the resumes after one crash (each may crash again when
// CrashResumes asks for it).
const maxResumes = 12

// Point is where a run is killed: after event Seq is durable ("after"), or
// inside the tool call whose intent is Seq, after its effect ("in-tool").
// Session, when set, names a subagent the run started: the seq is of the
// child's log, and the process (parent and child) dies there.
type Point struct {
	Kind    string `json:"kind"`
	Seq     int64  `json:"seq"`
	Session string `json:"session,omitempty"`
}

func (p Point) String() string {
	if p.Session != "" {
		return fmt.Sprintf("%s:%d@%s", p.Kind, p.Seq, p.Session)
	}
	return fmt.Sprintf("%s:%d", p.Kind, p.Seq)
}

// ParsePoints reads "all" (nil), or a comma list of N (after:N), after:N
// or in-tool:N, each optionally followed by @SESSION (a subagent's).
func ParsePoints(s string) ([]Point, error) {
	if s == "" || s == "all" {
		return nil, nil
	}
	var out []Point
	for _, f := range strings.Split(s, ",") {
		f, sess, at := strings.Cut(strings.TrimSpace(f), "@")
		kind, n, ok := strings.Cut(f, ":")
		if !ok {
			kind, n = "after", kind
		}
		seq, err := strconv.ParseInt(n, 10, 64)
		if err != nil || seq < 1 || (kind != "after" && kind != "in-tool") || (at && sess == "") {
			return nil, fmt.Errorf("point %q: use all, N, after:N or in-tool:N (each optionally @SESSION of a subagent)", f)
		}
		out = append(out, Point{kind, seq, sess})
	}
	return out, nil
}

// Options configure a crash test.
type Options struct {
	// Exe is the agentctl binary the runs use.
	Exe string
	// Spec is the agent spec to run.
	Spec string
	// Points to crash at; nil means every event boundary and every
	// side-effecting tool call of the uncrashed run.
	Points []Point
	// Parallel runs this many points at once (default 1).
	Parallel int
	// CrashResumes also kills each resume at a random later event, this
	// many times per point, before letting one finish.
	CrashResumes int
	// Seed drives the random resume crashes; printed in the report.
	Seed uint64
	// WorkDir holds the homes of the runs (a temp dir if empty).
	WorkDir string
	// Progress is called after each point with the count done.
	Progress func(done, total int)
	// Fsync keeps fsync in the children (see NoSyncEnv).
	Fsync bool
	// InProcess runs the scenario in this process instead of child
	// processes: a crash is a panic from runner.Config.Failpoint that
	// unwinds the run (closing its log and lease as process death would).
	// Much faster; the process mode stays the reference.
	InProcess bool
	// Build makes the runner config (provider, tools) for a spec; needed
	// by InProcess.
	Build func(spec string) (runner.Config, error)
	// Inspect, if set, is called with each point's home once the point is
	// judged, before the home is removed (a test reads the final logs).
	// Calls may come from several goroutines at once.
	Inspect func(p Point, home string)
}

// crash is the panic value of an in-process crash.
type crash struct{}

// exec runs or resumes the session in home, crashing at failpoint.
func (o Options) exec(ctx context.Context, home, failpoint string, args ...string) (result, bool, error) {
	if !o.InProcess {
		return o.child(ctx, home, failpoint, args...)
	}
	cfg, err := o.Build(o.Spec)
	if err != nil {
		return result{}, false, err
	}
	cfg.Store, cfg.SessionID, cfg.NoSync, cfg.Observer = recorder.Store{Root: home}, SessionID, !o.Fsync, nil
	var at Point
	if failpoint != "" {
		ps, err := ParsePoints(failpoint)
		if err != nil {
			return result{}, false, err
		}
		at = ps[0]
	}
	want := at.Kind
	if at.Session != "" {
		want += "@" + at.Session // a subagent's point (runner's childFailpoint)
	}
	cfg.Failpoint = func(kind string, seq int64) {
		if kind == want && seq == at.Seq {
			panic(crash{})
		}
	}
	var res runner.Result
	crashed := false
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(crash); !ok {
					panic(v)
				}
				crashed = true
			}
		}()
		if args[0] == "resume" {
			res, err = runner.Resume(ctx, cfg, SessionID)
		} else {
			res, err = runner.Start(ctx, cfg)
		}
	}()
	if crashed {
		return result{}, true, nil
	}
	if err != nil && res.SessionID == "" {
		return result{}, false, fmt.Errorf("%s: %w", args[0], err)
	}
	return result{SessionID: res.SessionID, Status: string(res.Status)}, false, nil
}

// Outcome of one crash point.
type Outcome struct {
	Point      Point    `json:"point"`
	Status     string   `json:"status"`
	Outcome    string   `json:"outcome"` // ok | violation | not_reached
	Duplicates int      `json:"duplicates"`
	Lost       int      `json:"lost"`
	Resumes    int      `json:"resumes"`
	Problems   []string `json:"problems,omitempty"`
	Millis     int64    `json:"ms"`
}

// Report is the whole matrix.
type Report struct {
	Spec       string    `json:"spec"`
	Seed       uint64    `json:"seed"`
	Baseline   Baseline  `json:"baseline"`
	Outcomes   []Outcome `json:"outcomes"`
	Violations int       `json:"violations"`
	Millis     int64     `json:"ms"`
}

// Baseline is the uncrashed run the crashed ones are compared with.
type Baseline struct {
	Status    string `json:"status"`
	Events    int    `json:"events"`
	Workspace string `json:"workspace_sha256"`
	lines     map[string]int
	children  int
}

// result is the --json object of `agentctl run|resume`.
type result struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
}

// Run runs the crash matrix.
func Run(ctx context.Context, o Options) (Report, error) {
	began := time.Now()
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if o.WorkDir == "" {
		d, err := os.MkdirTemp("", "agentctl-crashtest-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(d)
		o.WorkDir = d
	}
	rep := Report{Spec: o.Spec, Seed: o.Seed}
	home := filepath.Join(o.WorkDir, "baseline")
	res, crashed, err := o.exec(ctx, home, "", "run", o.Spec, "--session-id", SessionID)
	if err != nil || crashed {
		return rep, fmt.Errorf("the uncrashed run failed: %v", err)
	}
	evs, ws, err := load(home)
	if err != nil {
		return rep, err
	}
	digest, lines, err := hashTree(ws)
	if err != nil {
		return rep, err
	}
	rep.Baseline = Baseline{Status: res.Status, Events: len(evs), Workspace: digest, lines: lines, children: len(subagents(home))}
	points := o.Points
	if points == nil {
		points = allPoints(evs)
		// The subagents the run started: their ids derive from the task
		// calls' keys, the same in every run of the matrix.
		for _, id := range subagents(home) {
			kid, _, err := recorder.ReadFile(filepath.Join(home, "sessions", id, recorder.LogFile))
			if err != nil {
				return rep, fmt.Errorf("the uncrashed run's subagent %s: %w", id, err)
			}
			for _, p := range allPoints(kid) {
				p.Session = id
				points = append(points, p)
			}
		}
	}
	rep.Outcomes = make([]Outcome, len(points))
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, p := range points {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out := o.point(ctx, i, p, rep.Baseline)
			mu.Lock()
			rep.Outcomes[i] = out
			done++
			if o.Progress != nil {
				o.Progress(done, len(points))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, out := range rep.Outcomes {
		if out.Outcome == "violation" {
			rep.Violations++
		}
	}
	rep.Millis = time.Since(began).Milliseconds()
	return rep, ctx.Err()
}

// allPoints: after every event, and inside every tool call that has an
// idempotency key (the side-effecting ones).
func allPoints(evs []session.Event) []Point {
	var ps []Point
	for _, e := range evs {
		ps = append(ps, Point{Kind: "after", Seq: e.Seq})
		if e.Kind == session.KindToolIntent && e.IdempotencyKey != "" {
			ps = append(ps, Point{Kind: "in-tool", Seq: e.Seq})
		}
	}
	return ps
}

// point crashes one run at p, resumes it to the end and checks it.
func (o Options) point(ctx context.Context, i int, p Point, base Baseline) Outcome {
	began := time.Now()
	out := Outcome{Point: p}
	bad := func(format string, args ...any) { out.Problems = append(out.Problems, fmt.Sprintf(format, args...)) }
	home := filepath.Join(o.WorkDir, fmt.Sprintf("point-%04d", i))
	defer os.RemoveAll(home)
	if o.Inspect != nil {
		defer o.Inspect(p, home)
	}

	res, crashed, err := o.exec(ctx, home, p.String(), "run", o.Spec, "--session-id", SessionID)
	if err != nil {
		out.Outcome = "violation"
		bad("crashed run: %v", err)
		return out
	}
	if !crashed {
		out.Outcome, out.Status = "not_reached", res.Status
		out.Millis = time.Since(began).Milliseconds()
		return out
	}
	acked, _, err := recorder.ReadFile(filepath.Join(home, "sessions", SessionID, recorder.LogFile))
	if err != nil {
		out.Outcome = "violation"
		bad("read the crashed log: %v", err)
		return out
	}
	// The workspace as the crash left it, before any resume: a state of
	// the uncrashed run's way there. A run that stops for a human may end
	// with the in-flight effect done once or not at all. (The later
	// crashes of --crash-resumes come after resumes, which may be the ones
	// that did an effect twice, so they are not used.)
	atCrash := crashLines(home)
	rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
	crashesLeft := o.CrashResumes
	for out.Resumes < maxResumes {
		out.Resumes++
		fp := ""
		if crashesLeft > 0 {
			crashesLeft--
			// somewhere in the next few events the resume will write
			last, _, _ := recorder.ReadFile(filepath.Join(home, "sessions", SessionID, recorder.LogFile))
			fp = fmt.Sprintf("after:%d", int64(len(last))+1+rng.Int64N(4))
		}
		res, crashed, err = o.exec(ctx, home, fp, "resume", SessionID)
		if err != nil {
			out.Outcome = "violation"
			bad("resume %d: %v", out.Resumes, err)
			return out
		}
		if !crashed && !resumable(res.Status) {
			break
		}
	}
	out.Status = res.Status
	final, ws, err := load(home)
	if err != nil {
		out.Outcome = "violation"
		bad("%v", err)
		return out
	}
	out.Lost = lostEvents(acked, final)
	if out.Lost > 0 {
		bad("%d acknowledged events changed or missing after resume", out.Lost)
	}
	dups, unresolved, needsHuman := intentOutcomes(final)
	out.Duplicates += dups
	for _, id := range unresolved {
		bad("intent %s has no result and no needs_human", id)
	}
	for _, sub := range subagents(home) {
		kid, _, err := recorder.ReadFile(filepath.Join(home, "sessions", sub, recorder.LogFile))
		if err != nil {
			bad("subagent %s: %v", sub, err)
			continue
		}
		d, un, nh := intentOutcomes(kid)
		out.Duplicates += d
		needsHuman = needsHuman || nh
		for _, id := range un {
			bad("subagent %s: intent %s has no result and no needs_human", sub, id)
		}
		if st := session.Fold(kid).Status(); out.Status == string(session.StatusDone) && st != session.StatusDone {
			bad("subagent %s ended %s under a parent that is done", sub, st)
		}
	}
	if base.children > 0 && len(subagents(home)) != base.children {
		bad("%d subagent sessions, the uncrashed run had %d (a child started twice, or never)", len(subagents(home)), base.children)
	}
	digest, lines, err := hashTree(ws)
	if err != nil {
		bad("%v", err)
	}
	stoppedForHuman := out.Status == string(session.StatusNeedsHuman) && needsHuman
	extra := duplicatedLines(lines, base.lines, atCrash, stoppedForHuman)
	out.Duplicates += extra
	switch {
	case out.Status == base.Status:
		if digest != base.Workspace {
			bad("the workspace differs from the uncrashed run's (%d lines more)", extra)
		}
	case stoppedForHuman:
		// A side effect that cannot be checked stops for a human: it must
		// not have happened twice, but it may not have happened at all.
		if extra > 0 {
			bad("needs_human, but %d effect lines are duplicated", extra)
		}
	default:
		bad("final status %s, the uncrashed run ended %s", out.Status, base.Status)
	}
	if out.Duplicates > 0 && len(out.Problems) == 0 {
		bad("%d duplicated side effects", out.Duplicates)
	}
	out.Outcome = "ok"
	if len(out.Problems) > 0 {
		out.Outcome = "violation"
	}
	out.Millis = time.Since(began).Milliseconds()
	return out
}

// resumable statuses mean the session is not at its end yet: a run killed
// before it could record anything, or still running.
func resumable(status string) bool {
	return status == "" || status == string(session.StatusRunning) || status == string(session.StatusCrashed)
}

// child runs agentctl with the failpoint and reports whether it was killed
// by it. A non-zero exit with a JSON result is a status, not an error.
func (o Options) child(ctx context.Context, home, failpoint string, args ...string) (result, bool, error) {
	full := append([]string{"--home", home}, args...)
	full = append(full, "--json", "-q")
	cmd := exec.CommandContext(ctx, o.Exe, full...)
	cmd.Env = o.childEnv(failpoint)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			if failpoint == "" {
				return result{}, true, fmt.Errorf("%s was killed with no failpoint set", strings.Join(args, " "))
			}
			return result{}, true, nil
		}
	} else if err != nil {
		return result{}, false, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	var r result
	if jerr := json.Unmarshal(lastLine(stdout.Bytes()), &r); jerr != nil || r.Status == "" {
		return r, false, fmt.Errorf("%s: exit %v, no result: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return r, false, nil
}

// childEnv is the environment of a run or resume: the failpoint, no
// history seal (the home is thrown away), and no fsync unless asked.
func (o Options) childEnv(failpoint string) []string {
	env := append(os.Environ(), runner.FailpointEnv+"="+failpoint, NoSealEnv+"=1")
	if !o.Fsync {
		env = append(env, NoSyncEnv+"=1")
	}
	return env
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// load reads the crash test session of a home and its workspace path.
func load(home string) ([]session.Event, string, error) {
	evs, _, err := recorder.ReadFile(filepath.Join(home, "sessions", SessionID, recorder.LogFile))
	if err != nil {
		return nil, "", err
	}
	if len(evs) == 0 {
		return nil, "", fmt.Errorf("the log in %s is empty", home)
	}
	return evs, evs[0].Workspace, nil
}

// lostEvents counts acknowledged events that are not byte-identical in the
// final log. Timestamps are part of the comparison: an event re-written by
// a resume would carry a new one.
func lostEvents(acked, final []session.Event) int {
	lost := 0
	for i, e := range acked {
		if i >= len(final) {
			lost++
			continue
		}
		a, _ := session.Encode(e)
		b, _ := session.Encode(final[i])
		if !bytes.Equal(a, b) {
			lost++
		}
	}
	return lost
}

// intentOutcomes counts the extra outcomes of dispatched calls (each
// should have one), lists the intents with none, and says whether a call
// stopped for a human (reconciled needs_human, not resolved), from the
// session's fold.
func intentOutcomes(evs []session.Event) (dups int, unresolved []string, needsHuman bool) {
	for _, c := range session.Fold(evs).Calls {
		if c.IntentSeq == 0 {
			continue
		}
		switch {
		case c.Outcomes == 0:
			unresolved = append(unresolved, c.ID)
		case c.Outcomes > 1:
			dups += c.Outcomes - 1
		}
		needsHuman = needsHuman || c.NeedsHuman
	}
	return dups, unresolved, needsHuman
}

// hashTree digests a folder (paths and contents, sorted) and counts its
// lines as a multiset, so a duplicated effect (one more ledger line) can be
// told from a missing one.
func hashTree(root string) (string, map[string]int, error) {
	h := sha256.New()
	lines := map[string]int{}
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("hash workspace: %w", err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", nil, err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" {
				lines[rel+"\x00"+l]++
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), lines, nil
}

// duplicatedLines counts the effect lines of a crashed run's final
// workspace (final) that are there more often than they should be. A run
// that reached the uncrashed run's end must have its lines (base). A run
// that stopped for a human may end with the call in flight at the crash
// done once or not at all: the lines that call would have changed are
// still as they were at the crash (atCrash, the workspace the first crash
// left, before any resume), which is no duplicate; a line is one when it
// is there more often than both at the uncrashed end and at the crash,
// i.e. a resume did it again.
func duplicatedLines(final, base, atCrash map[string]int, stoppedForHuman bool) int {
	if stoppedForHuman {
		return extraLines(final, maxCounts(base, atCrash))
	}
	return extraLines(final, base)
}

// crashLines is the line multiset (hashTree) of the workspace of the
// crash test session in home as it is now; nil when there is none yet (a
// crash before the header).
func crashLines(home string) map[string]int {
	_, ws, err := load(home)
	if err != nil || ws == "" {
		return nil
	}
	_, lines, err := hashTree(ws)
	if err != nil {
		return nil
	}
	return lines
}

// maxCounts is, for each line, the larger of its counts in a and b.
func maxCounts(a, b map[string]int) map[string]int {
	out := make(map[string]int, len(a)+len(b))
	for _, m := range []map[string]int{a, b} {
		for l, c := range m {
			out[l] = max(out[l], c)
		}
	}
	return out
}

// extraLines counts lines the crashed workspace has more often than the
// uncrashed one.
func extraLines(got, want map[string]int) int {
	n := 0
	for l, c := range got {
		if c > want[l] {
			n += c - want[l]
		}
	}
	return n
}

// subagents lists the sessions of a home other than the crash test's own:
// the subagents its run started (and theirs), sorted.
func subagents(home string) []string {
	ids, _ := recorder.Store{Root: home}.IDs()
	var out []string
	for _, id := range ids {
		if id != SessionID {
			out = append(out, id)
		}
	}
	return out
}
