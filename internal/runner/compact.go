package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// maybeCompact records compactions when the projection (the messages the
// model would be sent next, session.EstimateTokens) passes the spec's
// threshold of the window. Each summary is made from original events,
// never from an earlier summary, and only from originals no summary in
// force covers yet: the new originals up to `through` are summarised in
// chunks whose requests fit the threshold of the window
// (session.CompactionChunks), each recorded as one part (a compaction
// whose attrs name summary_from). The summary message is held to a budget
// (summaryBudget): each part's text is cut to it, and the oldest parts in
// force are dropped (attrs kept_from) so the parts kept and the new one
// fit it together; the first user message stays pinned whatever is
// dropped. Without the bound every part stayed, the summary grew with the
// session and, past the threshold on its own, made every turn compact and
// every request overflow. through stops before the latest assistant
// message so the current turn stays verbatim. The originals come from the
// run's state (state.originals), not the log, so a compaction costs the
// same at turn 2,000 as at turn 20. over is set when the budget stops the
// run before or during a summary request.
func (r *run) maybeCompact(ctx context.Context) (over string, err error) {
	c := r.cfg.Spec.Compaction
	limit := int64(c.Threshold * float64(c.Window))
	if session.EstimateTokens(r.st.projector.Messages()) < limit {
		return "", nil
	}
	if r.st.LastAssistantSeq == 0 {
		return "", nil
	}
	through := r.st.LastAssistantSeq - 1
	if through <= r.st.projector.Through() {
		return "", nil // nothing new to fold in; the window is simply too small
	}
	budget := r.summaryBudget()
	if budget <= 0 {
		return "", nil // the pinned messages alone pass the threshold: no summary fits beside them
	}
	// The chunks are cut from a copy: each part recorded trims the state's.
	evs := append([]session.Event(nil), r.st.originals...)
	for _, ch := range session.CompactionChunks(evs, r.st.projector.Through()+1, through, limit) {
		msgs, seqs := session.CompactionMessages(evs, ch.From, ch.Through, limit)
		req := provider.Request{Model: r.st.Model, Messages: msgs, Purpose: provider.PurposeCompaction}
		if err := r.fitsWindow(req, "the summary request"); err != nil {
			return "", err
		}
		maxOut, over := r.modelBudget(req)
		if over != "" {
			return over, nil
		}
		if maxOut <= 0 || maxOut > budget {
			maxOut = budget // a summary longer than its budget would be cut anyway
		}
		req.MaxTokens = maxOut
		var retries int64
		var retryErr error
		req = r.withRetryLog(req, &retries, &retryErr) // each failed try is a model_call, as for a turn
		began := time.Now()
		callCtx, cancel := r.callContext(ctx)
		resp, err := r.cfg.Provider.Complete(callCtx, req, nil)
		cancel()
		if retryErr != nil {
			return "", retryErr
		}
		if err != nil {
			if wallCut(ctx, callCtx) {
				cut := r.failedCallEvent(req, resp, callLatency(resp, began), retries+1, err)
				cut.Error = "cancelled at the max_wall deadline"
				if err := r.append(cut); err != nil {
					return "", err
				}
				return r.wallReason("a compaction call"), nil
			}
			return "", fmt.Errorf("compaction: %w", err)
		}
		mc := r.modelCallEvent(req, resp, 0, "")
		if retries > 0 {
			mc.Attempt = retries + 1
		}
		summary := fitSummary(resp.Text, budget)
		attrs := fmt.Appendf(nil, `{"summary_from":%d,"fit_tokens":%d`, ch.From, limit)
		if kept, all := keptParts(r.st.projector.Parts(), summary, budget); !all {
			if kept == 0 {
				kept = r.st.LastSeq + 1 // the model_call's seq: no earlier part is kept
			}
			attrs = fmt.Appendf(attrs, `,"kept_from":%d`, kept)
		}
		attrs = append(attrs, '}')
		if err := r.append(
			mc,
			session.Event{Kind: session.KindCompaction, Through: ch.Through, Summary: summary, SourceSeqs: seqs, Attrs: attrs},
		); err != nil {
			return "", err
		}
	}
	return "", nil
}

// summaryShare is the share of the room under the threshold (what the
// system prompt and the pinned first user message leave) that the summary
// message may take, and so may one tool result (outputCap): the rest is
// for the turns after a compaction, so the next one is several turns away.
const summaryShare = 3

// room is the estimate the threshold leaves beside the system prompt and
// the pinned first user message: what the summary and the turns after
// `through` share. It is the same all session long once the first user
// message is recorded, and 0 when the pinned messages alone pass the
// threshold.
func (r *run) room() int64 {
	c := r.cfg.Spec.Compaction
	return max(int64(c.Threshold*float64(c.Window))-session.EstimateTokens(r.st.projector.Pinned()), 0)
}

