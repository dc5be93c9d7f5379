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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
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
	err := root.ExecuteContext(ctx)
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
			fmt.Fprintln(s.Err, "Run 'agentctl --help' for usage.")
		}
	}
	return codeOf(err)
}
