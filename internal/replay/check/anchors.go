package check

import (
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/internal/session"
)

// Codes of anchoring failures.
const (
	// CodeFirstUserLost: the projection after a compaction does not hold
	// the first user message verbatim.
	CodeFirstUserLost = "first_user_message_lost"
	// CodeNeedleLost: a needle is absent from the projection after a
	// compaction.
	CodeNeedleLost = "needle_lost"
	// CodeSummaryOfSummary: a compaction read an earlier compaction (its
	// source_seqs name a compaction event): the summary was made from a
	// summary, not from the original events.
	CodeSummaryOfSummary = "summary_of_summary"
	// CodeSourceNotOriginal: source_seqs name an event that is not an
	// original conversational event, or one after through, or none at all.
	CodeSourceNotOriginal = "source_not_original"
	// CodeNoSources: the compaction records no source_seqs, so nothing
	// shows what it was made from.
	CodeNoSources = "no_source_seqs"
)

// AnchorFinding is one failed check of one compaction.
type AnchorFinding struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// AnchorCheck is the report for one compaction.
type AnchorCheck struct {
	Seq      int64           `json:"seq"`
	Through  int64           `json:"through"`
	Sources  int             `json:"sources"`
	Messages int             `json:"messages"`
	OK       bool            `json:"ok"`
	Findings []AnchorFinding `json:"findings"`
	// Found says, for each needle, where the projection holds it:
	// "summary", "first user message", "message N", or "" when lost.
	Found map[string]string `json:"found"`
}

// AnchorsReport is the result of `agentctl replay anchors`; --json prints it.
type AnchorsReport struct {
	SessionID   string        `json:"session_id"`
	FirstUser   string        `json:"first_user_message"`
	Needles     []string      `json:"needles"`
	Compactions []AnchorCheck `json:"compactions"`
	OK          bool          `json:"ok"`
}

// Anchors checks every compaction of a session: the projection right after
// it (today's projection rules, folded once) still holds the first user
// message verbatim and every needle; and the compaction's source_seqs name
// original events up to its through, never an earlier compaction.
func Anchors(id string, evs []session.Event, needles []string) AnchorsReport {
	rep := AnchorsReport{SessionID: id, Needles: append([]string{}, needles...), Compactions: []AnchorCheck{}, OK: true}
	if len(evs) == 0 {
		return rep
	}
	bySeq := make(map[int64]session.Event, len(evs))
	for _, e := range evs {
		bySeq[e.Seq] = e
	}
	var first *session.Event
	p := session.NewProjector(evs[0].System)
	for i, e := range evs {
		p.Add(e)
		if e.Kind == session.KindUserMessage && first == nil {
			first = &evs[i]
			rep.FirstUser = e.Text
		}
		if e.Kind != session.KindCompaction {
			continue
		}
		c := AnchorCheck{Seq: e.Seq, Through: e.Through, Sources: len(e.SourceSeqs), Findings: []AnchorFinding{}, Found: map[string]string{}}
		msgs := p.Messages()
		c.Messages = len(msgs)
		fail := func(code, format string, args ...any) {
			c.Findings = append(c.Findings, AnchorFinding{Code: code, Detail: fmt.Sprintf(format, args...)})
		}
		if first != nil {
			held := false
			for _, m := range msgs {
				if m.Role == session.RoleUser && m.Content == first.Text {
					held = true
					break
				}
			}
			if !held {
				fail(CodeFirstUserLost, "the first user message (seq %d) is not in the projection verbatim", first.Seq)
			}
		}
		for _, n := range needles {
			where := ""
			for j, m := range msgs {
				if strings.Contains(m.Content, n) {
					switch {
					case m.Role == session.RoleSystem && strings.HasPrefix(m.Content, session.SummaryPrefix):
						where = "summary"
					case first != nil && m.Seq == first.Seq:
						where = "first user message"
					default:
						where = fmt.Sprintf("message %d (seq %d)", j, m.Seq)
					}
					break
				}
			}
			c.Found[n] = where
			if where == "" {
				fail(CodeNeedleLost, "%q is in none of the %d messages after the compaction", n, len(msgs))
			}
		}
		if len(e.SourceSeqs) == 0 {
			fail(CodeNoSources, "the compaction records no source_seqs")
		}
		for _, s := range e.SourceSeqs {
			src, ok := bySeq[s]
			switch {
			case !ok:
				fail(CodeSourceNotOriginal, "source seq %d is not in the log", s)
			case src.Kind == session.KindCompaction:
				fail(CodeSummaryOfSummary, "source seq %d is the compaction at seq %d: the summary was made from a summary", s, s)
			case s > e.Through:
				fail(CodeSourceNotOriginal, "source seq %d (%s) is after through %d", s, src.Kind, e.Through)
			case !session.IsOriginal(src.Kind):
				fail(CodeSourceNotOriginal, "source seq %d is a %s event, not an original message", s, src.Kind)
			}
		}
		c.OK = len(c.Findings) == 0
		if !c.OK {
			rep.OK = false
		}
		rep.Compactions = append(rep.Compactions, c)
	}
	return rep
}
