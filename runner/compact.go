package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/runner/tools"
	"github.com/agentctl/agentctl/session"
)

// compactionPrompt asks for a summary that keeps what later turns need.
const compactionPrompt = `Summarise the conversation below for your own later use. Keep the goal,
every constraint the user stated, decisions taken, files touched and what is
left to do. Be concise; do not invent anything.`

// maybeCompact records compactions when the projection (the messages the
// model would be sent next, estimateTokens) passes the spec's threshold of
// the window. Each summary is made from original events,
// never from an earlier summary, and only from originals no summary in
// force covers yet: the new originals up to `through` are summarised in
// chunks whose requests fit the threshold of the window
// (CompactionChunks), each recorded as one part (a compaction whose attrs
// name summary_from). The summary message is held to a budget
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
	if estimateTokens(r.st.projector.Messages()) < limit {
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
	for _, ch := range CompactionChunks(evs, r.st.projector.Through()+1, through, limit) {
		msgs, seqs := CompactionMessages(evs, ch.From, ch.Through, limit)
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
	return max(int64(c.Threshold*float64(c.Window))-estimateTokens(r.st.projector.Pinned()), 0)
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
	return cutRunes(text, max(keep, 0), false) + note
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

// isOriginal reports whether e is an original conversational event: one
// the projection turns into a message, and so one a summary is made from.
func isOriginal(k session.Kind) bool {
	switch k {
	case session.KindUserMessage, session.KindAssistantMessage, session.KindToolResult,
		session.KindReconciled, session.KindApprovalDenied, session.KindInterrupted:
		return true
	}
	return false
}

// Chunk is one summary request of a compaction: the originals with seqs
// from From to Through.
type Chunk struct{ From, Through int64 }

// CompactionChunks splits the originals with seqs from `from` to `through`
// into chunks whose summary requests (CompactionMessages) are estimated at
// no more than limit tokens. A chunk starts only where a turn starts (a
// user or assistant message, or interrupted text), so a tool result is
// never summarised apart from the call that asked for it; a turn that
// alone exceeds limit is a chunk of its own, whose request
// CompactionMessages fits by cutting its longest messages. The compaction
// events record each chunk (summary_from, through, fit_tokens), so replay
// recomputes the requests from the log alone.
func CompactionChunks(evs []session.Event, from, through, limit int64) []Chunk {
	// The turns: [start, end] seqs of originals.
	var turns []Chunk
	for _, e := range evs {
		if e.Seq < from || !isOriginal(e.Kind) {
			continue
		}
		if e.Seq > through {
			break
		}
		switch e.Kind {
		case session.KindUserMessage, session.KindAssistantMessage, session.KindInterrupted:
			turns = append(turns, Chunk{e.Seq, e.Seq})
			continue
		}
		if len(turns) == 0 {
			turns = append(turns, Chunk{e.Seq, e.Seq})
		}
		turns[len(turns)-1].Through = e.Seq
	}
	var out []Chunk
	for _, t := range turns {
		if n := len(out); n > 0 {
			grown := Chunk{out[n-1].From, t.Through}
			if msgs, _ := CompactionMessages(evs, grown.From, grown.Through, 0); estimateTokens(msgs) <= limit {
				out[n-1] = grown
				continue
			}
		}
		out = append(out, t)
	}
	// The last chunk reaches through, so the projection is cut where the
	// caller asked even if events after the last original precede it.
	if n := len(out); n > 0 {
		out[n-1].Through = through
	}
	return out
}

// CompactionInput is what compaction event c says about the request its
// summary was made from: the first seq it read (0: from the start) and the
// token estimate the request was fitted to (0: none), from its attrs
// {"summary_from": N, "fit_tokens": M}. A compaction recorded before
// chunked summaries has neither.
func CompactionInput(c session.Event) (from, fit int64) {
	from = session.SummaryFrom(c)
	if len(c.Attrs) > 0 {
		var a struct {
			Fit int64 `json:"fit_tokens"`
		}
		if json.Unmarshal(c.Attrs, &a) == nil && a.Fit > 0 {
			fit = a.Fit
		}
	}
	return from, fit
}

// CompactionMessages is what one summary request asks the model to
// summarise: the runner's prompt, then the original conversational events
// with seqs from `from` to `through` projected without any compaction (a
// summary is never made from a summary). from 0 means from the start: a
// compaction recorded before chunked summaries read every original up to
// its through. With fit above 0, the longest messages are cut in the
// middle until the request's estimate is at most fit tokens (see fitTo).
// It also returns the seqs it read. Replay uses it, with CompactionInput
// and the compaction's through, to recompute the request digests of
// compaction calls.
func CompactionMessages(evs []session.Event, from, through, fit int64) ([]session.Message, []int64) {
	var src []session.Event
	var seqs []int64
	for _, e := range evs {
		if e.Seq > through {
			break
		}
		if e.Seq >= from && isOriginal(e.Kind) {
			src = append(src, e)
			seqs = append(seqs, e.Seq)
		}
	}
	msgs := append([]session.Message{{Role: session.RoleSystem, Content: compactionPrompt}}, session.Project(src, "")...)
	if fit > 0 {
		fitTo(msgs, fit)
	}
	return msgs, seqs
}

// minCut is the shortest content fitTo still cuts: below it a message
// says too little to be worth shortening.
const minCut = 256

// fitTo shortens the contents of msgs after the prompt, longest first (the
// earliest of equals), keeping each one's head and tail around a note of
// what was cut, until estimateTokens(msgs) is at most fit or nothing is
// longer than minCut. It is deterministic: replay recomputes it.
func fitTo(msgs []session.Message, fit int64) {
	for estimateTokens(msgs) > fit {
		long := -1
		for i := 1; i < len(msgs); i++ {
			if len(msgs[i].Content) > minCut && (long < 0 || len(msgs[i].Content) > len(msgs[long].Content)) {
				long = i
			}
		}
		if long < 0 {
			return
		}
		c := msgs[long].Content
		excess := int(estimateTokens(msgs)-fit)*4 + 96 // the note's own bytes
		keep := max(len(c)-excess, minCut/2) / 2
		head, tail := cutRunes(c, keep, false), cutRunes(c, keep, true)
		msgs[long].Content = fmt.Sprintf("%s\n[… %d bytes cut to fit the summary request …]\n%s", head, len(c)-len(head)-len(tail), tail)
	}
}

// cutRunes is the first (or, with fromEnd, the last) n bytes of s, fewer
// if n would split a character.
func cutRunes(s string, n int, fromEnd bool) string {
	if n >= len(s) {
		return s
	}
	if fromEnd {
		i := len(s) - n
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		return s[i:]
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
// counts them (estimateTokens), fit compaction.window; the error names the
// largest message, the one to shorten.
func (r *run) fitsWindow(req provider.Request, what string) error {
	w := r.cfg.Spec.Compaction.Window
	n := estimateTokens(req.Messages)
	if w <= 0 || n <= w {
		return nil
	}
	big := -1
	var bigN int64
	for i := range req.Messages {
		if k := estimateTokens(req.Messages[i : i+1]); big < 0 || k > bigN {
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
