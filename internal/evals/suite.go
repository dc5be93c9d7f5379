package evals

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// Suite is one eval suite file. Paths in it are relative to the file;
// Load resolves them.
type Suite struct {
	Name      string     `yaml:"name"`
	Scenarios []Scenario `yaml:"scenarios"`

	// Path is the suite file's absolute path, Dir its folder, SHA256 the
	// digest of its bytes (merge checks that shards ran the same suite).
	Path   string `yaml:"-"`
	Dir    string `yaml:"-"`
	SHA256 string `yaml:"-"`
}

// Scenario is one thing the suite runs, Repeat times: an agent spec (with
// an optional model or prompt override), or a recorded session replayed
// offline.
type Scenario struct {
	Name   string      `yaml:"name"`
	Agent  string      `yaml:"agent"`
	Model  *spec.Model `yaml:"model"`
	Prompt string      `yaml:"prompt"`
	Replay *Replay     `yaml:"replay"`
	// Repeat runs the scenario this many times (default 1); Threshold is
	// the share of repeats that must pass (default 1: all of them).
	Repeat    int         `yaml:"repeat"`
	Threshold *float64    `yaml:"threshold"`
	Assert    []Assertion `yaml:"assert"`
	// Requires names what the scenario needs of the machine beyond the
	// API keys of its models, which are checked anyway (see NotRun).
	Requires *Requires `yaml:"requires"`

	// Line is where the scenario starts in the suite file.
	Line int `yaml:"-"`
	// Spec is the loaded agent spec with the overrides applied (agent
	// scenarios only). Runs copy it; it is never changed after Load.
	Spec *spec.Spec `yaml:"-"`
}

// Requires is what a scenario needs that agentctl cannot see in its specs:
// environment variables (a secret the program reads) and commands (the
// program a replayed external agent runs, a tool it calls). A scenario
// whose needs are missing is not run (NotRun), never failed.
type Requires struct {
	Env []string `yaml:"env"`
	// Commands are looked up on PATH; one with a slash is a file relative
	// to the suite.
	Commands []string `yaml:"commands"`
}

// Replay names a recorded session to re-run offline: the recorded
// assistant turns stand in for the model, the tools run for real.
type Replay struct {
	// Home holds the session (default: the eval's own home).
	Home    string `yaml:"home"`
	Session string `yaml:"session"`
	// WorkspaceFrom replaces the recorded spec's workspace.from (recorded
	// headers hold the recording machine's absolute paths).
	WorkspaceFrom string `yaml:"workspace_from"`
	// AllowDifferences: by default a tool result that differs from the
	// recording fails the run (assertion "replay_matches").
	AllowDifferences bool `yaml:"allow_differences"`
	// ForkFrom, if above 0, forks the session after that seq instead of
	// replaying it whole: the events up to it are kept, the workspace is
	// rebuilt as replay fork does, and the run goes on with the
	// scenario's model (default: the session's pinned one), live. There
	// is no replay_matches check; the assertions judge the new ending.
	ForkFrom int64 `yaml:"fork_from"`

	// Command, if set, is the program the case runs (sh -c, in a fresh
	// copy of WorkspaceFrom) behind a proxy that answers its model calls
	// from the recording, offline: a production session (collected,
	// proxied, imported) made a test the program must pass. replay_matches
	// fails when a request differs from the recorded one at its turn, or
	// the outcome does (status, final answer, turns). ReadOnly are host
	// folders the program may read (absolute, or relative to the suite),
	// Env the variables passed through to it.
	Command  string   `yaml:"command"`
	ReadOnly []string `yaml:"read_only"`
	Env      []string `yaml:"env"`
	// LiveFromTurn, with Command, drives the program onto the scenario's
	// model (default: the recorded one, live) from this model turn on:
	// turns 1..LiveFromTurn-1 are replayed and must match, the rest are
	// live, and the assertions judge the new ending.
	LiveFromTurn int `yaml:"live_from_turn"`
	// Ignore are regular expressions of text an external agent's replay
	// treats as volatile besides replaymatch's table (as replay run
	// --ignore): what the program's requests carry that differs run to
	// run and no normaliser knows.
	Ignore []string `yaml:"ignore"`
}

// Program is the program a replay runs (replay.Program), nil for a replay
// that answers from the recording alone.
func (r *Replay) Program() *replay.Program {
	if r.Command == "" {
		return nil
	}
	return &replay.Program{Command: r.Command, WorkspaceFrom: r.WorkspaceFrom, ReadOnly: r.ReadOnly, Env: r.Env}
}

// Need is the number of passing repeats the scenario needs.
func (s *Scenario) Need() int { return need(s.ThresholdValue(), s.Repeat) }

