package runner

import (
	"fmt"
	"time"

	"github.com/agentctl/agentctl/session"
)

// estimateTokens is a provider-neutral guess (4 bytes a token) used before
// a call, when the real count is not known yet. Real usage replaces it.
func estimateTokens(msgs []session.Message) int64 {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + 8
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
	}
	return int64(n/4 + 1)
}

func (r *run) wall() time.Duration {
	w := r.st.WallSpent
	if !r.st.SegStart.IsZero() {
		w += r.now().Sub(r.st.SegStart)
	}
	return w
}

// modelBudget reserves the next model call: its estimated input plus its
// max output tokens must fit in what is left. When less than the spec's
// max output is left, the call's max output shrinks to fit; when not even
// the input fits, the run is over budget.
func (r *run) modelBudget(msgs []session.Message) (maxOut int64, over string) {
	b := r.cfg.Spec.Budget
	maxOut = r.cfg.Spec.Model.MaxTokens
	if b.MaxTokens > 0 {
		left := b.MaxTokens - r.st.Tokens() - estimateTokens(msgs)
		if left < 1 {
			return 0, fmt.Sprintf("max_tokens %d: %d spent and the next call needs about %d input tokens",
				b.MaxTokens, r.st.Tokens(), estimateTokens(msgs))
		}
		maxOut = min(maxOut, left)
	}
	if b.MaxCostUSD > 0 && r.st.CostUSD >= b.MaxCostUSD {
		return 0, fmt.Sprintf("max_cost_usd %.4f: $%.4f spent", b.MaxCostUSD, r.st.CostUSD)
	}
	if b.MaxWall > 0 && r.wall() >= time.Duration(b.MaxWall) {
		return 0, fmt.Sprintf("max_wall %s: %s spent", time.Duration(b.MaxWall), r.wall().Round(time.Millisecond))
	}
	return maxOut, ""
}

// toolBudget checks the limits that apply before a tool call is dispatched.
func (r *run) toolBudget() string {
	b := r.cfg.Spec.Budget
	if b.MaxToolCalls > 0 && r.st.ToolCalls >= b.MaxToolCalls {
		return fmt.Sprintf("max_tool_calls %d: all used", b.MaxToolCalls)
	}
	if b.MaxTokens > 0 && r.st.Tokens() >= b.MaxTokens {
		return fmt.Sprintf("max_tokens %d: %d spent", b.MaxTokens, r.st.Tokens())
	}
	if b.MaxCostUSD > 0 && r.st.CostUSD >= b.MaxCostUSD {
		return fmt.Sprintf("max_cost_usd %.4f: $%.4f spent", b.MaxCostUSD, r.st.CostUSD)
	}
	if b.MaxWall > 0 && r.wall() >= time.Duration(b.MaxWall) {
		return fmt.Sprintf("max_wall %s: %s spent", time.Duration(b.MaxWall), r.wall().Round(time.Millisecond))
	}
	return ""
}

// overBudget stops the run before the next dispatch. Calls of the current
// turn that did not run stay open; a resume with a raised budget runs them.
func (r *run) overBudget(why string) (Result, error) {
	if err := r.append(session.Event{Kind: session.KindBudgetExceeded, Reason: why}); err != nil {
		return r.result(), err
	}
	return r.finish(session.StatusBudgetExceeded, why)
}
