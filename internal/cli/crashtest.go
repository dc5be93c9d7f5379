package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/internal/agent"
	"github.com/agentctl/agentctl/internal/crashtest"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/spec"
)

type crashtestOptions struct {
	Spec         string
	Points       string
	JSON         bool
	Parallel     int
	CrashResumes int
	Seed         uint64
	Fsync        bool
	InProcess    bool
}

func newCrashtestCmd(f *Factory, runF func(context.Context, *crashtestOptions) error) *cobra.Command {
	opts := &crashtestOptions{}
	cmd := &cobra.Command{
		Use:   "crashtest SPEC.yaml",
		Short: "Kill a run at every event boundary, resume it, check nothing changed",
		Long: `Run the scenario once uncrashed, then once per crash point in a child process
killed with SIGKILL at that point (after each event is durable, and inside each
side-effecting tool call after its effect but before its result is recorded),
resume it to the end, and check:

  - the final status and the workspace match the uncrashed run (or the run
    stopped with needs_human for a side effect it could not check);
  - every side effect happened exactly once (tool ledgers and files);
  - no acknowledged event was lost or changed;
  - every intent has exactly one result, or a needs_human.

Prints a matrix and exits 6 on any violation. The runs use a failpoint named
by the AGENTCTL_FAILPOINT environment variable: the binary tested is the
binary that ships.`,
		Example: "  agentctl crashtest fixtures/agents/charge-order.yaml\n  agentctl crashtest spec.yaml --points 5,in-tool:7 --crash-resumes 2 --parallel 2 --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Spec = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return crashtestRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Points, "points", "all", "crash points: all, or a list of N, after:N, in-tool:N")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	cmd.Flags().IntVar(&opts.Parallel, "parallel", runtime.NumCPU(), "points run at once, each in a home of its own (one per CPU unless set)")
	cmd.Flags().IntVar(&opts.CrashResumes, "crash-resumes", 0, "also kill each resume at a random later event, this many times")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 0, "seed for --crash-resumes (default: from the clock; printed)")
	cmd.Flags().BoolVar(&opts.InProcess, "in-process", false, "crash runs inside this process (a panic at the failpoint) instead of SIGKILLed children: faster, less real")
	cmd.Flags().BoolVar(&opts.Fsync, "fsync", false, "keep fsync in the crashed runs (slower; a SIGKILL loses no written data, so it is off by default)")
	return cmd
}

// selfExe finds the agentctl binary to run children with: argv[0] as the
// user ran it (so a test harness's command name works too).
func selfExe() (string, error) {
	if p := os.Getenv("AGENTCTL_SELF"); p != "" {
		return p, nil
	}
	if strings.ContainsRune(os.Args[0], filepath.Separator) {
		return filepath.Abs(os.Args[0])
	}
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		return p, nil
	}
	return os.Executable()
}

func crashtestRun(ctx context.Context, f *Factory, opts *crashtestOptions) error {
	points, err := crashtest.ParsePoints(opts.Points)
	if err != nil {
		return usageError{err}
	}
	if _, err := specFromArg(opts.Spec); err != nil {
		return err
	}
	spec, _ := filepath.Abs(opts.Spec)
	exe, err := selfExe()
	if err != nil {
		return fmt.Errorf("find the agentctl binary: %w", err)
	}
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	o := crashtest.Options{Exe: exe, Spec: spec, Points: points, Parallel: opts.Parallel, CrashResumes: opts.CrashResumes, Seed: seed, Fsync: opts.Fsync,
		InProcess: opts.InProcess, Build: buildRunConfig}
	var bar *progressbar.ProgressBar
	if file, ok := f.Err.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
		o.Progress = func(done, total int) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(f.Err), progressbar.OptionSetDescription("crash points"),
					progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
			}
			bar.Set(done)
		}
	} else if !opts.JSON {
		o.Progress = func(done, total int) {
			if done == total || done%10 == 0 {
				fmt.Fprintf(f.Err, "crashtest: %d/%d points\n", done, total)
			}
		}
	}
	rep, err := crashtest.Run(ctx, o)
	if err != nil {
		return fmt.Errorf("crashtest %s: %w", opts.Spec, err)
	}
	if opts.JSON {
		if err := json.NewEncoder(f.Out).Encode(rep); err != nil {
			return err
		}
	} else {
		writeCrashMatrix(f, rep)
	}
	if rep.Violations > 0 {
		return withCode(ExitChecksFailed, nil)
	}
	return nil
}

func writeCrashMatrix(f *Factory, rep crashtest.Report) {
	fmt.Fprintf(f.Out, "uncrashed run: %s, %d events; seed %d\n", rep.Baseline.Status, rep.Baseline.Events, rep.Seed)
	tw := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POINT\tSTATUS\tOUTCOME\tDUPLICATES\tLOST\tRESUMES\tPROBLEMS")
	for _, o := range rep.Outcomes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", o.Point, o.Status, o.Outcome, o.Duplicates, o.Lost, o.Resumes, strings.Join(o.Problems, "; "))
	}
	tw.Flush()
	n := len(rep.Outcomes)
	fmt.Fprintf(f.Out, "%d points, %d violations, %.1fs (%.0f ms a point)\n", n, rep.Violations, float64(rep.Millis)/1000, float64(rep.Millis)/float64(max(n, 1)))
}

// buildRunConfig is the in-process crash test's way to get a runner config
// for a spec, the same way `run` builds one.
func buildRunConfig(path string) (runner.Config, error) {
	sp, err := spec.Load(path)
	if err != nil {
		return runner.Config{}, err
	}
	return agent.Config(sp, "") // the in-process test knows no home; the sandbox still hides the credential folders
}
