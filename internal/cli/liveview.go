package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

// liveView prints a run as it happens on stderr. On a terminal it streams
// the model's text; in CI logs it prints one plain line per step, so the
// log of tonight's failure reads well tomorrow.
type liveView struct {
	w        io.Writer
	tty      bool
	inText   bool
	tokens   int64
	cost     float64
	turn     int
	toolRuns int
}

func newLiveView(w io.Writer) *liveView {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &liveView{w: w, tty: tty}
}

func (v *liveView) Text(delta string) {
	if !v.tty || delta == "" {
		return
	}
	if !v.inText {
		fmt.Fprint(v.w, "\x1b[2m")
		v.inText = true
	}
	fmt.Fprint(v.w, termsafe.String(delta))
}

func (v *liveView) endText() {
	if v.inText {
		fmt.Fprint(v.w, "\x1b[0m\n")
		v.inText = false
	}
}

func (v *liveView) Event(e session.Event) {
	v.endText()
	switch e.Kind {
	case session.KindSessionStarted:
		fmt.Fprintf(v.w, "session %s: %s on %s/%s\n", e.SessionID, e.Name, e.Provider, e.Model)
	case session.KindUserMessage:
		fmt.Fprintf(v.w, "user: %s\n", clip(e.Text, 200))
	case session.KindAssistantMessage:
		v.turn++
		if e.Text != "" && !v.tty {
			fmt.Fprintf(v.w, "turn %d: %s\n", v.turn, clip(e.Text, 200))
		}
		if e.Refusal != "" {
			fmt.Fprintf(v.w, "turn %d: refused: %s\n", v.turn, clip(e.Refusal, 200))
		}
		if e.FinishReason == "length" {
			fmt.Fprintf(v.w, "turn %d: cut at the output cap (finish_reason length)\n", v.turn)
		}
		for _, c := range e.ToolCalls {
			fmt.Fprintf(v.w, "turn %d: → %s %s\n", v.turn, c.Name, clip(string(c.Args), 120))
		}
	case session.KindModelCall:
		v.tokens += e.InputTokens + e.OutputTokens
		v.cost += e.CostUSD
		fmt.Fprintf(v.w, "        model %s: %d in / %d out (total %d tokens, $%.4f)\n", e.Model, e.InputTokens, e.OutputTokens, v.tokens, v.cost)
		if e.Error != "" {
			fmt.Fprintf(v.w, "        model call failed: %s\n", clip(e.Error, 200))
		}
	case session.KindToolResult:
		v.toolRuns++
		fmt.Fprintf(v.w, "        %s\n", describe(e))
	case session.KindApprovalRequest, session.KindApprovalGranted, session.KindApprovalDenied,
		session.KindCompaction, session.KindBudgetExceeded, session.KindEvaluation, session.KindReconciled,
		session.KindInterrupted, session.KindError, session.KindModelChanged, session.KindBudgetChanged:
		fmt.Fprintf(v.w, "%s: %s\n", strings.ReplaceAll(string(e.Kind), "_", " "), describe(e))
	case session.KindSessionFinished:
		fmt.Fprintf(v.w, "finished: %s\n", describe(e))
	}
}