// need is the passing runs a threshold asks of n runs: ceil(t x n).
func need(t float64, n int) int { return int(math.Ceil(t*float64(n) - 1e-9)) }

// ThresholdValue is the threshold with its default applied.
func (s *Scenario) ThresholdValue() float64 {
	if s.Threshold == nil {
		return 1
	}
	return *s.Threshold
}

// Load reads a suite strictly (an unknown key is an error with file:line),
// validates it, resolves its paths and loads every agent spec and scripted
// model it names, so that a suite that loads is one that can run. All
// problems are reported together (errors.Join of *spec.Error).
func Load(path string) (*Suite, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("read suite: %w", err)
	}
	var s Suite
	sum := sha256.Sum256(data)
	root, err := spec.DecodeStrict(path, data, &s)
	if err != nil {
		// Report the rest too: decode leniently (unknown keys dropped)
		// and validate what is there, so one pass shows every problem.
		var lenient Suite
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Decode(&lenient) != nil {
			return nil, err
		}
		lenient.Path, lenient.Dir = abs, filepath.Dir(abs)
		return nil, errors.Join(err, lenient.validate(path, doc.Content[0]))
	}
	s.Path, s.Dir, s.SHA256 = abs, filepath.Dir(abs), hex.EncodeToString(sum[:])
	if err := s.validate(path, root); err != nil {
		return nil, err
	}
	return &s, nil
}

var statuses = []string{
	string(session.StatusDone), string(session.StatusFailed), string(session.StatusAwaitingApproval),
	string(session.StatusBudgetExceeded), string(session.StatusNeedsHuman), string(session.StatusInterrupted),
	string(session.StatusCrashed), string(session.StatusRunning),
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var verdicts = []string{VerdictPass, VerdictFail, VerdictNeedsHuman}

func (s *Suite) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.Dir, p)
}

func (s *Suite) validate(file string, root *yaml.Node) error {
	var errs []error
	bad := func(msg string, path ...any) {
		errs = append(errs, &spec.Error{File: file, Line: spec.LineOf(root, path...), Msg: msg})
	}
	if s.Name == "" {
		bad("name is required (it names the JUnit test suite)")
	}
	if len(s.Scenarios) == 0 {
		bad("scenarios is empty: add at least one scenario")
	}
	names := map[string]int{}
	for i := range s.Scenarios {
		sc := &s.Scenarios[i]
		sc.Line = spec.LineOf(root, "scenarios", i)
		at := func(p ...any) []any { return append([]any{"scenarios", i}, p...) }
		switch {
		case sc.Name == "":
			bad("scenario needs a name", at()...)
		case strings.TrimSpace(sc.Name) != sc.Name || strings.Contains(sc.Name, "  "):
			bad(fmt.Sprintf("scenario name %q has leading, trailing or doubled spaces", sc.Name), at("name")...)
		default:
			if prev, dup := names[sc.Name]; dup {
				bad(fmt.Sprintf("scenario name %q is already used at line %d", sc.Name, prev), at("name")...)
			}
			names[sc.Name] = spec.LineOf(root, at("name")...)
		}
		if sc.Repeat < 0 {
			bad("repeat must not be negative", at("repeat")...)
		}
		if sc.Repeat == 0 {
			sc.Repeat = 1
		}
		if sc.Threshold != nil && (*sc.Threshold <= 0 || *sc.Threshold > 1) {
			bad(fmt.Sprintf("threshold %v must be above 0 and at most 1 (the share of repeats that must pass)", *sc.Threshold), at("threshold")...)
		}
		switch {
		case (sc.Agent == "") == (sc.Replay == nil):
			bad("scenario takes agent (a spec to run) or replay (a recorded session), exactly one", at()...)
		case sc.Replay != nil:
			switch {
			case sc.Replay.ForkFrom < 0:
				bad("replay.fork_from must be a seq of the session (1 or more)", at("replay", "fork_from")...)
			case (sc.Replay.ForkFrom > 0 || sc.Replay.LiveFromTurn > 0) && sc.Model != nil:
				m := *sc.Model
				m.Script = s.abs(m.Script)
				if msg := checkModel(&m); msg != "" {
					bad("model: "+msg, at("model")...)
				}
				sc.Model = &m
			case sc.Replay.ForkFrom == 0 && sc.Replay.LiveFromTurn == 0 && (sc.Model != nil || sc.Prompt != ""):
				bad("model and prompt overrides apply to agent scenarios and forks (replay.fork_from, replay.live_from_turn); a replay's model is the recording", at("replay")...)
			case sc.Replay.Command != "" && sc.Prompt != "":
				bad("prompt: the program sends its own requests; change the program instead", at("prompt")...)
			}
			s.validateReplay(sc.Replay, func(msg string, p ...any) { bad(msg, at(append([]any{"replay"}, p...)...)...) })
		default:
			sc.Agent = s.abs(sc.Agent)
			sp, err := spec.Load(sc.Agent)
			if err != nil {
				bad(fmt.Sprintf("agent %s: %v", sc.Agent, err), at("agent")...)
				break
			}
			if sc.Model != nil {
				m := *sc.Model
				m.Script = s.abs(m.Script)
				if msg := checkModel(&m); msg != "" {
					bad("model: "+msg, at("model")...)
				}
				sp.Model = m
			}
			if sc.Prompt != "" {
				sp.Prompt = sc.Prompt
			}
			if sp.Model.Scripted() {
				if _, err := provider.LoadScript(sp.Model.Script); err != nil {
					bad(fmt.Sprintf("model script: %v", err), at("model")...)
				}
			}
			sc.Spec = sp
		}
		if r := sc.Requires; r != nil {
			for k, v := range r.Env {
				if !envName.MatchString(v) {
					bad(fmt.Sprintf("requires.env %q is not a variable name", v), at("requires", "env", k)...)
				}
			}
			for k, v := range r.Commands {
				if strings.TrimSpace(v) == "" {
					bad("requires.commands has an empty command", at("requires", "commands", k)...)
				} else if strings.Contains(v, "/") {
					r.Commands[k] = s.abs(v)
				}
			}
		}
		if len(sc.Assert) == 0 {
			bad("scenario has no assert list; a scenario that checks nothing always passes", at()...)
		}
		for j := range sc.Assert {
			a := &sc.Assert[j]
			a.Line = spec.LineOf(root, at("assert", j)...)
			s.validateAssertion(sc, a, func(msg string, p ...any) { bad(msg, at(append([]any{"assert", j}, p...)...)...) })
		}
	}
	return errors.Join(errs...)
}

