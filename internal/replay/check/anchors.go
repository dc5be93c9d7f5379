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
// original events up to its through, never an earlier compaction. It is
// an Anchorer fed evs.
func Anchors(id string, evs []session.Event, needles []string) AnchorsReport {
	a := NewAnchorer(id, needles)
	for i := range evs {
		a.Add(evs[i])
	}
	return a.Report()
}

// Anchorer is Anchors over a log read a record at a time (Add each event,
// then Report), for readers that stream a log (diagnose, view): it holds
// the projection and one kind per seq, not the events.
//
// Its work is linear in the log: the first user message is looked up in
// the projection (Projector.Holds), not found by copying the projection at
// each compaction. An app whose compactions drop nothing (otlp records no
// through) keeps its whole conversation in the projection, and a session
// of 70,000 such compactions made that copy quadratic. Only needles, which
// a person passes, are searched for in the whole projection.
type Anchorer struct {
	rep     AnchorsReport
	p       *session.Projector
	started bool
	first   *session.Event
	// kinds[seq-1] is the kind of each event (source_seqs name earlier
	// events), as its index in names, the distinct kinds seen: a byte an
	// event, not a string header and the decoded string (~31 MB at 1M
	// events, most of what `view` held then). Past 255 kinds (a forged
	// log) the rest are one, kindMany.
	kinds  []uint8
	names  []session.Kind
	nameAt map[session.Kind]uint8
	// Messages counts the projection messages the checks read (the
	// projection's length at each compaction is not read unless needles
	// ask): what makes the work linear, for tests to count.
	Messages int64
}

// NewAnchorer starts the check of session id for needles.
func NewAnchorer(id string, needles []string) *Anchorer {
	return &Anchorer{rep: AnchorsReport{SessionID: id, Needles: append([]string{}, needles...), Compactions: []AnchorCheck{}, OK: true}}
}

// Add folds the next event of the log.
func (a *Anchorer) Add(e session.Event) {
	if !a.started {
		a.started = true
		a.p = session.NewProjector(e.System)
	}
	if e.Seq == int64(len(a.kinds))+1 {
		a.kinds = append(a.kinds, a.kindIndex(e.Kind))
	}
	a.p.Add(e)
	if e.Kind == session.KindUserMessage && a.first == nil {
		f := e
		a.first = &f
		a.rep.FirstUser = e.Text
	}
	if e.Kind != session.KindCompaction {
		return
	}
	c := AnchorCheck{Seq: e.Seq, Through: e.Through, Sources: len(e.SourceSeqs), Findings: []AnchorFinding{}, Found: map[string]string{}}
	c.Messages = a.p.Len()
	fail := func(code, format string, args ...any) {
		c.Findings = append(c.Findings, AnchorFinding{Code: code, Detail: fmt.Sprintf(format, args...)})
	}
	if a.first != nil {
		m, ok := a.p.Holds(a.first.Seq)
		a.Messages++
		if !ok || m.Role != session.RoleUser || m.Content != a.first.Text {
			fail(CodeFirstUserLost, "the first user message (seq %d) is not in the projection verbatim", a.first.Seq)
		}
	}
	if len(a.rep.Needles) > 0 {
		msgs := a.p.Messages()
		a.Messages += int64(len(msgs))
		for _, n := range a.rep.Needles {
			where := ""
			for j, m := range msgs {
				if strings.Contains(m.Content, n) {
					switch {
					case m.Role == session.RoleSystem && strings.HasPrefix(m.Content, session.SummaryPrefix):
						where = "summary"
					case a.first != nil && m.Seq == a.first.Seq:
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
	}
	if len(e.SourceSeqs) == 0 {
		fail(CodeNoSources, "the compaction records no source_seqs")
	}
	for _, s := range e.SourceSeqs {
		var kind session.Kind
		ok := s >= 1 && s <= int64(len(a.kinds))
		if ok {
			kind = a.names[a.kinds[s-1]]
		}
		switch {
		case !ok:
			fail(CodeSourceNotOriginal, "source seq %d is not in the log", s)
		case kind == session.KindCompaction:
			fail(CodeSummaryOfSummary, "source seq %d is the compaction at seq %d: the summary was made from a summary", s, s)
		case s > e.Through:
			fail(CodeSourceNotOriginal, "source seq %d (%s) is after through %d", s, kind, e.Through)
		case !session.IsOriginal(kind):
			fail(CodeSourceNotOriginal, "source seq %d is a %s event, not an original message", s, kind)
		}
	}
	c.OK = len(c.Findings) == 0
	if !c.OK {
		a.rep.OK = false
	}
	a.rep.Compactions = append(a.rep.Compactions, c)
}

// kindMany stands for every kind past the first 255 of a log.
const kindMany session.Kind = "(one of many kinds)"

// kindIndex is k's index in a.names, added if new.
func (a *Anchorer) kindIndex(k session.Kind) uint8 {
	if i, ok := a.nameAt[k]; ok {
		return i
	}
	if a.nameAt == nil {
		a.nameAt = map[session.Kind]uint8{}
	}
	if len(a.names) == 255 {
		a.names = append(a.names, kindMany)
	}
	if len(a.names) > 255 {
		return 255
	}
	i := uint8(len(a.names))
	a.names = append(a.names, k)
	a.nameAt[k] = i
	return i
}

// Report is the check of the events added so far.
func (a *Anchorer) Report() AnchorsReport { return a.rep }
