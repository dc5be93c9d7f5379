package session

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// compactionPrompt asks for a summary that keeps what later turns need.
const compactionPrompt = `Summarise the conversation below for your own later use. Keep the goal,
every constraint the user stated, decisions taken, files touched and what is
left to do. Be concise; do not invent anything.`

// EstimateTokens is a provider-neutral guess (4 bytes a token) used before
// a call, when the real count is not known yet. Real usage replaces it.
// The runner's compaction threshold and the summary requests' fit are
// counted with it, so replay recomputes them from the log.
func EstimateTokens(msgs []Message) int64 {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + 8
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
	}
	return int64(n/4 + 1)
}

// IsOriginal reports whether events of kind k are original conversational
// events: ones the projection turns into messages, and so ones a summary
// is made from.
func IsOriginal(k Kind) bool {
	switch k {
	case KindUserMessage, KindAssistantMessage, KindToolResult,
		KindReconciled, KindApprovalDenied, KindInterrupted:
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
func CompactionChunks(evs []Event, from, through, limit int64) []Chunk {
	// The turns: [start, end] seqs of originals.
	var turns []Chunk
	for _, e := range evs {
		if e.Seq < from || !IsOriginal(e.Kind) {
			continue
		}
		if e.Seq > through {
			break
		}
		switch e.Kind {
		case KindUserMessage, KindAssistantMessage, KindInterrupted:
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
			if msgs, _ := CompactionMessages(evs, grown.From, grown.Through, 0); EstimateTokens(msgs) <= limit {
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
func CompactionInput(c Event) (from, fit int64) {
	from = SummaryFrom(c)
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
// It also returns the seqs it read. The runner sends it; replay uses it,
// with CompactionInput and the compaction's through, to recompute the
// request digests of compaction calls.
func CompactionMessages(evs []Event, from, through, fit int64) ([]Message, []int64) {
	var src []Event
	var seqs []int64
	for _, e := range evs {
		if e.Seq > through {
			break
		}
		if e.Seq >= from && IsOriginal(e.Kind) {
			src = append(src, e)
			seqs = append(seqs, e.Seq)
		}
	}
	msgs := append([]Message{{Role: RoleSystem, Content: compactionPrompt}}, Project(src, "")...)
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
// what was cut, until EstimateTokens(msgs) is at most fit or nothing is
// longer than minCut. It is deterministic: replay recomputes it.
func fitTo(msgs []Message, fit int64) {
	for EstimateTokens(msgs) > fit {
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
		excess := int(EstimateTokens(msgs)-fit)*4 + 96 // the note's own bytes
		keep := max(len(c)-excess, minCut/2) / 2
		head, tail := CutRunes(c, keep, false), CutRunes(c, keep, true)
		msgs[long].Content = fmt.Sprintf("%s\n[… %d bytes cut to fit the summary request …]\n%s", head, len(c)-len(head)-len(tail), tail)
	}
}

// CutRunes is the first (or, with fromEnd, the last) n bytes of s, fewer
// if n would split a character.
func CutRunes(s string, n int, fromEnd bool) string {
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
