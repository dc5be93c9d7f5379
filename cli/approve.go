package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner"
	"github.com/agentctl/agentctl/session"
)

type decideOptions struct {
	Session string
	Call    string
	Scope   string
	Reason  string
	JSON    bool
	Approve bool
}

func newApproveCmd(f *Factory, runF func(*decideOptions) error) *cobra.Command {
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
				return runF(opts)
			}
			return decideRun(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Scope, "scope", runner.ScopeOnce, "once (this call) or session (this tool for the rest of the session)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the recorded decision as JSON")
	return cmd
}

func newDenyCmd(f *Factory, runF func(*decideOptions) error) *cobra.Command {
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
				return runF(opts)
			}
			return decideRun(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why; shown to the model")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the recorded decision as JSON")
	return cmd
}

// pendingApprovals lists approval requests with no decision yet.
func pendingApprovals(evs []session.Event) []session.Event {
	decided := map[string]bool{}
	for _, e := range evs {
		if e.Kind == session.KindApprovalGranted || e.Kind == session.KindApprovalDenied {
			decided[e.CallID] = true
		}
	}
	var out []session.Event
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Kind == session.KindApprovalRequest && !decided[e.CallID] && !seen[e.CallID] {
			seen[e.CallID] = true
			out = append(out, e)
		}
	}
	return out
}

func decideRun(f *Factory, opts *decideOptions) error {
	if opts.Approve && opts.Scope != runner.ScopeOnce && opts.Scope != runner.ScopeSession {
		return usageError{fmt.Errorf("--scope %q: use once or session", opts.Scope)}
	}
	st := f.Store()
	id, err := st.Resolve(opts.Session)
	if err != nil {
		return err
	}
	sess, _, err := st.Open(id, recorder.Options{})
	if err != nil {
		return err
	}
	defer sess.Close()
	evs, _, err := st.Load(id)
	if err != nil {
		return err
	}
	pending := pendingApprovals(evs)
	var target *session.Event
	switch {
	case len(pending) == 0:
		return fmt.Errorf("session %s has no call waiting for approval", id)
	case opts.Call == "" && len(pending) > 1:
		var ids []string
		for _, p := range pending {
			ids = append(ids, fmt.Sprintf("%s (%s)", p.CallID, p.Tool))
		}
		return usageError{fmt.Errorf("session %s has %d calls waiting: %s; name one", id, len(pending), strings.Join(ids, ", "))}
	case opts.Call == "":
		target = &pending[0]
	default:
		for i := range pending {
			if pending[i].CallID == opts.Call {
				target = &pending[i]
			}
		}
		if target == nil {
			return fmt.Errorf("session %s: call %q is not waiting for approval", id, opts.Call)
		}
	}
	ev := session.Event{Kind: session.KindApprovalDenied, CallID: target.CallID, Tool: target.Tool, Reason: opts.Reason}
	verb := "denied"
	if opts.Approve {
		ev = session.Event{Kind: session.KindApprovalGranted, CallID: target.CallID, Tool: target.Tool, Scope: opts.Scope}
		verb = "approved"
	}
	out, err := sess.Append(ev)
	if err != nil {
		return err
	}
	if opts.JSON {
		b, _ := session.Encode(out[0])
		fmt.Fprintln(f.Out, string(b))
		return nil
	}
	args, _ := json.Marshal(target.Args)
	fmt.Fprintf(f.Out, "%s %s(%s) [%s] in session %s\n  next: agentctl resume %s\n", verb, target.Tool, clip(string(args), 80), target.CallID, id, id)
	return nil
}
