package check

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Turn is one model turn of a session as diff compares it: the assistant
// message, the tools it called with their results, and what it cost.
type Turn struct {
	Seq          int64    `json:"seq"`
	Text         string   `json:"text,omitempty"`
	Calls        []string `json:"calls"`   // "name(args)"
	Results      []string `json:"results"` // "status" or "status:sha256-prefix of output"
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	CostUSD      float64  `json:"cost_usd"`
}

// Turns lists the model turns of a session in order, each call's result
// taken from the session's fold: the event that last ended it (a
// tool_result, a denial or a reconciliation).
func Turns(evs []session.Event) []Turn {
	var out []Turn
	for i, e := range evs {
		if e.Kind != session.KindAssistantMessage {
			continue
		}
		t := Turn{Seq: e.Seq, Text: e.Text, Calls: []string{}, Results: []string{}, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens}
		if i+1 < len(evs) && evs[i+1].Kind == session.KindModelCall {
			c := evs[i+1]
			t.InputTokens, t.OutputTokens, t.CostUSD = c.InputTokens, c.OutputTokens, c.CostUSD
		}
		for _, c := range e.ToolCalls {
			t.Calls = append(t.Calls, c.Name+"("+string(c.Args)+")")
			t.Results = append(t.Results, "(none)")
		}
		out = append(out, t)
	}
	for _, c := range session.Fold(evs).Calls {
		e, ok := session.EventAt(evs, c.EndSeq)
		if !ok || c.Turn < 1 || c.Turn > len(out) || c.Index >= len(out[c.Turn-1].Results) {
			continue
		}
		r := e.Status
		switch e.Kind {
		case session.KindApprovalDenied:
			r = "denied"
		case session.KindReconciled:
			r = "reconciled:" + e.Outcome
		}
		if e.Output != "" {
			sum := sha256.Sum256([]byte(e.Output))
			r += ":" + hex.EncodeToString(sum[:4])
		} else if e.Error != "" {
			r += ": " + clip.Runes(e.Error, 40)
		}
		out[c.Turn-1].Results[c.Index] = r
	}
	return out
}

// DiffRow compares turn N of two sessions; a side without turn N is nil.
type DiffRow struct {
	Turn int   `json:"turn"`
	A    *Turn `json:"a"`
	B    *Turn `json:"b"`
	// Differ lists what differs: "calls", "results", "tokens", "cost",
	// "text", "missing".
	Differ []string `json:"differ"`
}

// DiffReport compares two sessions turn by turn; --json prints it.
type DiffReport struct {
	A         recorder.Summary `json:"a"`
	B         recorder.Summary `json:"b"`
	Rows      []DiffRow        `json:"rows"`
	FirstDiff int              `json:"first_diff"` // 1-based turn, 0 when the turns agree
	Same      bool             `json:"same"`       // turns and final status agree
}

// Diff compares two sessions turn by turn: the tools each turn called, the
// results they got, tokens, cost, and the final status.
func Diff(aID string, a []session.Event, bID string, b []session.Event) DiffReport {
	rep := DiffReport{A: summarize(aID, a), B: summarize(bID, b), Rows: []DiffRow{}}
	ta, tb := Turns(a), Turns(b)
	n := max(len(ta), len(tb))
	for i := range n {
		row := DiffRow{Turn: i + 1, Differ: []string{}}
		if i < len(ta) {
			row.A = &ta[i]
		}
		if i < len(tb) {
			row.B = &tb[i]
		}
		switch {
		case row.A == nil || row.B == nil:
			row.Differ = append(row.Differ, "missing")
		default:
			if strings.Join(row.A.Calls, "\x00") != strings.Join(row.B.Calls, "\x00") {
				row.Differ = append(row.Differ, "calls")
			}
			if strings.Join(row.A.Results, "\x00") != strings.Join(row.B.Results, "\x00") {
				row.Differ = append(row.Differ, "results")
			}
			if row.A.Text != row.B.Text {
				row.Differ = append(row.Differ, "text")
			}
			if row.A.InputTokens != row.B.InputTokens || row.A.OutputTokens != row.B.OutputTokens {
				row.Differ = append(row.Differ, "tokens")
			}
			if row.A.CostUSD != row.B.CostUSD {
				row.Differ = append(row.Differ, "cost")
			}
		}
		if len(row.Differ) > 0 && rep.FirstDiff == 0 {
			rep.FirstDiff = i + 1
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.Same = rep.FirstDiff == 0 && rep.A.Status == rep.B.Status
	return rep
}

// summarize is recorder.Summarize: its model is the one the session ended
// on (the latest model_changed), not only the one its header pinned.
func summarize(id string, evs []session.Event) recorder.Summary {
	return recorder.Summarize(id, evs, recorder.Tail{})
}