// checkModel validates a model section the way spec.Load does, and applies
// its default max_tokens. It returns "" when the model is usable.
func checkModel(m *spec.Model) string {
	if m.MaxTokens == 0 {
		m.MaxTokens = spec.DefaultMaxTokens
	}
	if ps := m.Check(); len(ps) > 0 {
		return ps[0].Msg
	}
	return ""
}

func (s *Suite) validateReplay(r *Replay, bad func(string, ...any)) {
	if r.Session == "" {
		bad("replay.session is required (a session id or unique prefix)")
		return
	}
	if r.Home != "" {
		r.Home = s.abs(r.Home)
		st := recorder.Store{Root: r.Home}
		if _, err := st.Resolve(r.Session); err != nil {
			bad(fmt.Sprintf("replay.session %q in %s: %v", r.Session, r.Home, err), "session")
		}
	}
	switch {
	case r.Command == "" && (len(r.ReadOnly) > 0 || len(r.Env) > 0 || r.LiveFromTurn != 0):
		bad("replay.read_only, env and live_from_turn go with replay.command (the program the case runs)")
	case r.LiveFromTurn < 0:
		bad("replay.live_from_turn must be a model turn of the session (1 or more)", "live_from_turn")
	case r.LiveFromTurn > 0 && r.ForkFrom > 0:
		bad("replay takes fork_from (a seq: agentctl's own loop goes on) or live_from_turn (the program goes live), not both", "live_from_turn")
	case r.Command != "" && strings.TrimSpace(r.Command) == "":
		bad("replay.command is blank", "command")
	}
	for i, v := range r.Env {
		if !envName.MatchString(v) {
			bad(fmt.Sprintf("replay.env %q is not a variable name (letters, digits and _, not starting with a digit)", v), "env", i)
		}
	}
	for i, p := range r.ReadOnly {
		if p == "" {
			bad("replay.read_only: an empty folder name", "read_only", i)
			continue
		}
		r.ReadOnly[i] = s.abs(p)
	}
	for i, e := range r.Ignore {
		if _, err := replaymatch.Ignore(e); err != nil {
			bad(fmt.Sprintf("replay.ignore %q: %v", e, err), "ignore", i)
		}
	}
	if r.WorkspaceFrom != "" {
		r.WorkspaceFrom = s.abs(r.WorkspaceFrom)
		if fi, err := os.Stat(r.WorkspaceFrom); err != nil || !fi.IsDir() {
			bad(fmt.Sprintf("replay.workspace_from %s is not a folder", r.WorkspaceFrom), "workspace_from")
		}
	}
}

