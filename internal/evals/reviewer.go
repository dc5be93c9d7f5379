package evals

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/internal/agent"
	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// Reviewer verdicts.
const (
	VerdictPass       = "pass"
	VerdictFail       = "fail"
	VerdictNeedsHuman = "needs_human"
)

// The reviewer protocol. The reviewer is a session of its own, recorded in
// the same home as the scenario (name "<scenario>/reviewer"), in a fresh
// context: its system prompt is ReviewerSystem, its one user message says
// what the agent was asked, how its run ended and the criteria. It runs in
// read-only mode (the read-only registry: grep, list_files, read_file) with
// the scenario's final workspace as its workspace, used in place, so it
// can look but not touch. Its last assistant message must start with
// "PASS:", "FAIL:" or "NEEDS_HUMAN:" followed by the reason; anything else
// is reported as a failed check ("the reviewer broke the protocol").
const ReviewerSystem = `You are a strict code reviewer checking the work of another agent. You see the
workspace the agent left behind through read-only tools; you cannot change it.
Check the work against the criteria you are given, then answer with one final
message whose first line starts with exactly one of:
PASS: <reason>          the criteria are met
FAIL: <reason>          they are not
NEEDS_HUMAN: <reason>   you cannot tell without a person
The reason says what you checked and what you found.`

// DefaultReviewerTurns bounds a reviewer session.
const DefaultReviewerTurns = 20

func reviewerPrompt(task, status, criteria string) string {
	return fmt.Sprintf("The agent was asked:\n%s\n\nIts run ended with status %s.\n\nCriteria:\n%s\n\nInspect the workspace, then give your verdict.",
		strings.TrimSpace(task), status, strings.TrimSpace(criteria))
}

// ParseVerdict reads a reviewer's final message: the first non-empty line
// starts with PASS:, FAIL: or NEEDS_HUMAN: (case as written) and a reason
// follows, on that line or the next ones.
func ParseVerdict(text string) (verdict, reason string, err error) {
	t := strings.TrimSpace(text)
	for _, p := range []struct{ prefix, verdict string }{{"PASS:", VerdictPass}, {"FAIL:", VerdictFail}, {"NEEDS_HUMAN:", VerdictNeedsHuman}} {
		if rest, ok := strings.CutPrefix(t, p.prefix); ok {
			reason = strings.TrimSpace(rest)
			if reason == "" {
				return p.verdict, "", fmt.Errorf("the reviewer gave %s with no reason", p.prefix)
			}
			return p.verdict, reason, nil
		}
	}
	return "", "", fmt.Errorf("the reviewer's final message does not start with PASS:, FAIL: or NEEDS_HUMAN: (it starts %q)", clip.Bytes(firstLine(t), 80))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// review runs the reviewer session over the run's final workspace.
func (e *engine) review(ctx context.Context, sc *Scenario, a *Assertion, f *facts) Result {
	r := a.Reviewer
	task := ""
	for _, ev := range f.evs {
		if ev.Kind == session.KindUserMessage {
			task = ev.Text
			break
		}
	}
	turns := r.MaxTurns
	if turns == 0 {
		turns = DefaultReviewerTurns
	}
	sp := &spec.Spec{
		Name: sc.Name + "/reviewer", Model: r.Model, System: ReviewerSystem,
		Prompt:    reviewerPrompt(task, string(f.sum.Status), r.Criteria),
		Workspace: spec.Workspace{Path: f.ws}, Mode: tools.ModeReadOnly,
		Budget:     spec.Budget{MaxToolCalls: 50},
		Compaction: spec.Compaction{Window: spec.DefaultWindow, Threshold: spec.DefaultThreshold},
		MaxTurns:   turns, Path: e.suite.Path, Dir: e.suite.Dir,
	}
	prov, err := agent.Provider(sp)
	if err != nil {
		return fail(a, "build the reviewer's model: %v", err)
	}
	reg, err := tools.Builtins(tools.ModeReadOnly, nil)
	if err != nil {
		return fail(a, "reviewer tools: %v", err)
	}
	obs := e.observer()
	res, err := runner.Start(ctx, runner.Config{Spec: sp, Store: e.cfg.Store, Provider: prov, Tools: reg, Observer: obs})
	if res.SessionID != "" {
		e.afterRun(res.SessionID, obs)
	}
	out := fail(a, "")
	out.SessionID = res.SessionID
	if err == nil {
		err = res.Err
	}
	if err != nil {
		out.Message = fmt.Sprintf("the reviewer session failed: %v", err)
		return out
	}
	if res.Status != session.StatusDone {
		out.Message = fmt.Sprintf("the reviewer session ended %s (%s), without a verdict", res.Status, res.Reason)
		return out
	}
	evs, _, err := e.cfg.Store.Load(res.SessionID)
	if err != nil {
		out.Message = fmt.Sprintf("read the reviewer session: %v", err)
		return out
	}
	final := lastAssistantText(evs)
	verdict, reason, err := ParseVerdict(final)
	out.Verdict = verdict
	if err != nil {
		out.Message = err.Error()
		return out
	}
	out.OK = slices.Contains(r.Accept, verdict)
	out.Message = fmt.Sprintf("%s: %s", strings.ToUpper(verdict), reason)
	if !out.OK {
		out.Message += fmt.Sprintf(" (accepted: %s)", strings.Join(r.Accept, ", "))
	}
	return out
}

func lastAssistantText(evs []session.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == session.KindAssistantMessage && strings.TrimSpace(evs[i].Text) != "" {
			return evs[i].Text
		}
	}
	return ""
}
