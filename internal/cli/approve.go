package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/approval"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type decideOptions struct {
	Session string
	Call    string
	Scope   string
	Reason  string
	JSON    bool
	Approve bool
}

func newApproveCmd(f *Factory, runF func(context.Context, *decideOptions) error) *cobra.Command {
	opts := &decideOptions{Approve: true}
	cmd := &cobra.Command{
		Use:   "approve SESSION [CALL_ID]",
		Short: "Approve a tool call that waits for a human",
		Long: `Record an approval for a call the run stopped on. CALL_ID may be omitted
when exactly one call waits. --scope session also approves later calls of
the same tool in this session. Then 'agentctl resume SESSION' runs it.`,
		Example: "  agentctl approve 3f2a\n  agentctl approve 3f2a call_2_0 --scope session",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if len(args) > 1 {
				opts.Call = args[1]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return decideRun(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Scope, "scope", runner.ScopeOnce, "once (this call) or session (this tool for the rest of the session)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the recorded decision as JSON")
	return cmd
}

func newDenyCmd(f *Factory, runF func(context.Context, *decideOptions) error) *cobra.Command {
	opts := &decideOptions{}
	cmd := &cobra.Command{
		Use:   "deny SESSION [CALL_ID]",
		Short: "Deny a tool call that waits for a human; the model is told",
		Long: `Record a denial for a call the run stopped on. The call never runs; the
model receives {"error":"denied"} (with --reason, the reason too) when the
session resumes.`,
		Example: `  agentctl deny 3f2a --reason "never touch migrations on Fridays"`,
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if len(args) > 1 {
				opts.Call = args[1]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return decideRun(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why; shown to the model")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the recorded decision as JSON")
	return cmd
}

// openToDecide takes the session's lease (a human's decision is an append
// like any other, so a live run refuses it) and reads its events.
func openToDecide(f *Factory, ref string) (string, *recorder.Session, []session.Event, error) {
	st := f.Store()
	id, err := st.Resolve(ref)
	if err != nil {
		return "", nil, nil, err
	}
	sess, _, err := st.Open(id, recorder.Options{})
	if err != nil {
		return "", nil, nil, err
	}
	evs, _, err := st.Load(id)
	if err != nil {
		sess.Close()
		return "", nil, nil, err
	}
	return id, sess, evs, nil
}

func decideRun(f *Factory, opts *decideOptions) error {
	if opts.Approve && opts.Scope != runner.ScopeOnce && opts.Scope != runner.ScopeSession {
		return usageError{fmt.Errorf("--scope %q: use once or session", opts.Scope)}
	}
	d, verb := session.Decision{Verb: session.DecideDeny, Reason: opts.Reason}, "denied"
	if opts.Approve {
		d, verb = session.Decision{Verb: session.DecideApprove, Scope: opts.Scope}, "approved"
	}
	res, err := approval.Decide(f.Store(), opts.Session, opts.Call, d)
	var amb *approval.AmbiguousError
	if errors.As(err, &amb) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	out, target, id := []session.Event{res.Event}, res.Call, res.SessionID
	if opts.JSON {
		b, _ := session.Encode(out[0])
		fmt.Fprintln(f.Out, string(b))
		return nil
	}
	args, _ := json.Marshal(target.Args)
	fmt.Fprintf(f.Out, "%s %s(%s) [%s] in session %s\n  next: agentctl resume %s\n", verb, termsafe.Line(target.Tool), termsafe.Line(excerpt(string(args), 80)), termsafe.Line(target.ID), id, id)
	return nil
}

type resolveOptions struct {
	Session string
	Call    string
	Output  string
	NotDone bool
	JSON    bool
}

func newResolveCmd(f *Factory, runF func(context.Context, *resolveOptions) error) *cobra.Command {
	opts := &resolveOptions{}
	cmd := &cobra.Command{
		Use:   "resolve SESSION CALL_ID (--output TEXT | --not-done)",
		Short: "Record what a human found about a side effect that needed checking",
		Long: `A run stops with needs_human when a side-effecting call was in flight at a
crash and agentctl cannot tell whether it took effect (the tool is not
idempotent and has no lookup). Check by hand, then record what you found:

  --output TEXT   it took effect; TEXT is the result the model will read
  --not-done      it did not take effect; the model is told, and may retry

Then 'agentctl resume SESSION' goes on.`,
		Example: `  agentctl resolve 3f2a call_1_0 --output '{"sent":true}'
  agentctl resolve 3f2a call_1_0 --not-done`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session, opts.Call = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return resolveRun(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Output, "output", "", "the call took effect; this is its result")
	cmd.Flags().BoolVar(&opts.NotDone, "not-done", false, "the call did not take effect")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the recorded event as JSON")
	return cmd
}

func resolveRun(f *Factory, opts *resolveOptions) error {
	if (opts.Output == "") == !opts.NotDone {
		return usageError{fmt.Errorf("give exactly one of --output TEXT or --not-done")}
	}
	id, sess, evs, err := openToDecide(f, opts.Session)
	if err != nil {
		return err
	}
	defer sess.Close()
	fold := session.Fold(evs)
	d := session.Decision{Verb: session.DecideTookEffect, Output: opts.Output}
	if opts.NotDone {
		d = session.Decision{Verb: session.DecideNotDone}
	}
	ev, err := session.Decide(fold, opts.Call, d)
	if err != nil {
		return err
	}
	waiting := fold.Call(opts.Call)
	out, err := sess.Append(ev)
	if err != nil {
		return err
	}
	if opts.JSON {
		b, _ := session.Encode(out[0])
		fmt.Fprintln(f.Out, string(b))
		return nil
	}
	fmt.Fprintf(f.Out, "recorded %s for %s [%s] in session %s\n  next: agentctl resume %s\n", termsafe.Line(describe(out[0])), termsafe.Line(waiting.Tool), termsafe.Line(waiting.ID), id, id)
	return nil
}
