package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type showOptions struct {
	Session string
	JSON    bool
	Tree    bool
	Follow  bool
}

func newShowCmd(f *Factory, runF func(context.Context, *showOptions) error) *cobra.Command {
	opts := &showOptions{}
	cmd := &cobra.Command{
		Use:   "show SESSION",
		Short: "Show a session's events as a timeline",
		Long: `Show every event of a session as a readable timeline, or with --json one
event per line exactly as recorded (the same snake_case fields as the log
and Parquet). SESSION is an id or an unambiguous prefix of one.

A log whose tail was torn by a crash is shown up to the last whole event,
with a warning; a log corrupted before its tail is shown up to the damage
and the command fails naming the offset. A log that lost events the
history sealed (they were durable: restored from an old backup, cut by
a copy) is shown whole: the events it lost come from the sealed copy,
with a warning naming the log, what it lost and the file they came from.

With --tree, show the session with its subagents (sessions its task calls
started), forks and replays (proxy --replay, replay run --keep of an
external agent's session), and theirs, one line each: id, how it hangs off
its parent, name, status and totals; --json prints the tree as one object.

With --follow, keep printing events as they are appended, as tail -f
does, until the session ends: its session_finished, or no process writes
it any more (a run that died; a production session 'agentctl collect'
closed, or collect stopping), or Ctrl-C. Following costs what is
appended, whatever the log's length.`,
		Example: "  agentctl show 3f2a\n  agentctl show 3f2a --json | jq -c 'select(.kind==\"tool_result\")'\n  agentctl show 3f2a --tree\n  agentctl show 3f2a --follow",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if opts.Follow && opts.Tree {
				return usageError{errors.New("--follow and --tree do not go together: --tree lists a session's family, --follow prints one session's events as they come")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if opts.Follow {
				return showFollowRun(cmd.Context(), f, opts)
			}
			return showRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON event per line")
	cmd.Flags().BoolVar(&opts.Tree, "tree", false, "show the session with its subagents and forks instead of its events")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "then print each event as it is appended, until the session ends or no process writes it")
	return cmd
}

// loadSession resolves ref and reads its log. A torn tail is a warning on
// stderr; mid-log corruption returns the events before it and the error.
func loadSession(f *Factory, ref string) (string, []session.Event, error) {
	st := f.Store()
	id, err := st.Resolve(ref)
	if err != nil {
		return "", nil, err
	}
	evs, tail, err := st.Load(id)
	if tail.Torn {
		fmt.Fprintf(f.Err, "warning: session %s: log has a torn tail (%d bytes after the last whole event, from a crash mid-write); 'agentctl resume' cuts it\n",
			id, tail.FileSize-tail.GoodSize)
	}
	return id, evs, err
}

func showRun(f *Factory, opts *showOptions) error {
	if opts.Tree {
		return showTreeRun(f, opts)
	}
	st := f.Store()
	id, err := st.Resolve(opts.Session)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f.Out)
	emit := func(e session.Event) error {
		if !opts.JSON {
			writeTimelineLine(w, e)
			return nil
		}
		b, err := session.Encode(e)
		if err != nil {
			return err
		}
		w.Write(b)
		return w.WriteByte('\n')
	}
	// The log is read a record at a time and each event printed as it
	// comes, so showing a session of a million events holds one.
	var last session.Event
	var emitErr error
	_, tail, loadErr := st.Stream(id, func(e session.Event) {
		last = e
		if emitErr == nil {
			emitErr = emit(e)
		}
	})
	if emitErr != nil {
		return emitErr
	}
	var short *recorder.ShortLogError
	if errors.As(loadErr, &short) {
		if err := showSealedRest(f, id, short, last, emit); err != nil {
			fmt.Fprintf(f.Err, "warning: session %s: no sealed copy to show the rest from: %v\n", id, err)
		} else {
			loadErr = nil
		}
	} else if tail.Torn {
		fmt.Fprintf(f.Err, "warning: session %s: log has a torn tail (%d bytes after the last whole event, from a crash mid-write); 'agentctl resume' cuts it\n",
			id, tail.FileSize-tail.GoodSize)
	}
	if !opts.JSON {
		// The session's conversation is the thread that came first: when
		// that was a client's title call, the agent's is a side thread,
		// which the reader must be told of.
		if sides := sideThreads(st, id); len(sides) > 0 {
			fmt.Fprintf(w, "side threads (calls of the same client sharing nothing with this conversation): %s\n", termsafe.Line(strings.Join(sides, ", ")))
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return loadErr
}

// sideThreads lists the side threads of session id whose headers say
// they are (session.SideThreadID, in order; at most 100 looked for).
func sideThreads(st recorder.Store, id string) []string {
	var out []string
	for n := 1; n <= 100; n++ {
		sid := session.SideThreadID(id, n)
		h, err := st.Header(sid)
		if err != nil {
			break
		}
		if of, k := session.SideThreadOf(h); of != id || k != n {
			break
		}
		out = append(out, sid)
	}
	return out
}

// showSealedRest prints, after the events a damaged log still holds
// (through last), the ones it lost from the copy the history sealed of
// the session (history.SealedEvents), and warns naming the damage. It
// uses the copy only if that copy's event at last's seq is last (kind and
// time), so it cannot splice another run's events onto the log, and
// prints none of it when the copy fails its checks.
func showSealedRest(f *Factory, id string, short *recorder.ShortLogError, last session.Event, emit func(session.Event) error) error {
	h := history.New(f.Home)
	shown := 0
	first := true
	entry, file, err := h.SealedEvents(id, last.Seq, func(e session.Event) error {
		if first {
			first = false
			if e.Kind != last.Kind || !e.TS.Equal(last.TS.UTC().Truncate(time.Microsecond)) {
				return fmt.Errorf("its event at seq %d is a %s at %s, the log's a %s at %s: it is not a copy of this log",
					e.Seq, e.Kind, e.TS.Format(time.RFC3339Nano), last.Kind, last.TS.Format(time.RFC3339Nano))
			}
			return nil
		}
		shown++
		return emit(e)
	})
	if err != nil {
		return err
	}
	if shown == 0 {
		return fmt.Errorf("%s holds nothing after seq %d", file, last.Seq)
	}
	lost := fmt.Sprintf("seq %d", last.Seq+1)
	if entry.LastSeq > last.Seq+1 {
		lost = fmt.Sprintf("seqs %d..%d", last.Seq+1, entry.LastSeq)
	}
	fmt.Fprintf(f.Err, "warning: session %s: its log %s is damaged: it ends at seq %d (%d bytes) and lost %d event(s) that were durable (%s); %s shown from the sealed copy %s (times to the microsecond). Restore the log from a backup or a bundle made before the damage\n",
		id, short.Path, last.Seq, short.Size, entry.LastSeq-last.Seq, short.Witness.By, lost, file)
	return nil
}

// showFollowRun prints the session's events and then each appended one
// as it comes (recorder.Store.Follow), a line at a time, flushed.
func showFollowRun(ctx context.Context, f *Factory, opts *showOptions) error {
	st := f.Store()
	id, err := st.Resolve(opts.Session)
	if err != nil {
		return err
	}
	err = st.Follow(ctx, id, func(e session.Event) error {
		if !opts.JSON {
			writeTimelineLine(f.Out, e)
			return nil
		}
		b, err := session.Encode(e)
		if err != nil {
			return err
		}
		_, err = f.Out.Write(append(b, '\n'))
		return err
	})
	if errors.Is(err, context.Canceled) {
		return nil // Ctrl-C: the reader stopped following
	}
	return err
}

// writeTimelineLine prints one event as "seq  time  kind  details".
func writeTimelineLine(w io.Writer, e session.Event) {
	fmt.Fprintf(w, "%5d  %s  %-17s %s\n", e.Seq, e.TS.Local().Format("15:04:05.000"), termsafe.Line(string(e.Kind)), termsafe.Line(describe(e)))
}

// describe is the human summary of one event: what a reader needs to follow
// the run without the raw fields.
func describe(e session.Event) string {
	switch e.Kind {
	case session.KindSessionStarted:
		s := fmt.Sprintf("%s on %s", orDash(e.Name), session.ModelName(e.Provider, e.Model))
		of, n := session.SideThreadOf(e)
		switch {
		case of != "":
			s += fmt.Sprintf(" (side thread %d of %s: a call of its client that shares nothing with its conversation, not a compaction of it)", n, of)
		case e.ParentSessionID != "" && e.ForkedFrom > 0:
			s += fmt.Sprintf(" (forked from %s at seq %d)", e.ParentSessionID, e.ForkedFrom)
		case e.ParentSessionID != "" && e.ParentSeq > 0:
			s += fmt.Sprintf(" (a subagent of %s, task call at seq %d)", e.ParentSessionID, e.ParentSeq)
		case e.ParentSessionID != "" && session.ReplayOf(e) != "":
			s += fmt.Sprintf(" (a replay of %s)", session.ReplayOf(e))
		case e.ParentSessionID != "":
			s += fmt.Sprintf(" (a sub-agent of %s)", e.ParentSessionID)
		}
		if from := session.ImportedFrom(e); from != "" {
			s += " (imported from " + from
			if st := session.Fold([]session.Event{e}).SourceStatus; st != "" {
				s += ", source end state " + st
			}
			s += ")"
		}
		var who []string
		if u := session.HeaderUserID(e); u != "" {
			who = append(who, "user "+u)
		}
		if tags := session.HeaderTags(e); len(tags) > 0 {
			kv := make([]string, 0, len(tags))
			for _, k := range slices.Sorted(maps.Keys(tags)) {
				kv = append(kv, k+"="+tags[k])
			}
			who = append(who, "tags "+strings.Join(kv, ", "))
		}
		if len(who) > 0 {
			s += " (" + strings.Join(who, "; ") + ")"
		}
		return s
	case session.KindUserMessage:
		return quote(e.Text, 100)
	case session.KindAssistantMessage, session.KindInterrupted:
		parts := []string{}
		if e.Refusal != "" {
			parts = append(parts, "refused: "+quote(e.Refusal, 80))
		}
		if e.Text != "" {
			parts = append(parts, quote(e.Text, 80))
		}
		if e.FinishReason == "length" {
			parts = append(parts, "(cut at the output cap: finish_reason length)")
		} else if e.FinishReason != "" {
			parts = append(parts, "(finish_reason "+e.FinishReason+")")
		}
		for _, c := range e.ToolCalls {
			parts = append(parts, fmt.Sprintf("→ %s(%s) [%s]", c.Name, excerpt(string(c.Args), 60), c.ID))
		}
		if e.Kind == session.KindInterrupted && e.Reason != "" {
			parts = append(parts, "("+e.Reason+")")
		}
		return strings.Join(parts, " ")
	case session.KindModelCall:
		s := fmt.Sprintf("%s in=%d out=%d", session.ModelName(e.Provider, e.Model), e.InputTokens, e.OutputTokens)
		if e.CacheReadInputTokens+e.CacheCreationInputTokens > 0 {
			s += fmt.Sprintf(" (cache read %d, write %d)", e.CacheReadInputTokens, e.CacheCreationInputTokens)
		}
		if e.Attempt > 0 {
			s += fmt.Sprintf(" attempt %d", e.Attempt)
		}
		if e.CostUSD > 0 {
			s += fmt.Sprintf(" $%.4f", e.CostUSD)
		}
		if e.LatencyMS > 0 {
			s += fmt.Sprintf(" %dms", e.LatencyMS)
		}
		if e.FinishReason != "" {
			s += " " + e.FinishReason
		}
		if e.ErrorType != "" {
			s += " " + e.ErrorType
		}
		if e.Error != "" {
			s += " error: " + e.Error
		}
		if e.Text != "" {
			s += " after streaming " + quote(e.Text, 60)
		}
		return s
	case session.KindToolIntent:
		s := fmt.Sprintf("%s(%s) [%s]", e.Tool, excerpt(string(e.Args), 60), e.CallID)
		if e.IdempotencyKey != "" {
			s += " key=" + e.IdempotencyKey
		}
		return s
	case session.KindToolResult:
		s := fmt.Sprintf("%s [%s] %s", e.Tool, e.CallID, e.Status)
		if e.LatencyMS > 0 {
			s += fmt.Sprintf(" %dms", e.LatencyMS)
		}
		if e.Error != "" {
			s += ": " + excerpt(e.Error, 80)
		} else if e.Output != "" {
			s += ": " + quote(e.Output, 80)
		}
		if e.Artifact != "" {
			s += " (full output: " + e.Artifact + ")"
		}
		return s
	case session.KindApprovalRequest:
		return fmt.Sprintf("%s(%s) [%s] waits for approval", e.Tool, excerpt(string(e.Args), 60), e.CallID)
	case session.KindApprovalGranted:
		return fmt.Sprintf("[%s] granted, scope %s", e.CallID, orDash(e.Scope))
	case session.KindApprovalDenied:
		return fmt.Sprintf("[%s] denied %s", e.CallID, e.Reason)
	case session.KindCompaction:
		if from := session.SummaryFrom(e); from > 0 {
			return fmt.Sprintf("seqs %d..%d: %s", from, e.Through, quote(e.Summary, 80))
		}
		return fmt.Sprintf("through seq %d: %s", e.Through, quote(e.Summary, 80))
	case session.KindReconciled:
		return fmt.Sprintf("%s [%s] key=%s → %s %s", e.Tool, e.CallID, e.IdempotencyKey, e.Outcome, e.Reason)
	case session.KindBudgetExceeded, session.KindError:
		return strings.TrimSpace(e.Reason + " " + e.Error)
	case session.KindEvaluation:
		return fmt.Sprintf("%s %s", e.Outcome, excerpt(e.Evidence, 80))
	case session.KindSubagentStarted, session.KindSubagentFinished:
		if e.CallID != "" { // started by agentctl's task tool
			return subagentLine(e)
		}
		return fmt.Sprintf("child %s %s", e.ChildSessionID, excerpt(e.Output, 60))
	case session.KindModelChanged:
		return fmt.Sprintf("now %s %s", session.ModelName(e.Provider, e.Model), e.Reason)
	case session.KindSpecChanged:
		return fmt.Sprintf("now %s (%s) %s", e.SpecPath, e.SpecHash, e.Reason)
	case session.KindBudgetChanged:
		return fmt.Sprintf("now %s: %s", orDash(string(e.Attrs)), e.Reason)
	case session.KindSessionFinished:
		return strings.TrimSpace(e.Status + " " + e.Reason)
	}
	return fmt.Sprintf("(unknown kind, recorded by a newer agentctl) %s", excerpt(string(e.Raw), 100))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quote(s string, n int) string { return fmt.Sprintf("%q", excerpt(s, n)) }

// excerpt is s made safe for a terminal, on one line, cut to n
// characters.
func excerpt(s string, n int) string {
	return clip.Runes(termsafe.String(strings.Join(strings.Fields(s), " ")), n)
}
