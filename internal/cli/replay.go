package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

func newReplayCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Verify, re-run, fork, compare and check recorded sessions",
		Long: `A recorded session is a test case. 'replay verify' re-projects every turn
with today's code and compares it with the recorded request digests;
'replay run' re-executes a session offline (the recorded turns stand in for
the model, the tools run again in a fresh workspace); 'replay fork'
continues a session from an event against the pinned or another model;
'replay diff' compares two sessions turn by turn; 'replay anchors' checks
what compaction kept; 'replay import' (the older name of 'agentctl import')
brings in other tools' sessions.

Exit status: 0 ok, 1 error, 6 a check failed (divergence, differing tool
results, lost anchors).`,
	}
	cmd.AddCommand(newReplayVerifyCmd(f, nil), newReplayRunCmd(f, nil), newReplayForkCmd(f, nil),
		newReplayDiffCmd(f, nil), newReplayAnchorsCmd(f, nil), newImportCmd(f, nil))
	return cmd
}

type replayVerifyOptions struct {
	Sessions []string
	All      bool
	JSON     bool
}

func newReplayVerifyCmd(f *Factory, runF func(context.Context, *replayVerifyOptions) error) *cobra.Command {
	opts := &replayVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify [SESSION...]",
		Short: "Re-project every turn and compare with the recorded request digests",
		Long: `Fold each session's log once with today's projection and, before every
model call, compare the digest of the payload with the request_digest the
runner recorded. The first diverging turn is reported with a stable code
(request_digest_mismatch), both digests, and a diff of the two payloads:
which message, which field, "log has X, replay produced Y". The log keeps
digests, not payloads, so the log's side is rebuilt from the known earlier
projection rules; when none reproduces it, the messages new since the last
agreeing turn are listed. Compaction calls are recomputed from the
original events they summarised ('replay anchors' checks what they kept).
Imported sessions have no digests: only their structure is checked, and
verify says so.

Each log is verified as it is read, without holding its events; several
sessions are verified at once, one per CPU. With several sessions (or
--all), a summary table comes first. --json prints one object per session
per line.

Exit status: 0 every session ok or structure-only, 6 a divergence or a
structural problem, 1 an error (a log that cannot be read, corrupt
included, whatever the other sessions gave).`,
		Example: "  agentctl replay verify 3f2a\n  agentctl replay verify --all\n  agentctl replay verify --all --json | jq -c 'select(.status != \"ok\")'",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Sessions = args
			if len(args) == 0 && !opts.All {
				return usageError{fmt.Errorf("replay verify: name sessions or give --all")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return replayVerifyRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "verify every session under --home")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "one JSON object per session per line")
	return cmd
}

