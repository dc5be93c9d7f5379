package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// Assertion kinds: the key that names an assertion in the suite file, and
// the Kind of its result.
const (
	KindStatus             = "status"
	KindCalled             = "called"
	KindNotCalled          = "not_called"
	KindCalledAtMost       = "called_at_most"
	KindNoLoop             = "no_loop"
	KindNoDuplicateEffects = "no_duplicate_effects"
	KindBudget             = "budget"
	KindFile               = "file"
	KindCommand            = "command"
	KindSQL                = "sql"
	KindCrashSafe          = "crash_safe"
	KindAnchored           = "anchored"
	KindReviewer           = "reviewer"
	// KindReplayMatches is implicit in replay scenarios: the replay's
	// tool results and status equal the recording's.
	KindReplayMatches = "replay_matches"
	// KindRun is the result recorded when the run itself could not be
	// made (a provider or setup error): the JUnit <error>.
	KindRun = "run"
)

// Kinds lists the assertion kinds a suite may use, in documentation order.
var Kinds = []string{KindStatus, KindCalled, KindNotCalled, KindCalledAtMost, KindNoLoop, KindNoDuplicateEffects,
	KindBudget, KindFile, KindCommand, KindSQL, KindCrashSafe, KindAnchored, KindReviewer}

// Assertion is one item of a scenario's assert list: a mapping with
// exactly one key, the kind.
type Assertion struct {
	Status             *string        `yaml:"status"`
	Called             *string        `yaml:"called"`
	NotCalled          *string        `yaml:"not_called"`
	CalledAtMost       *CalledAtMost  `yaml:"called_at_most"`
	NoLoop             *int           `yaml:"no_loop"`
	NoDuplicateEffects *bool          `yaml:"no_duplicate_effects"`
	Budget             *BudgetBound   `yaml:"budget"`
	File               *FileCheck     `yaml:"file"`
	Command            *string        `yaml:"command"`
	SQL                *string        `yaml:"sql"`
	CrashSafe          *CrashSafe     `yaml:"crash_safe"`
	Anchored           *Anchored      `yaml:"anchored"`
	Reviewer           *ReviewerCheck `yaml:"reviewer"`

	// Kind is set by Load; Line is the item's line in the suite file.
	Kind string `yaml:"-"`
	Line int    `yaml:"-"`
}

// CalledAtMost bounds how often the model called a tool.
type CalledAtMost struct {
	Tool  string `yaml:"tool"`
	Times int    `yaml:"times"`
}

// BudgetBound bounds what the run spent; unset fields are not checked.
type BudgetBound struct {
	MaxTokens    *int64   `yaml:"max_tokens"`
	MaxToolCalls *int64   `yaml:"max_tool_calls"`
	MaxCostUSD   *float64 `yaml:"max_cost_usd"`
}

// FileCheck checks one file of the final workspace.
type FileCheck struct {
	Path    string `yaml:"path"`
	Matches string `yaml:"matches"`
	Equals  string `yaml:"equals"`
	Absent  bool   `yaml:"absent"`
	re      *regexp.Regexp
}

// CrashSafe runs the scenario's crash matrix (package crashtest).
type CrashSafe struct {
	Parallel int `yaml:"parallel"`
	// Points limits the matrix ("after:5,in-tool:7"); empty is all.
	Points string `yaml:"points"`
}

// Anchored checks that every compaction kept the needles.
type Anchored struct {
	Needles []string `yaml:"needles"`
	// MinCompactions fails the check when the run compacted fewer times
	// (default 1: an anchoring check of a run that never compacted proves
	// nothing).
	MinCompactions *int `yaml:"min_compactions"`
}

// ReviewerCheck asks a reviewer model, in a fresh session with read-only
// tools over the final workspace, for a verdict (see reviewer.go).
type ReviewerCheck struct {
	Model    spec.Model `yaml:"model"`
	Criteria string     `yaml:"criteria"`
	// Accept lists the verdicts that pass (default: pass).
	Accept   []string `yaml:"accept"`
	MaxTurns int      `yaml:"max_turns"`
}

func (a *Assertion) kinds() []string {
	var k []string
	add := func(set bool, name string) {
		if set {
			k = append(k, name)
		}
	}
	add(a.Status != nil, KindStatus)
	add(a.Called != nil, KindCalled)
	add(a.NotCalled != nil, KindNotCalled)
	add(a.CalledAtMost != nil, KindCalledAtMost)
	add(a.NoLoop != nil, KindNoLoop)
	add(a.NoDuplicateEffects != nil, KindNoDuplicateEffects)
	add(a.Budget != nil, KindBudget)
	add(a.File != nil, KindFile)
	add(a.Command != nil, KindCommand)
	add(a.SQL != nil, KindSQL)
	add(a.CrashSafe != nil, KindCrashSafe)
	add(a.Anchored != nil, KindAnchored)
	add(a.Reviewer != nil, KindReviewer)
	return k
}

