package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// Reasons a run ends failed on what the model answered, recorded on
// session_finished as "<reason>: <detail>".
const (
	// ReasonRefused: the model refused (OpenAI's refusal, Anthropic's
	// stop_reason refusal). A refusal is not an answer to evaluate.
	ReasonRefused = "refused"
	// ReasonTruncated: the answer was cut at the output cap
	// (finish_reason length) and the spec's on_truncated is fail.
	ReasonTruncated = "truncated"
)

// TruncatedPrompt is the user message that asks the model to go on after a
// truncated turn when the spec says on_truncated: continue.
const TruncatedPrompt = "Your previous answer was cut off at the output token limit. Continue exactly where it stopped."

// abnormalFinish reports whether a finish reason is worth keeping on the
// assistant message itself: the answer did not end the way answers do.
func abnormalFinish(reason string) bool {
	switch reason {
	case "", provider.FinishStop, provider.FinishToolCalls:
		return false
	}
	return true
}

// assistantEvent is the assistant_message of an answer: a refusal keeps
// its text in refusal, and a turn that did not end normally (cut at the
// output cap, filtered) says so in finish_reason, so that a reader and a
// resumed run know it is not a plain answer.
func assistantEvent(resp provider.Response) session.Event {
	e := session.Event{Kind: session.KindAssistantMessage, Text: resp.Text, ToolCalls: resp.ToolCalls,
		Refusal: resp.Refusal, InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens}
	if abnormalFinish(resp.FinishReason) {
		e.FinishReason = resp.FinishReason
	}
	return e
}

// withRetryLog returns req with OnRetry recording each failed try of the
// call as a model_call event (attempt 1, 2, …) when the provider reports
// it, so that retries are in the log and count against the budgets.
// attempts counts them; the final model_call carries the next number.
func (r *run) withRetryLog(req provider.Request, attempts *int64, recErr *error) provider.Request {
	req.OnRetry = func(a provider.Attempt) {
		*attempts++
		e := r.modelCallEvent(req, a.Partial, a.Latency.Milliseconds(), a.Err.Error())
		e.ErrorType, e.Attempt = a.Err.Type, *attempts
		if err := r.append(e); err != nil && *recErr == nil {
			*recErr = err
		}
	}
	return req
}

// callLatency is the latency of the last try of a call: what the provider
// measured, else the whole call as the runner saw it.
func callLatency(resp provider.Response, began time.Time) int64 {
	if resp.Latency > 0 {
		return resp.Latency.Milliseconds()
	}
	return time.Since(began).Milliseconds()
}

// failedCallEvent is the model_call of a call that failed for good: the
// provider's error type apart from its message, and the text it had
// streamed before it failed, which the answer never became.
func (r *run) failedCallEvent(req provider.Request, resp provider.Response, latency int64, attempt int64, cause error) session.Event {
	e := r.modelCallEvent(req, resp, latency, cause.Error())
	e.ErrorType, e.Text = errorType(cause), resp.Text
	if attempt > 1 {
		e.Attempt = attempt
	}
	return e
}

// errorType is the provider's own error type of a failure, "" when it is
// not a provider error.
func errorType(err error) string {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe.Type
	}
	return ""
}

// failProvider ends the run on a provider failure, like fail, with the
// provider's error type on the error event.
func (r *run) failProvider(cause error) (Result, error) {
	_ = r.append(session.Event{Kind: session.KindError, Reason: ReasonProviderError, Error: cause.Error(), ErrorType: errorType(cause)})
	res, err := r.finish(session.StatusFailed, ReasonProviderError+": "+cause.Error())
	res.Err = cause
	return res, err
}

// afterAnswer acts on an answer that is not a plain one, once it is
// recorded: a refusal ends the run failed; a truncated turn does what the
// spec's on_truncated says. handled is false when the loop should treat
// the answer as usual (run its calls, or evaluate), stopped when the
// invocation ended.
func (r *run) afterAnswer(_ context.Context, req provider.Request, resp provider.Response) (res Result, handled, stopped bool, err error) {
	switch {
	case resp.Refusal != "":
		res, err := r.finish(session.StatusFailed, fmt.Sprintf("%s: the model refused: %s", ReasonRefused, oneLine(resp.Refusal, 200)))
		return res, true, true, err
	case resp.FinishReason == provider.FinishLength && r.capBy != "":
		// The budget shrank the cap that cut the answer: the budget, not
		// the spec's max output, is what ran out.
		res, err := r.overBudget(fmt.Sprintf("%s: the answer was cut at the %d output tokens the budget had left", r.capBy, req.MaxTokens))
		return res, true, true, err
	case resp.FinishReason == provider.FinishLength:
		switch r.cfg.Spec.Truncated() {
		case spec.TruncatedFail:
			res, err := r.finish(session.StatusFailed, fmt.Sprintf(
				"%s: the answer was cut at the output cap of %d tokens (finish_reason length); raise model.max_tokens, or set on_truncated: continue or evaluate",
				ReasonTruncated, req.MaxTokens))
			return res, true, true, err
		case spec.TruncatedContinue:
			if len(resp.ToolCalls) > 0 {
				return Result{}, false, false, nil // run them; a cut call fails its schema check
			}
			if err := r.append(session.Event{Kind: session.KindUserMessage, Text: TruncatedPrompt}); err != nil {
				return r.result(), true, true, err
			}
			return r.result(), true, false, nil
		}
		// evaluate: the turn is a claim of being done, judged by the checks.
	}
	return Result{}, false, false, nil
}

// oneLine is s on one line, cut to n bytes with an ellipsis.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
