// Package cli builds agentctl's command tree. Each command has an options
// struct, a constructor and a plain run function, so flag parsing and
// behaviour are tested separately; main only wires signals and exits.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/termsafe"
)

// Streams are the process's standard streams, injected for tests.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Factory carries what commands depend on. Costly pieces are functions so a
// command that does not need them never builds them.
type Factory struct {
	Streams
	// Home is the agentctl home (--home, $AGENTCTL_HOME, ./.agentctl).
	Home string
	// JSON is true when the invoked command was given --json; Main then
	// reports a fatal error as a JSON line on stderr.
	JSON bool
}

// Store opens the session store under the home. Its witnesses, the
// history's manifest and the checkpoints, make a log that lost durable
// events be refused rather than resumed (recorder.ShortLogError).
func (f *Factory) Store() recorder.Store {
	return recorder.Store{Root: f.Home, Witnesses: []recorder.Witness{
		history.Witness{Dir: filepath.Join(f.Home, history.Dir)},
		runner.CheckpointWitness{Home: f.Home},
	}}
}

// DefaultHome is where sessions live when neither --home nor
// $AGENTCTL_HOME says otherwise.
const DefaultHome = ".agentctl"

// NewRootCommand builds the command tree.
func NewRootCommand(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentctl",
		Short: "Run LLM agents in CI, record every event, replay and query them",
		Long: `agentctl runs agents while recording every event to an append-only
session log, replays recorded sessions offline and answers SQL questions
over run history. Sessions live under --home (default ./.agentctl).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if fl := cmd.Flags().Lookup("json"); fl != nil && fl.Value.String() == "true" {
				f.JSON = true
			}
			// Once, absolutely: paths derived from the home (a session's
			// workspace, above all) reach tools, which refuse relative ones,
			// and must not change meaning if anything changes directory.
			home, err := filepath.Abs(f.Home)
			if err != nil {
				return fmt.Errorf("--home %s: %w", f.Home, err)
			}
			f.Home = home
			return nil
		},
	}
	home := os.Getenv("AGENTCTL_HOME")
	if home == "" {
		home = DefaultHome
	}
	root.PersistentFlags().StringVar(&f.Home, "home", home, "agentctl home holding sessions and history (env AGENTCTL_HOME)")
	root.SetUsageTemplate(root.UsageTemplate() + "\n" + exitCodesHelp + "\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{suggestFlag(cmd, err)} })
	root.AddCommand(
		newVersionCmd(f, nil),
		newSessionsCmd(f, nil),
		newShowCmd(f, nil),
		newProjectCmd(f, nil),
		newRunCmd(f, nil),
		newResumeCmd(f, nil),
		newApproveCmd(f, nil),
		newDenyCmd(f, nil),
		newCrashtestCmd(f, nil),
		newResolveCmd(f, nil),
		newExportCmd(f, nil),
		newTraceCmd(f, nil),
		newSandboxCmd(f, nil),
		newQueryCmd(f, nil),
		newHistoryCmd(f),
		newReplayCmd(f),
		newImportCmd(f, nil),
		newEvalCmd(f, nil),
		newBundleCmd(f, nil, nil),
		newDiagnoseCmd(f, nil),
		newViewCmd(f, nil),
		newUICmd(f, nil),
		newMCPCmd(f, nil),
		newProxyCmd(f, nil),
		newCollectCmd(f, nil),
	)
	addRemoteSessionFlags(root, f)
	return root
}

// Main runs agentctl with args and returns the process exit code. Errors are
// printed here and only here.
func Main(ctx context.Context, args []string, s Streams) int {
	f := &Factory{Streams: s}
	root := NewRootCommand(f)
	root.SetArgs(args)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.Err == nil {
		return ee.Code
	}
	hint := corruptHint(err)
	if f.JSON {
		out := map[string]any{"error": err.Error(), "exit_code": codeOf(err)}
		if hint != "" {
			out["hint"] = hint
		}
		b, _ := json.Marshal(out)
		fmt.Fprintln(s.Err, string(b))
	} else {
		// An error may quote a session's or a report's strings.
		fmt.Fprintf(s.Err, "agentctl: %s\n", termsafe.String(err.Error()))
		if hint != "" {
			fmt.Fprintln(s.Err, termsafe.String(hint))
		}
		var ue usageError
		if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
			// The help of the command that was run (for an unknown
			// command, of the one it was looked up under).
			if cmd == nil {
				cmd = root
			}
			fmt.Fprintf(s.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
	}
	return codeOf(err)
}

// suggestFlag adds to pflag's "unknown flag: --NAME" the flag of cmd the
// user most likely meant, as cobra does for a misspelt command: a name
// within two edits, or one that NAME begins or ends.
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok || name == "" {
		return err
	}
	best, bestDist := "", 3
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		d := editDistance(name, fl.Name)
		if len(name) >= 3 && (strings.HasPrefix(fl.Name, name) || strings.HasPrefix(name, fl.Name)) {
			d = min(d, 2)
		}
		if d < bestDist || d == bestDist && best != "" && fl.Name < best {
			best, bestDist = fl.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w\nDid you mean --%s?", err, best)
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (flag names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
