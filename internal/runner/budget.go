package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// estimateRequest is session.EstimateTokens of the messages plus the tool
// definitions the request offers: providers bill those as input too.
func estimateRequest(req provider.Request) int64 {
	n := session.EstimateTokens(req.Messages)
	for _, d := range req.Tools {
		n += int64(len(d.Name)+len(d.Description)+len(d.Parameters)) / 4
	}
	return n
}

func (r *run) wall() time.Duration {
	w := r.st.WallSpent
	if !r.st.SegStart.IsZero() {
		w += r.now().Sub(r.st.SegStart)
	}
	return w
}

// budget is the budget in force: the fold's (the header's spec's, with
// every budget_changed laid over it), never the spec file's directly, so
// a budget raised by one resume stays raised on the next.
func (r *run) budget() session.Budget { return r.st.Budget }

// price is what the runner reserves and bills a call of the model in
// force at: the spec's model.price when the spec names that model, else
// the provider package's table.
func (r *run) price() (pricing.Price, bool) {
	return priceOf(r.cfg.Spec, r.st.Model)
}

func priceOf(sp *spec.Spec, model string) (pricing.Price, bool) {
	if p := sp.Model.Price; p != nil && sp.Model.ID == model {
		return p.Provider(), true
	}
	return pricing.PriceOf(model)
}

// needPrice refuses a cost budget for a model with no price: no call could
// be reserved against it, and a run would overspend silently.
func needPrice(sp *spec.Spec, b session.Budget, model string) error {
	if b.MaxCostUSD <= 0 {
		return nil
	}
	if _, ok := priceOf(sp, model); ok {
		return nil
	}
	return fmt.Errorf("budget max_cost_usd %g is set, but model %s has no price in agentctl's table, so no call can be reserved against it; give its price in the spec (model: {price: {input: USD per 1M input tokens, output: USD per 1M output tokens}}) or drop max_cost_usd", b.MaxCostUSD, model)
}

// billed is the cost of resp as the runner records it: at the spec's
// price when it names the model, else what the provider computed.
func (r *run) billed(resp provider.Response, model string) float64 {
	if p := r.cfg.Spec.Model.Price; p != nil && r.cfg.Spec.Model.ID == model {
		return p.Provider().Cost(pricing.Usage{Input: resp.InputTokens, CacheRead: resp.CacheReadTokens,
			CacheCreation: resp.CacheCreationTokens, Output: resp.OutputTokens})
	}
	return resp.CostUSD
}

// modelBudget reserves the next model call from its worst case: its
// estimated input (messages and tool definitions) plus its max output
// must fit in what is left of the token budget, and their cost at the
// model's price (input at the uncached rate: agentctl asks for no cache
// writes, and reads cost less) in what is left of the cost budget. When
// less than the spec's max output is left, the call's max output shrinks
// to fit (r.capBy names the limit that shrank it); when not even the input
// fits, the run is over budget.
func (r *run) modelBudget(req provider.Request) (maxOut int64, over string) {
	b := r.budget()
	maxOut = r.cfg.Spec.Model.MaxTokens
	r.capBy = ""
	in := estimateRequest(req)
	if b.MaxTokens > 0 {
		left := b.MaxTokens - r.tokensSpent() - in
		if left < 1 {
			return 0, fmt.Sprintf("max_tokens %d: %d spent and the next call needs about %d input tokens",
				b.MaxTokens, r.tokensSpent(), in)
		}
		if left < maxOut {
			maxOut, r.capBy = left, fmt.Sprintf("max_tokens %d", b.MaxTokens)
		}
	}
	if b.MaxCostUSD > 0 {
		p, ok := r.price()
		if !ok {
			return 0, fmt.Sprintf("max_cost_usd %.4f: model %s has no price to reserve against", b.MaxCostUSD, r.st.Model)
		}
		left := b.MaxCostUSD - r.costSpent() - p.Cost(pricing.Usage{Input: in})
		fits := int64(math.MaxInt64)
		if p.Output > 0 {
			fits = int64(math.Floor(left / p.Output * 1e6))
		}
		if left <= 0 || fits < 1 {
			return 0, fmt.Sprintf("max_cost_usd %.4f: $%.4f spent and the next call's %d input tokens and 1 output token would cost about $%.4f",
				b.MaxCostUSD, r.costSpent(), in, p.Cost(pricing.Usage{Input: in, Output: 1}))
		}
		if maxOut <= 0 || fits < maxOut {
			maxOut, r.capBy = fits, fmt.Sprintf("max_cost_usd %.4f", b.MaxCostUSD)
		}
	}
	if b.MaxWall > 0 && r.wall() >= b.MaxWall {
		return 0, fmt.Sprintf("max_wall %s: %s spent", b.MaxWall, r.wall().Round(time.Millisecond))
	}
	return maxOut, ""
}