func (a *Assertion) tool() string {
	switch {
	case a.Called != nil:
		return *a.Called
	case a.NotCalled != nil:
		return *a.NotCalled
	}
	return ""
}

// String is the assertion as a short line for reports ("called_at_most:
// read_file 2").
func (a *Assertion) String() string {
	switch a.Kind {
	case KindStatus:
		return "status: " + *a.Status
	case KindCalled, KindNotCalled:
		return a.Kind + ": " + a.tool()
	case KindCalledAtMost:
		return fmt.Sprintf("called_at_most: %s %d", a.CalledAtMost.Tool, a.CalledAtMost.Times)
	case KindNoLoop:
		return fmt.Sprintf("no_loop: %d", *a.NoLoop)
	case KindNoDuplicateEffects:
		return fmt.Sprintf("no_duplicate_effects: %v", *a.NoDuplicateEffects)
	case KindBudget:
		var p []string
		if b := a.Budget; b.MaxTokens != nil {
			p = append(p, fmt.Sprintf("max_tokens %d", *b.MaxTokens))
		}
		if b := a.Budget; b.MaxToolCalls != nil {
			p = append(p, fmt.Sprintf("max_tool_calls %d", *b.MaxToolCalls))
		}
		if b := a.Budget; b.MaxCostUSD != nil {
			p = append(p, fmt.Sprintf("max_cost_usd %g", *b.MaxCostUSD))
		}
		return "budget: " + strings.Join(p, ", ")
	case KindFile:
		switch f := a.File; {
		case f.Matches != "":
			return fmt.Sprintf("file: %s matches %q", f.Path, f.Matches)
		case f.Equals != "":
			return fmt.Sprintf("file: %s equals %s", f.Path, filepath.Base(f.Equals))
		default:
			return fmt.Sprintf("file: %s absent", f.Path)
		}
	case KindCommand:
		return "command: " + *a.Command
	case KindSQL:
		return "sql: " + oneLine(*a.SQL)
	case KindCrashSafe:
		return "crash_safe"
	case KindAnchored:
		return fmt.Sprintf("anchored: %q", a.Anchored.Needles)
	case KindReviewer:
		return fmt.Sprintf("reviewer: %s/%s", a.Reviewer.Model.Provider, a.Reviewer.Model.ID)
	}
	return a.Kind
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Result is the outcome of one assertion on one run.
type Result struct {
	Kind      string `json:"kind"`
	Assertion string `json:"assertion"`
	// Line of the assertion in the suite file (0 for implicit checks).
	Line int  `json:"line,omitempty"`
	OK   bool `json:"ok"`
	// Message says what was found: the evidence on failure.
	Message string `json:"message,omitempty"`
	// SessionID of a session the check itself recorded (the reviewer's).
	SessionID string `json:"session_id,omitempty"`
	// Verdict is the reviewer's: pass, fail or needs_human.
	Verdict string `json:"verdict,omitempty"`
	// Divergence, on a failed replay_matches, is where the replay first
	// departed from the recording.
	Divergence *Divergence `json:"divergence,omitempty"`
}

// facts is what the per-run checks read: the session's events and its
// final workspace.
type facts struct {
	id  string
	evs []session.Event
	ws  string
	sum recorder.Summary
}

// calls lists the tool calls the model requested, in order.
func (f *facts) calls() []session.ToolCall {
	var out []session.ToolCall
	for _, e := range f.evs {
		if e.Kind == session.KindAssistantMessage {
			out = append(out, e.ToolCalls...)
		}
	}
	return out
}

func (f *facts) count(tool string) int {
	n := 0
	for _, c := range f.calls() {
		if c.Name == tool {
			n++
		}
	}
	return n
}

func pass(a *Assertion, format string, args ...any) Result {
	return Result{Kind: a.Kind, Assertion: a.String(), Line: a.Line, OK: true, Message: fmt.Sprintf(format, args...)}
}

func fail(a *Assertion, format string, args ...any) Result {
	return Result{Kind: a.Kind, Assertion: a.String(), Line: a.Line, Message: fmt.Sprintf(format, args...)}
}

// check evaluates the assertions that need only the run's facts. The
// others (sql, crash_safe, reviewer) are evaluated by the engine.
func check(ctx context.Context, a *Assertion, f *facts) Result {
	switch a.Kind {
	case KindStatus:
		got := string(f.sum.Status)
		if got == *a.Status {
			return pass(a, "status %s", got)
		}
		msg := fmt.Sprintf("status is %s, want %s", got, *a.Status)
		if r := finishReason(f.evs); r != "" {
			msg += " (" + r + ")"
		}
		return fail(a, "%s", msg)
	case KindCalled:
		if n := f.count(*a.Called); n > 0 {
			return pass(a, "%s called %d times", *a.Called, n)
		}
		return fail(a, "%s was never called (calls: %s)", *a.Called, callNames(f.calls()))
	case KindNotCalled:
		if n := f.count(*a.NotCalled); n > 0 {
			return fail(a, "%s was called %d times", *a.NotCalled, n)
		}
		return pass(a, "%s not called", *a.NotCalled)
	case KindCalledAtMost:
		c := a.CalledAtMost
		if n := f.count(c.Tool); n > c.Times {
			return fail(a, "%s was called %d times, more than %d", c.Tool, n, c.Times)
		} else {
			return pass(a, "%s called %d times", c.Tool, n)
		}
	case KindNoLoop:
		tool, args, n := longestRepeat(f.calls())
		if n >= *a.NoLoop {
			return fail(a, "%s was called %d times in a row with the same arguments %s", tool, n, clip.Bytes(args, 120))
		}
		return pass(a, "at most %d identical calls in a row", n)
	case KindNoDuplicateEffects:
		dups := duplicateEffects(f.evs)
		if *a.NoDuplicateEffects && len(dups) > 0 {
			return fail(a, "side effects repeated: %s", strings.Join(dups, "; "))
		}
		return pass(a, "no side effect happened twice")
	case KindBudget:
		return checkBudget(a, f.sum)
	case KindFile:
		return checkFile(a, f.ws)
	case KindCommand:
		return checkCommand(ctx, a, f.ws)
	case KindAnchored:
		rep := replaycheck.Anchors(f.id, f.evs, a.Anchored.Needles)
		if len(rep.Compactions) < *a.Anchored.MinCompactions {
			return fail(a, "the run compacted %d times, fewer than min_compactions %d: nothing shows the needles survive", len(rep.Compactions), *a.Anchored.MinCompactions)
		}
		if !rep.OK {
			var why []string
			for _, c := range rep.Compactions {
				for _, fd := range c.Findings {
					why = append(why, fmt.Sprintf("compaction seq %d: %s: %s", c.Seq, fd.Code, fd.Detail))
				}
			}
			return fail(a, "%s", strings.Join(why, "; "))
		}
		return pass(a, "%d compactions kept the first user message and every needle", len(rep.Compactions))
	}
	return fail(a, "assertion kind %q is not evaluated here", a.Kind)
}

func finishReason(evs []session.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == session.KindSessionFinished {
			return evs[i].Reason
		}
	}
	return ""
}

