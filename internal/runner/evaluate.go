package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// evaluate runs the spec's done checks after the model says it is done. A
// failure goes back to the model as a user message while retries remain;
// otherwise the run ends failed. stopped is false when the loop goes on.
func (r *run) evaluate(ctx context.Context) (Result, bool, error) {
	checks := r.cfg.Spec.Done
	if len(checks) == 0 {
		res, err := r.finishDone(context.Background())
		return res, true, err
	}
	reg, err := tools.Builtins("write", []string{"bash"})
	if err != nil {
		return r.result(), true, fmt.Errorf("evaluate: %w", err)
	}
	bash, _ := reg.Get("bash")
	if err := r.sandboxReady(bash); err != nil {
		res, ferr := r.fail(ReasonSetupError, err)
		return res, true, ferr
	}
	var failed []string
	var evidence []string
	for _, c := range checks {
		args, _ := json.Marshal(map[string]string{"command": c.Command})
		// The evidence is redacted when it is recorded, and the model is
		// sent the recorded one.
		res := bash.Run(ctx, tools.Call{Args: args, Workspace: r.ws, Timeout: 5 * time.Minute, Sandbox: r.sandbox, Redactor: r.redactor()})
		if ctx.Err() != nil {
			out, err := r.interrupt(ctx, "", nil)
			return out, true, err
		}
		line := fmt.Sprintf("$ %s → %s", c.Command, res.Status)
		if res.Status != session.ResultOK {
			failed = append(failed, c.Command)
			line += " (" + res.Error + ")"
			if o := strings.TrimSpace(res.Output); o != "" {
				line += "\n" + ClipTail(o, 2000)
			}
		}
		evidence = append(evidence, line)
	}
	outcome := "pass"
	if len(failed) > 0 {
		outcome = "fail"
	}
	if err := r.append(session.Event{Kind: session.KindEvaluation, Outcome: outcome, Evidence: strings.Join(evidence, "\n")}); err != nil {
		return r.result(), true, err
	}
	return r.decide(outcome, strings.Join(evidence, "\n"), failed)
}

// decide acts on a recorded evaluation: done, failed, or the failure fed
// back to the model while retries remain.
func (r *run) decide(outcome, evidence string, failed []string) (Result, bool, error) {
	if outcome == "pass" {
		res, err := r.finishDone(context.Background())
		return res, true, err
	}
	if r.st.EvalFailures > r.cfg.Spec.Retries {
		what := strings.Join(failed, "; ")
		if what == "" {
			what = "see the evaluation event"
		}
		res, err := r.finish(session.StatusFailed, fmt.Sprintf("%s: %s", ReasonEvaluationFailed, what))
		return res, true, err
	}
	msg := fmt.Sprintf("The done checks failed (attempt %d of %d):\n%s\nFix the problem, then say when you are done.",
		r.st.EvalFailures, r.cfg.Spec.Retries+1, evidence)
	if err := r.append(session.Event{Kind: session.KindUserMessage, Text: msg}); err != nil {
		return r.result(), true, err
	}
	return r.result(), false, nil
}

// ClipTail keeps the last n bytes of a program's output for a message,
// marked as cut: the end of an output is where it says what went wrong.
func ClipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