func (s *Suite) validateAssertion(sc *Scenario, a *Assertion, bad func(string, ...any)) {
	kinds := a.kinds()
	if len(kinds) != 1 {
		if len(kinds) == 0 {
			bad("assertion names no kind; use one of " + strings.Join(Kinds, ", "))
		} else {
			bad(fmt.Sprintf("assertion names %d kinds (%s); write one per list item", len(kinds), strings.Join(kinds, ", ")))
		}
		return
	}
	a.Kind = kinds[0]
	switch a.Kind {
	case KindStatus:
		if !slices.Contains(statuses, *a.Status) {
			bad(fmt.Sprintf("status %q is not one of %s", *a.Status, strings.Join(statuses, ", ")), "status")
		}
	case KindCalled, KindNotCalled:
		if a.tool() == "" {
			bad(a.Kind+" needs a tool name", a.Kind)
		}
	case KindCalledAtMost:
		if a.CalledAtMost.Tool == "" {
			bad("called_at_most needs a tool", KindCalledAtMost)
		}
		if a.CalledAtMost.Times < 0 {
			bad("called_at_most.times must not be negative", KindCalledAtMost, "times")
		}
	case KindNoLoop:
		if *a.NoLoop < 2 {
			bad(fmt.Sprintf("no_loop %d: the count of identical calls in a row that fails must be at least 2", *a.NoLoop), KindNoLoop)
		}
	case KindBudget:
		b := a.Budget
		if b.MaxTokens == nil && b.MaxToolCalls == nil && b.MaxCostUSD == nil {
			bad("budget needs at least one of max_tokens, max_tool_calls, max_cost_usd", KindBudget)
		}
	case KindFile:
		f := a.File
		if f.Path == "" {
			bad("file needs a path (relative to the workspace)", KindFile)
		} else if filepath.IsAbs(f.Path) || strings.HasPrefix(filepath.Clean(f.Path), "..") {
			bad(fmt.Sprintf("file.path %q must stay inside the workspace", f.Path), KindFile, "path")
		}
		n := 0
		for _, set := range []bool{f.Matches != "", f.Equals != "", f.Absent} {
			if set {
				n++
			}
		}
		if n != 1 {
			bad("file takes exactly one of matches (a regex), equals (a fixture file) or absent: true", KindFile)
		}
		if f.Matches != "" {
			re, err := regexp.Compile(f.Matches)
			if err != nil {
				bad(fmt.Sprintf("file.matches %q: %v", f.Matches, err), KindFile, "matches")
			}
			f.re = re
		}
		if f.Equals != "" {
			f.Equals = s.abs(f.Equals)
			if _, err := os.Stat(f.Equals); err != nil {
				bad(fmt.Sprintf("file.equals: %v", err), KindFile, "equals")
			}
		}
	case KindCommand:
		if strings.TrimSpace(*a.Command) == "" {
			bad("command is empty", KindCommand)
		}
	case KindSQL:
		if strings.TrimSpace(*a.SQL) == "" {
			bad("sql is empty", KindSQL)
		}
	case KindCrashSafe:
		if sc.Agent == "" {
			bad("crash_safe needs an agent scenario (it runs the spec's crash matrix)", KindCrashSafe)
		} else if sc.Model != nil || sc.Prompt != "" {
			bad("crash_safe runs the agent spec as written; drop the scenario's model or prompt override, or give the variant a spec file of its own", KindCrashSafe)
		}
		if a.CrashSafe.Parallel < 0 {
			bad("crash_safe.parallel must not be negative", KindCrashSafe, "parallel")
		}
	case KindAnchored:
		if len(a.Anchored.Needles) == 0 {
			bad("anchored needs needles: the strings every compaction must keep", KindAnchored)
		}
		if a.Anchored.MinCompactions == nil {
			one := 1
			a.Anchored.MinCompactions = &one
		}
	case KindReviewer:
		r := a.Reviewer
		r.Model.Script = s.abs(r.Model.Script)
		if msg := checkModel(&r.Model); msg != "" {
			bad("reviewer.model: "+msg, KindReviewer, "model")
		} else if r.Model.Scripted() {
			if _, err := provider.LoadScript(r.Model.Script); err != nil {
				bad(fmt.Sprintf("reviewer.model script: %v", err), KindReviewer, "model")
			}
		}
		if strings.TrimSpace(r.Criteria) == "" {
			bad("reviewer.criteria is required: what the reviewer checks", KindReviewer)
		}
		if len(r.Accept) == 0 {
			r.Accept = []string{VerdictPass}
		}
		for k, v := range r.Accept {
			if !slices.Contains(verdicts, v) {
				bad(fmt.Sprintf("reviewer.accept %q is not one of pass, fail, needs_human", v), KindReviewer, "accept", k)
			}
		}
		if r.MaxTurns < 0 {
			bad("reviewer.max_turns must not be negative", KindReviewer, "max_turns")
		}
	}
}
