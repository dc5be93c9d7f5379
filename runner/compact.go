package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/session"
)

// compactionPrompt asks for a summary that keeps what later turns need.
const compactionPrompt = `Summarise the conversation below for your own later use. Keep the goal,
every constraint the user stated, decisions taken, files touched and what is
left to do. Be concise; do not invent anything.`

// maybeCompact records compactions when the projection passes the spec's
// threshold of the window. Each summary is made from original events on
// disk, never from an earlier summary, and only from originals no summary
// in force covers yet: the parts in force stay, and the new originals up
// to `through` are summarised in chunks whose requests fit the threshold
// of the window (CompactionChunks), each recorded as one part (a
// compaction whose attrs name summary_from). through stops before the
// latest assistant message so the current turn stays verbatim. over is
// set when the budget stops the run before or during a summary request.
func (r *run) maybeCompact(ctx context.Context) (over string, err error) {
	c := r.cfg.Spec.Compaction
	msgs := r.st.projector.Messages()
	if float64(estimateTokens(msgs)) < c.Threshold*float64(c.Window) {
		return "", nil
	}
	if r.st.LastAssistantSeq == 0 {
		return "", nil
	}
	through := r.st.LastAssistantSeq - 1
	if through <= r.st.projector.Through() {
		return "", nil // nothing new to fold in; the window is simply too small
	}
	evs, _, err := recorder.ReadFile(r.cfg.Store.LogPath(r.id))
	if err != nil {
		return "", fmt.Errorf("compaction: read the log: %w", err)
	}
	limit := int64(c.Threshold * float64(c.Window))
	for _, ch := range CompactionChunks(evs, r.st.projector.Through()+1, through, limit) {
		msgs, seqs := CompactionMessages(evs, ch.From, ch.Through, limit)
		req := provider.Request{Model: r.st.Model, Messages: msgs, Purpose: provider.PurposeCompaction}
		maxOut, over := r.modelBudget(req)
		if over != "" {
			return over, nil
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
		if err := r.append(
			mc,
			session.Event{Kind: session.KindCompaction, Through: ch.Through, Summary: resp.Text, SourceSeqs: seqs,
				Attrs: fmt.Appendf(nil, `{"summary_from":%d,"fit_tokens":%d}`, ch.From, limit)},
		); err != nil {
			return "", err
		}
	}
	return "", nil
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