func callNames(calls []session.ToolCall) string {
	if len(calls) == 0 {
		return "none"
	}
	seen := map[string]int{}
	var order []string
	for _, c := range calls {
		if seen[c.Name] == 0 {
			order = append(order, c.Name)
		}
		seen[c.Name]++
	}
	var p []string
	for _, n := range order {
		p = append(p, fmt.Sprintf("%s×%d", n, seen[n]))
	}
	return strings.Join(p, ", ")
}

// longestRepeat finds the longest run of consecutive calls with the same
// tool and the same arguments (compared as compact JSON).
func longestRepeat(calls []session.ToolCall) (tool, args string, n int) {
	key := func(c session.ToolCall) string {
		var b bytes.Buffer
		if err := json.Compact(&b, c.Args); err != nil {
			return c.Name + "\x00" + string(c.Args)
		}
		return c.Name + "\x00" + b.String()
	}
	run, prev := 0, ""
	for _, c := range calls {
		k := key(c)
		if k == prev {
			run++
		} else {
			run, prev = 1, k
		}
		if run > n {
			n = run
			tool, args = c.Name, k[len(c.Name)+1:]
		}
	}
	return tool, args, n
}

// duplicateEffects lists side effects that happened twice: an
// idempotency key with more than one ok result (the harness repeated a
// call), or a side-effecting call (one with a key) whose tool and
// arguments equal an earlier call's that succeeded (the model repeated
// the effect under a new key).
func duplicateEffects(evs []session.Event) []string {
	type intent struct{ key, tool, args string }
	intents := map[string]intent{}
	okByKey := map[string]int{}
	okByCall := map[string][]string{} // tool+args -> keys that took effect
	var out []string
	for _, e := range evs {
		switch e.Kind {
		case session.KindToolIntent:
			if e.IdempotencyKey != "" {
				var b bytes.Buffer
				if json.Compact(&b, e.Args) != nil {
					b.Reset()
					b.Write(e.Args)
				}
				intents[e.CallID] = intent{e.IdempotencyKey, e.Tool, b.String()}
			}
		case session.KindToolResult:
			in, ok := intents[e.CallID]
			if !ok || e.Status != session.ResultOK {
				continue
			}
			okByKey[in.key]++
			if okByKey[in.key] == 2 {
				out = append(out, fmt.Sprintf("key %s took effect twice", in.key))
			}
			sig := in.tool + " " + in.args
			prev := okByCall[sig]
			if len(prev) > 0 && !slices.Contains(prev, in.key) {
				out = append(out, fmt.Sprintf("%s %s succeeded again (call %s, seq %d)", in.tool, clip.Bytes(in.args, 80), e.CallID, e.Seq))
			}
			okByCall[sig] = append(prev, in.key)
		}
	}
	return out
}

