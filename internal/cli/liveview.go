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
		v.printf("session %s: %s on %s", e.SessionID, e.Name, session.ModelName(e.Provider, e.Model))
	case session.KindUserMessage:
		v.printf("user: %s", excerpt(e.Text, 200))
	case session.KindAssistantMessage:
		v.turn++
		if e.Text != "" && !v.tty {
			v.printf("turn %d: %s", v.turn, excerpt(e.Text, 200))
		}
		if e.Refusal != "" {
			v.printf("turn %d: refused: %s", v.turn, excerpt(e.Refusal, 200))
		}
		if e.FinishReason == "length" {
			v.printf("turn %d: cut at the output cap (finish_reason length)", v.turn)
		}
		for _, c := range e.ToolCalls {
			v.printf("turn %d: → %s %s", v.turn, c.Name, excerpt(string(c.Args), 120))
		}
	case session.KindModelCall:
		v.tokens += e.InputTokens + e.OutputTokens
		v.cost += e.CostUSD
		model := e.Model
		if model == "" {
			model = "(not recorded)"
		}
		v.printf("        model %s: %d in / %d out (total %d tokens, $%.4f)", model, e.InputTokens, e.OutputTokens, v.tokens, v.cost)
		if e.Error != "" {
			v.printf("        model call failed: %s", excerpt(e.Error, 200))
		}
	case session.KindToolResult:
		v.toolRuns++
		v.printf("        %s", describe(e))
	case session.KindApprovalRequest, session.KindApprovalGranted, session.KindApprovalDenied,
		session.KindCompaction, session.KindBudgetExceeded, session.KindEvaluation, session.KindReconciled,
		session.KindInterrupted, session.KindError, session.KindModelChanged, session.KindBudgetChanged:
		v.printf("%s: %s", strings.ReplaceAll(string(e.Kind), "_", " "), describe(e))
	case session.KindSessionFinished:
		v.printf("finished: %s", describe(e))
	}
}

// printf prints one line of the view: what it quotes of a session (a tool
// name, a model's text, an error) can neither break it nor start a line of
// a CI log (see termsafe.Line).
func (v *liveView) printf(format string, args ...any) {
	fmt.Fprintln(v.w, termsafe.Line(fmt.Sprintf(format, args...)))
}
