package evals

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/termsafe"
)

// Why a scenario failed, as the Markdown summary tells it: under each
// failing scenario, its failed runs' failed assertions, each as the check
// the suite wrote (expected) and what the run found (got), and for a
// replay that diverged, the turn and the first differing text of both
// sides. The evidence is the agent's text (a file it wrote, a tool's
// output, a request it sent) and a pull request's page shows it, so it is
// written inside a fenced code block, where Markdown makes no HTML, link,
// heading or table of it; termsafe.Line puts it on one line with its
// control and bidi characters made visible, and every line of the block
// starts with a label, so no text can close the fence.

// Bounds of the why block: a scenario with many repeats or assertions
// still gives a short summary.
const (
	maxWhyRuns     = 3
	maxWhyFailures = 4
	// maxWhyText is the runes of evidence shown per line; maxDiffText the
	// runes of each side of a divergence, around its first difference.
	maxWhyText  = 240
	maxDiffText = 80
)

// Divergence is where a replay first departed from its recording.
type Divergence struct {
	// Turn is the model call (1-based) that diverged; Seq the recorded
	// model_call or tool result it was matched against (0: none).
	Turn int   `json:"turn"`
	Seq  int64 `json:"seq,omitempty"`
	// What says what differs, as the replay reported it.
	What string `json:"what"`
	// Log and Replay, when the replay gave both sides (a tool result),
	// are each side from a little before the first difference, clipped.
	Log    string `json:"log,omitempty"`
	Replay string `json:"replay,omitempty"`
}

// whyBlock writes the reasons of the failed runs of sc as a fenced block
// indented by indent (a list item's content).
func whyBlock(b *strings.Builder, sc ScenarioResult, indent string) {
	var lines, prev []string
	shown := 0
	failed := 0
	for _, r := range sc.Runs {
		if r.OK {
			continue
		}
		failed++
		if shown == maxWhyRuns {
			continue
		}
		shown++
		head := fmt.Sprintf("run #%d", r.Repeat)
		if r.SessionID != "" {
			head += " (session " + r.SessionID + ")"
		}
		if r.Status != "" {
			head += ", status " + r.Status
		}
		body := whyRun(r)
		if prev != nil && slices.Equal(body, prev) {
			lines = append(lines, inert(head, maxWhyText)+": as the run before")
			continue
		}
		prev = body
		lines = append(lines, inert(head, maxWhyText))
		lines = append(lines, body...)
	}
	if failed > shown {
		lines = append(lines, fmt.Sprintf("… and %d more failed runs", failed-shown))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s```text\n", indent)
	for _, l := range lines {
		fmt.Fprintf(b, "%s%s\n", indent, l)
	}
	fmt.Fprintf(b, "%s```\n", indent)
}

// whyRun is the lines that say why run r failed: each failed assertion,
// expected and got, and a divergence.
func whyRun(r RunResult) []string {
	var lines []string
	fs := r.Failures()
	if len(fs) == 0 && r.Error != "" {
		fs = []Result{{Kind: KindRun, Assertion: "run", Message: r.Error}}
	}
	for i, f := range fs {
		if i == maxWhyFailures {
			lines = append(lines, fmt.Sprintf("  … and %d more failed assertions", len(fs)-i))
			break
		}
		exp := f.Assertion
		if f.Line > 0 {
			exp += fmt.Sprintf("   (suite line %d)", f.Line)
		}
		lines = append(lines, "  expected: "+inert(exp, maxWhyText))
		lines = append(lines, "  got:      "+inert(f.Message, maxWhyText))
		if d := f.Divergence; d != nil {
			at := fmt.Sprintf("turn %d", d.Turn)
			if d.Seq > 0 {
				at += fmt.Sprintf(" (recorded seq %d)", d.Seq)
			}
			lines = append(lines, "  diverged: "+at, "  what:     "+inert(d.What, maxWhyText))
			if d.Log != "" || d.Replay != "" {
				lines = append(lines, "  - log:    "+inert(d.Log, maxDiffText+2), "  + replay: "+inert(d.Replay, maxDiffText+2))
			}
		}
	}
	return lines
}

// inert is s on one line, clipped to n runes, its control and bidi
// characters escaped visibly: text for a fenced block's line.
func inert(s string, n int) string {
	return termsafe.Line(clip.Runes(s, n))
}

// diffWindow returns each side from a little before their first
// difference, clipped: what a reader needs to see the change.
func diffWindow(a, b string, n int) (string, string) {
	ra, rb := []rune(a), []rune(b)
	i := 0
	for i < len(ra) && i < len(rb) && ra[i] == rb[i] {
		i++
	}
	start := max(0, i-n/4)
	side := func(r []rune) string {
		s := string(r[min(start, len(r)):])
		if start > 0 {
			s = "…" + s
		}
		return clip.Runes(s, n)
	}
	return side(ra), side(rb)
}