func checkBudget(a *Assertion, s recorder.Summary) Result {
	b := a.Budget
	var over []string
	tokens := s.InputTokens + s.OutputTokens
	if b.MaxTokens != nil && tokens > *b.MaxTokens {
		over = append(over, fmt.Sprintf("%d tokens > %d", tokens, *b.MaxTokens))
	}
	if b.MaxToolCalls != nil && s.ToolCalls > *b.MaxToolCalls {
		over = append(over, fmt.Sprintf("%d tool calls > %d", s.ToolCalls, *b.MaxToolCalls))
	}
	if b.MaxCostUSD != nil && s.CostUSD > *b.MaxCostUSD {
		over = append(over, fmt.Sprintf("$%.4f > $%g", s.CostUSD, *b.MaxCostUSD))
	}
	if len(over) > 0 {
		return fail(a, "over budget: %s", strings.Join(over, ", "))
	}
	return pass(a, "%d tokens, %d tool calls, $%.4f", tokens, s.ToolCalls, s.CostUSD)
}

func checkFile(a *Assertion, ws string) Result {
	fc := a.File
	p := filepath.Join(ws, filepath.Clean(fc.Path))
	data, err := os.ReadFile(p)
	if fc.Absent {
		if errors.Is(err, os.ErrNotExist) {
			return pass(a, "%s is absent", fc.Path)
		}
		return fail(a, "%s exists", fc.Path)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fail(a, "%s does not exist in the workspace", fc.Path)
		}
		return fail(a, "read %s: %v", fc.Path, err)
	}
	if fc.re != nil {
		if fc.re.Match(data) {
			return pass(a, "%s matches", fc.Path)
		}
		return fail(a, "%s does not match %q; it starts %q", fc.Path, fc.Matches, clip.Bytes(string(data), 160))
	}
	want, err := os.ReadFile(fc.Equals)
	if err != nil {
		return fail(a, "read the expected file: %v", err)
	}
	if bytes.Equal(data, want) {
		return pass(a, "%s equals %s", fc.Path, filepath.Base(fc.Equals))
	}
	return fail(a, "%s differs from %s at byte %d: %s", fc.Path, filepath.Base(fc.Equals), firstDiff(data, want), lineDiff(data, want))
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// lineDiff names the first line that differs, both sides.
func lineDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d is %q, want %q", i+1, clip.Bytes(gl, 80), clip.Bytes(wl, 80))
		}
	}
	return "sizes differ"
}

// CommandTimeout bounds a command assertion.
const CommandTimeout = 5 * time.Minute

// checkCommand runs the suite author's command with sh -c in the final
// workspace. Like any CI step it is not sandboxed: it is the suite's code,
// not the model's. It runs in its own process group, killed whole on
// timeout or cancel.
func checkCommand(ctx context.Context, a *Assertion, ws string) Result {
	ctx, cancel := context.WithTimeout(ctx, CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", *a.Command)
	cmd.Dir = ws
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err == nil {
		return pass(a, "exit 0")
	}
	why := err.Error()
	if ctx.Err() == context.DeadlineExceeded {
		why = "timed out after " + CommandTimeout.String()
	}
	msg := why
	if o := strings.TrimSpace(string(out)); o != "" {
		msg += ": " + clip.Tail(o, 400)
	}
	return fail(a, "%s", msg)
}
