package view

import (
	"fmt"

	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

// Compare is the data of a page that shows two sessions side by side,
// aligned by turn as `agentctl replay diff` aligns them (replaycheck.Diff).
type Compare struct {
	A Side `json:"a"`
	B Side `json:"b"`
	// Relation says how the two are related, when their headers say:
	// one is a fork of the other.
	Relation string    `json:"relation,omitempty"`
	Rows     []TurnRow `json:"rows"`
	// FirstDiff is the 1-based turn of the first difference, 0 when the
	// turns agree; Same also needs the final statuses to agree.
	FirstDiff int  `json:"first_diff"`
	Same      bool `json:"same"`
}

// Side is one of the compared sessions.
type Side struct {
	Summary recorder.Summary `json:"summary"`
	Href    string           `json:"href,omitempty"`
}

// TurnRow is turn N of both sessions; a side without turn N is nil.
type TurnRow struct {
	Turn   int      `json:"turn"`
	A      *Turn    `json:"a"`
	B      *Turn    `json:"b"`
	Differ []string `json:"differ"`
}

// Turn is replaycheck.Turn with its strings made safe and small.
type Turn struct {
	Seq     int64    `json:"seq"`
	Text    string   `json:"text,omitempty"`
	Calls   []string `json:"calls"`
	Results []string `json:"results"`
	In      int64    `json:"in"`
	Out     int64    `json:"out"`
	Cost    float64  `json:"cost"`
}

// CompareSessions compares a and b turn by turn with replaycheck.Diff. Only
// the IDs, events, SessionHref and MaxText of the inputs are used.
func CompareSessions(a, b Input) (*Compare, error) {
	for _, in := range []Input{a, b} {
		if len(in.Events) == 0 {
			return nil, fmt.Errorf("view: compare: session %s has no events", in.ID)
		}
	}
	rep := replaycheck.Diff(a.ID, a.Events, b.ID, b.Events)
	all := func(in Input) func(func(session.Event)) {
		return func(yield func(session.Event)) {
			for _, e := range in.Events {
				yield(e)
			}
		}
	}
	c := &cleaner{max: min(textCap(a, all(a)), textCap(b, all(b)))}
	out := &Compare{A: side(a, rep.A), B: side(b, rep.B), Rows: make([]TurnRow, 0, len(rep.Rows)), FirstDiff: rep.FirstDiff, Same: rep.Same}
	out.Relation = relation(a, b)
	for _, r := range rep.Rows {
		out.Rows = append(out.Rows, TurnRow{Turn: r.Turn, A: c.turn(r.A), B: c.turn(r.B), Differ: r.Differ})
	}
	return out, nil
}

func side(in Input, sum recorder.Summary) Side {
	s := Side{Summary: sum}
	s.Summary.SessionID = termsafe.String(sum.SessionID)
	s.Summary.Name = termsafe.String(sum.Name)
	s.Summary.Provider = termsafe.String(sum.Provider)
	s.Summary.Model = termsafe.String(sum.Model)
	if in.SessionHref != nil {
		s.Href = in.SessionHref(in.ID)
	}
	return s
}

func relation(a, b Input) string {
	ha, hb := a.Events[0], b.Events[0]
	switch {
	case hb.Kind == session.KindSessionStarted && hb.ParentSessionID == a.ID:
		return fmt.Sprintf("B is a fork of A at seq %d", hb.ForkedFrom)
	case ha.Kind == session.KindSessionStarted && ha.ParentSessionID == b.ID:
		return fmt.Sprintf("A is a fork of B at seq %d", ha.ForkedFrom)
	case ha.ParentSessionID != "" && ha.ParentSessionID == hb.ParentSessionID:
		return fmt.Sprintf("both are forks of %s (A at seq %d, B at seq %d)", termsafe.String(ha.ParentSessionID), ha.ForkedFrom, hb.ForkedFrom)
	}
	return ""
}

func (c *cleaner) turn(t *replaycheck.Turn) *Turn {
	if t == nil {
		return nil
	}
	out := &Turn{Seq: t.Seq, Text: c.str(t.Text), Calls: make([]string, len(t.Calls)), Results: make([]string, len(t.Results)),
		In: t.InputTokens, Out: t.OutputTokens, Cost: t.CostUSD}
	for i, s := range t.Calls {
		out.Calls[i] = c.str(s)
	}
	for i, s := range t.Results {
		out.Results[i] = c.str(s)
	}
	return out
}