func replayVerifyRun(f *Factory, opts *replayVerifyOptions) error {
	st := f.Store()
	ids := opts.Sessions
	if opts.All {
		all, err := st.IDs()
		if err != nil {
			return err
		}
		ids = all
	} else {
		for i, ref := range ids {
			id, err := st.Resolve(ref)
			if err != nil {
				return err
			}
			ids[i] = id
		}
	}
	reps := verifyMany(st, ids)
	failed, unreadable := 0, 0
	var corrupt error
	for _, r := range reps {
		switch r.Status {
		case replaycheck.StatusDiverged, replaycheck.StatusBroken:
			failed++
		case replaycheck.StatusError:
			unreadable++ // a corrupt or unreadable log is an error, not a failed check
		}
		if corrupt == nil && errors.Is(r.Err, recorder.ErrCorrupt) {
			corrupt = r.Err
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(f.Out)
		for _, r := range reps {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	} else {
		writeVerify(termsafe.Writer(f.Out), reps)
	}
	if corrupt != nil {
		// The report says which log; the exit code and hint are the ones
		// every command gives for a corrupt log.
		fmt.Fprintln(f.Err, corruptHint(corrupt))
		return withCode(ExitCorruptLog, nil)
	}
	if unreadable > 0 {
		return withCode(ExitError, nil)
	}
	if failed > 0 {
		return withCode(ExitChecksFailed, nil)
	}
	return nil
}

// verifyMany verifies sessions in parallel (replaycheck.VerifyStore) and returns
// the reports in the order of ids.
//
// The fold allocates a copy of each turn's payload, which the GC reclaims
// at once; while it runs, the GC may let the heap grow to five times what
// is live (one or two logs in memory) instead of twice, which saves about
// a third of the CPU time of verifying a long log (bench/replay).
func verifyMany(st recorder.Store, ids []string) []replaycheck.Report {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	return replaycheck.VerifyStore(ids, st)
}

func writeVerify(w io.Writer, reps []replaycheck.Report) {
	if len(reps) == 1 {
		fmt.Fprint(w, reps[0].Text())
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATUS\tEVENTS\tCALLS\tCHECKED\tFIRST DIVERGENCE")
	counts := map[string]int{}
	var events int64
	for _, r := range reps {
		first := "-"
		if d := r.Divergence; d != nil {
			first = fmt.Sprintf("turn %d (seq %d) %s", d.Turn, d.Seq, d.Code)
			if d.Rule != "" {
				first += " rule " + d.Rule
			}
		} else if len(r.Problems) > 0 {
			first = fmt.Sprintf("seq %d %s", r.Problems[0].Seq, r.Problems[0].Code)
		} else if r.Error != "" {
			first = "error"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", termsafe.Line(r.SessionID), termsafe.Line(r.Status), r.Events, r.ModelCalls, r.Checked, termsafe.Line(first))
		counts[r.Status]++
		events += r.Events
	}
	tw.Flush()
	var parts []string
	for _, s := range []string{replaycheck.StatusOK, replaycheck.StatusStructureOnly, replaycheck.StatusDiverged, replaycheck.StatusBroken, replaycheck.StatusError} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	fmt.Fprintf(w, "%d sessions, %d events: %s\n", len(reps), events, strings.Join(parts, ", "))
	for _, r := range reps {
		if r.Status != replaycheck.StatusOK && r.Status != replaycheck.StatusStructureOnly {
			fmt.Fprint(w, "\n"+r.Text())
		}
	}
}

type replayAnchorsOptions struct {
	Session string
	Needles []string
	JSON    bool
}

func newReplayAnchorsCmd(f *Factory, runF func(context.Context, *replayAnchorsOptions) error) *cobra.Command {
	opts := &replayAnchorsOptions{}
	cmd := &cobra.Command{
		Use:   "anchors SESSION",
		Short: "Check that compaction kept the goal, the constraints and the originals",
		Long: `For every compaction of the session, check that the projection right
after it still holds the first user message verbatim and every --needle
(a constraint stated once, say), and that the summary was made from
original events: its source_seqs name user, assistant and tool events up to
its through, never an earlier compaction. One report per compaction; codes:
first_user_message_lost, needle_lost, summary_of_summary,
source_not_original, no_source_seqs.

Exit status: 0 every compaction passed (or there is none), 6 a check
failed, 1 an error.`,
		Example: `  agentctl replay anchors 3f2a --needle "never edit anything under vendor/"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return replayAnchorsRun(f, opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Needles, "needle", nil, "a string the projection must still hold after each compaction (repeatable)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as one JSON object")
	return cmd
}

func replayAnchorsRun(f *Factory, opts *replayAnchorsOptions) error {
	id, evs, err := loadSession(f, opts.Session)
	if err != nil {
		return err
	}
	rep := replaycheck.Anchors(id, evs, opts.Needles)
	if opts.JSON {
		if err := json.NewEncoder(f.Out).Encode(rep); err != nil {
			return err
		}
	} else {
		writeAnchors(f.Out, rep)
	}
	if !rep.OK {
		return withCode(ExitChecksFailed, nil)
	}
	return nil
}

func writeAnchors(w io.Writer, rep replaycheck.AnchorsReport) {
	fmt.Fprintf(w, "session %s: %d compaction(s)\n", rep.SessionID, len(rep.Compactions))
	for i, c := range rep.Compactions {
		verdict := "ok"
		if !c.OK {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "compaction %d (seq %d, through %d, %d sources): %s\n", i+1, c.Seq, c.Through, c.Sources, verdict)
		for _, n := range rep.Needles {
			if where := c.Found[n]; where != "" {
				fmt.Fprintf(w, "  needle %q: in %s\n", n, where)
			}
		}
		for _, x := range c.Findings {
			fmt.Fprintf(w, "  [%s] %s\n", x.Code, x.Detail)
		}
	}
	if len(rep.Compactions) == 0 {
		fmt.Fprintln(w, "no compaction: nothing to check")
	}
}

type replayDiffOptions struct {
	A, B string
	JSON bool
}

func newReplayDiffCmd(f *Factory, runF func(context.Context, *replayDiffOptions) error) *cobra.Command {
	opts := &replayDiffOptions{}
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two sessions turn by turn",
		Long: `Compare two sessions (a fork and its parent, a replay and its original)
turn by turn: the tools each turn called with their arguments, the results
(status and a short hash of the output), tokens and cost, then the final
status. Rows that differ are marked with '≠'.

Exit status: 0 the sessions agree, 6 they differ, 1 an error.`,
		Example: "  agentctl replay diff 3f2a 9c1b",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.A, opts.B = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return replayDiffRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the comparison as one JSON object")
	return cmd
}

func replayDiffRun(f *Factory, opts *replayDiffOptions) error {
	aID, a, err := loadSession(f, opts.A)
	if err != nil {
		return err
	}
	bID, b, err := loadSession(f, opts.B)
	if err != nil {
		return err
	}
	rep := replaycheck.Diff(aID, a, bID, b)
	if opts.JSON {
		if err := json.NewEncoder(f.Out).Encode(rep); err != nil {
			return err
		}
	} else {
		writeDiff(f.Out, rep)
	}
	if !rep.Same {
		return withCode(ExitChecksFailed, nil)
	}
	return nil
}

func writeDiff(w io.Writer, rep replaycheck.DiffReport) {
	fmt.Fprintf(w, "A %s %s %s: %d tool calls, %d tokens, $%.4f\n", rep.A.SessionID, session.ModelName(rep.A.Provider, rep.A.Model), rep.A.Status,
		rep.A.ToolCalls, rep.A.InputTokens+rep.A.OutputTokens, rep.A.CostUSD)
	fmt.Fprintf(w, "B %s %s %s: %d tool calls, %d tokens, $%.4f\n", rep.B.SessionID, session.ModelName(rep.B.Provider, rep.B.Model), rep.B.Status,
		rep.B.ToolCalls, rep.B.InputTokens+rep.B.OutputTokens, rep.B.CostUSD)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\t\tA CALLS → RESULTS\tA TOKENS\tB CALLS → RESULTS\tB TOKENS\tDIFFERS")
	side := func(t *replaycheck.Turn) (string, string) {
		if t == nil {
			return "(no turn)", "-"
		}
		var parts []string
		for i, c := range t.Calls {
			parts = append(parts, excerpt(c, 40)+" → "+t.Results[i])
		}
		if len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("text %q", excerpt(t.Text, 30)))
		}
		return strings.Join(parts, "; "), fmt.Sprintf("%d/%d", t.InputTokens, t.OutputTokens)
	}
	for _, r := range rep.Rows {
		mark := "="
		if len(r.Differ) > 0 {
			mark = "≠"
		}
		ac, at := side(r.A)
		bc, bt := side(r.B)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Turn, mark, ac, at, bc, bt, strings.Join(r.Differ, ","))
	}
	tw.Flush()
	switch {
	case rep.Same:
		fmt.Fprintln(w, "the sessions agree turn by turn and finished alike")
	case rep.FirstDiff > 0:
		fmt.Fprintf(w, "first difference at turn %d; status A %s, B %s\n", rep.FirstDiff, rep.A.Status, rep.B.Status)
	default:
		fmt.Fprintf(w, "the turns agree; status A %s, B %s\n", rep.A.Status, rep.B.Status)
	}
}