// spent checks the limits that are used up whatever comes next: before a
// tool call is dispatched, and before a resume of a session its budget
// stopped goes on.
func (r *run) spent() string { return r.spentWith(session.Spend{}) }

// spentWith is spent with extra charged to the run besides what its log
// folds: an external agent's side threads (sessions of their own, whose
// spend is the run's; see agenthost).
func (r *run) spentWith(extra session.Spend) string {
	b := r.budget()
	if calls := r.callsSpent() + extra.ToolCalls; b.MaxToolCalls > 0 && calls >= b.MaxToolCalls {
		return fmt.Sprintf("max_tool_calls %d: all used", b.MaxToolCalls)
	}
	if tokens := r.tokensSpent() + extra.Tokens(); b.MaxTokens > 0 && tokens >= b.MaxTokens {
		return fmt.Sprintf("max_tokens %d: %d spent", b.MaxTokens, tokens)
	}
	if cost := r.costSpent() + extra.CostUSD; b.MaxCostUSD > 0 && cost >= b.MaxCostUSD {
		return fmt.Sprintf("max_cost_usd %.4f: $%.4f spent", b.MaxCostUSD, cost)
	}
	if b.MaxWall > 0 && r.wall() >= b.MaxWall {
		return fmt.Sprintf("max_wall %s: %s spent", b.MaxWall, r.wall().Round(time.Millisecond))
	}
	return ""
}

// toolBudget checks the limits that apply before a tool call is dispatched.
func (r *run) toolBudget() string { return r.spent() }

// errWallBudget is the cancel cause of a call cut at the max_wall deadline.
var errWallBudget = errors.New("max_wall deadline")

// callContext bounds one model or tool call by what is left of max_wall:
// at the deadline the call is cancelled (a tool's process tree is killed,
// as on SIGINT) and wallCut reports it, so the session ends
// budget_exceeded at the deadline rather than when the call would have
// returned. The tool's own tool_timeout still applies inside it; the
// earlier of the two wins.
func (r *run) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	b := r.budget()
	if b.MaxWall <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, time.Now().Add(b.MaxWall-r.wall()), errWallBudget)
}

// wallCut reports whether call, derived from parent by callContext, was
// ended by the max_wall deadline rather than by an interruption.
func wallCut(parent, call context.Context) bool {
	return parent.Err() == nil && errors.Is(context.Cause(call), errWallBudget)
}

// wallReason is the budget_exceeded reason of a call cut at the deadline.
func (r *run) wallReason(what string) string {
	return fmt.Sprintf("max_wall %s: %s spent; %s was cancelled at the deadline", r.budget().MaxWall, r.wall().Round(time.Millisecond), what)
}

// overBudget stops the run before the next dispatch. Calls of the current
// turn that did not run stay open; a resume with a raised budget
// (resume --budget KEY=VALUE) runs them.
func (r *run) overBudget(why string) (Result, error) {
	if err := r.append(session.Event{Kind: session.KindBudgetExceeded, Reason: why}); err != nil {
		return r.result(), err
	}
	return r.finish(session.StatusBudgetExceeded, why)
}

// resumeBudget is the budget a resume goes on with: the fold's, the spec
// file's when a spec change the caller allowed reached budget, then the
// --budget settings. It returns the event that records the change, or
// false when nothing changes.
func resumeBudget(cfg Config, inForce session.Budget) (session.Budget, session.Event, bool, error) {
	nb := inForce
	var why []string
	if slices.Contains(cfg.Resume.SpecChanges, "budget") {
		nb = cfg.Spec.Budget.Session()
		why = append(why, "resume --allow-spec-change: the spec file's budget")
	}
	for _, s := range cfg.Resume.Budget {
		if err := nb.Set(s); err != nil {
			return inForce, session.Event{}, false, err
		}
	}
	if len(cfg.Resume.Budget) > 0 {
		why = append(why, "resume --budget "+strings.Join(cfg.Resume.Budget, " --budget "))
	}
	attrs, keys := session.BudgetChange(inForce, nb)
	if len(keys) == 0 {
		return nb, session.Event{}, false, nil
	}
	return nb, session.Event{Kind: session.KindBudgetChanged, Attrs: attrs,
		Reason: strings.Join(why, "; ") + "; " + session.DescribeChange(inForce, nb)}, true, nil
}

// budgetKeyOf is the budget key a budget_exceeded reason starts with
// ("max_wall 2s: …"), or "KEY" when it names none.
func budgetKeyOf(reason string) string {
	if k, _, _ := strings.Cut(reason, " "); session.IsBudgetKey(k) {
		return k
	}
	return "KEY"
}