// summaryBudget is the most tokens the summary message ("Session so far:"
// and its parts in force) may take: a third of the room.
func (r *run) summaryBudget() int64 { return r.room() / summaryShare }

// outputCap is the most bytes of a tool's output the log keeps and the
// model reads (tools.Call.MaxOutput: the head and the tail, the whole
// output in an artifact where the tool keeps one): what a third of the
// room holds, and never more than tools.DefaultMaxOutput. A result longer
// than the window stays in every request until the next turn, which
// compaction keeps verbatim, so no compaction could make it fit.
func (r *run) outputCap() int {
	return int(min(r.summaryBudget()*4, tools.DefaultMaxOutput))
}

// summaryTokens is the estimate of the summary message of texts.
func summaryTokens(texts ...string) int64 {
	n := len(session.SummaryPrefix) + 8
	for i, t := range texts {
		if i > 0 {
			n += 2 // the blank line between parts
		}
		n += len(t)
	}
	return int64(n/4 + 1)
}

// fitSummary is text cut, if it must be, so that a summary message of it
// alone is estimated at no more than budget tokens: the head is kept (a
// summary leads with the goal and the state), the rest replaced by a note.
// The model was asked for at most budget tokens; the provider's tokens
// are not ours, so the text is checked with our estimate.
func fitSummary(text string, budget int64) string {
	if summaryTokens(text) <= budget {
		return text
	}
	const note = "\n[… summary cut to its budget …]"
	keep := int(budget-1)*4 - len(session.SummaryPrefix) - 8 - len(note)
	return session.CutRunes(text, max(keep, 0), false) + note
}

// keptParts says which of the parts in force (oldest first) stay beside a
// new part of text summary: the newest that fit the budget with it.
// kept is the seq of the oldest kept, all whether every one is kept.
func keptParts(parts []session.SummaryPart, summary string, budget int64) (kept int64, all bool) {
	texts := []string{summary}
	for i := len(parts) - 1; i >= 0; i-- {
		if summaryTokens(append(texts, parts[i].Text)...) > budget {
			return kept, false
		}
		texts = append(texts, parts[i].Text)
		kept = parts[i].Seq
	}
	return kept, true
}

// ErrContextOverflow marks a request that would not fit the window even
// after compaction: one message alone (the pinned first user message, a
// tool result, the current turn) is too large for it. The run stops
// rather than send it: a provider would refuse it or silently drop the
// start of the context.
var ErrContextOverflow = errors.New("runner: the request does not fit the window")

// capOutput cuts a tool's output to outputCap, head and tail, for what
// does not cut its own (grep's matches, a lookup's stored result, a
// repeat's output when resume reconciles): a little over the cap is the
// note a capture adds. At the default cap nothing is cut that was not
// before (a recorded tool of an imported session gives its output whole).
func (r *run) capOutput(out string) string {
	if max := r.outputCap(); max < tools.DefaultMaxOutput && len(out) > max+128 {
		out, _ = tools.CapOutput(out, max)
	}
	return out
}

// fitsWindow checks that req's messages, estimated as the threshold
// counts them (session.EstimateTokens), fit compaction.window; the error
// names the largest message, the one to shorten.
func (r *run) fitsWindow(req provider.Request, what string) error {
	w := r.cfg.Spec.Compaction.Window
	n := session.EstimateTokens(req.Messages)
	if w <= 0 || n <= w {
		return nil
	}
	big := -1
	var bigN int64
	for i := range req.Messages {
		if k := session.EstimateTokens(req.Messages[i : i+1]); big < 0 || k > bigN {
			big, bigN = i, k
		}
	}
	largest := "none"
	if big >= 0 {
		largest = fmt.Sprintf("%s (%d tokens)", describeMessage(req.Messages, big, r.st.projector.Pinned()), bigN)
	}
	return fmt.Errorf("%w: %s needs about %d tokens and compaction.window is %d, even after compaction; its largest message is %s: raise compaction.window in the spec, or make that message shorter",
		ErrContextOverflow, what, n, w, largest)
}

// describeMessage names message i of msgs for an error: the system
// prompt, the pinned first user message, a summary, or the event it came
// from.
func describeMessage(msgs []session.Message, i int, pinned []session.Message) string {
	m := msgs[i]
	for _, p := range pinned {
		if p.Role == session.RoleUser && m.Role == p.Role && m.Seq == p.Seq && m.Seq > 0 {
			return fmt.Sprintf("the first user message (seq %d), pinned verbatim", m.Seq)
		}
	}
	switch {
	case m.Role == session.RoleSystem && m.Seq == 0:
		return "the system prompt"
	case m.Role == session.RoleSystem:
		return fmt.Sprintf("the summary (compaction seq %d)", m.Seq)
	case m.Role == session.RoleTool:
		return fmt.Sprintf("the result of call %s (%s, seq %d)", m.ToolCallID, m.Name, m.Seq)
	}
	return fmt.Sprintf("the %s message at seq %d", m.Role, m.Seq)
}
