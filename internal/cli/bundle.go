package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder/otlp"
)

type bundleOptions struct {
	Session      string
	Output       string
	WithChildren bool
	JSON         bool
	Workspace    string
}

// bundleResult is what `agentctl bundle` and `bundle open` report; its JSON
// form only grows.
type bundleResult struct {
	Path      string          `json:"path"`
	SessionID string          `json:"session_id"`
	Children  []string        `json:"children,omitempty"`
	Bytes     int64           `json:"bytes,omitempty"`
	Members   []bundle.Member `json:"members"`
}

func newBundleCmd(f *Factory, runF func(context.Context, *bundleOptions) error, openRunF func(context.Context, *bundleOpenOptions) error) *cobra.Command {
	opts := &bundleOptions{}
	cmd := &cobra.Command{
		Use:   "bundle SESSION",
		Short: "Pack a session into a debug bundle (.tar.zst)",
		Long: `Pack one session into <session>.tar.zst: a debug bundle that explains a
run without running it again. Members: events.parquet (the history's
schema), events.jsonl, checkpoints.jsonl, last_state.json (the state folded
from the whole log), trace.json (OTLP/JSON), tool_calls.csv (ts, tool,
input_hash, latency_ms, status, error, call_id, intent_seq, result_seq),
env.txt (agentctl version and commit, pinned model, spec hash, OS),
workspace.tar.zst, workspace.diff (git workspaces: the diff against the
run's initializer commit), progress/ (PROGRESS.md, feature lists),
artifacts/, and a MANIFEST with the size and sha256 of every member.

The bundle is written through a temporary file and renamed into place;
memory stays bounded whatever the workspace's size. Values of the
workspace's .env files and token formats are redacted in what was not
already redacted when it was recorded.

Read it with 'agentctl bundle open', 'agentctl query --bundle',
'agentctl diagnose --bundle', or plain 'tar --zstd -xf'.`,
		Example: `  agentctl bundle 3f2a
  agentctl bundle 3f2a -o /tmp/failed-run.tar.zst --with-children
  agentctl bundle open 3f2a.tar.zst -o 3f2a/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Session = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return bundleRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "bundle file to write (default <session>.tar.zst)")
	cmd.Flags().BoolVar(&opts.WithChildren, "with-children", false, "include subagent and forked sessions")
	cmd.Flags().StringVar(&opts.Workspace, "workspace", "", "the session's workspace `DIR` when it is not the session's own folder (a spec's workspace.path); a folder named only by the log is never archived")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	cmd.AddCommand(newBundleOpenCmd(f, openRunF))
	return cmd
}

func bundleRun(ctx context.Context, f *Factory, opts *bundleOptions) error {
	st := f.Store()
	id, err := st.Resolve(opts.Session)
	if err != nil {
		return err
	}
	out := opts.Output
	if out == "" {
		out = id + ".tar.zst"
	}
	cfg, err := otlp.ConfigFromEnv(os.Getenv)
	if err != nil {
		return usageError{err}
	}
	// The live heap while bundling is mostly the workspace encoders' fixed
	// buffers (about 10 MB with two); collecting at +25% instead of +100%
	// keeps peak memory near it (at +100% the peak anonymous memory on the
	// 200 MB benchmark was 38 MB instead of 25) for about 25 collections
	// of a mostly pointer-free heap, a few ms.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	// A long session's bundle holds events.parquet's row group (~30 MB
	// live at 1M events) or the lean fold of its calls (~30 MB at
	// 238,095); a soft limit of 48 MiB keeps garbage from adding its 25%
	// on top (peak RSS 152 -> 145 MB there, the same 36-38 s). Past the
	// limit (a fold of millions of calls) the runtime caps the collector
	// at half the CPU: slower, never stopped. GOMEMLIMIT, when set, rules.
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(48 << 20))
	}
	m, size, err := bundle.WriteFile(ctx, out, st, id, bundle.Options{WithChildren: opts.WithChildren, Trace: cfg.WriteSessionJSON, Warn: f.Err, Workspace: opts.Workspace})
	if err != nil {
		return err
	}
	res := bundleResult{Path: out, SessionID: id, Children: m.Children, Bytes: size, Members: m.Members}
	return writeBundleResult(f, res, opts.JSON, "wrote")
}

func writeBundleResult(f *Factory, res bundleResult, asJSON bool, verb string) error {
	if asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f.Out, string(b))
		return err
	}
	var total int64
	for _, m := range res.Members {
		total += m.Size
	}
	size := ""
	if res.Bytes > 0 {
		size = fmt.Sprintf(", %s compressed", humanBytes(res.Bytes))
	}
	fmt.Fprintf(f.Out, "%s %s: session %s, %d members, %s%s\n", verb, res.Path, res.SessionID, len(res.Members)+1, humanBytes(total), size)
	if len(res.Children) > 0 {
		fmt.Fprintf(f.Out, "  children: %s\n", strings.Join(res.Children, ", "))
	}
	for _, m := range res.Members {
		fmt.Fprintf(f.Out, "  %-28s %10d  sha256:%s\n", m.Name, m.Size, m.SHA256[:16])
	}
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

type bundleOpenOptions struct {
	File      string
	Output    string
	MaxMember int64
	MaxRatio  int64
	JSON      bool
}

func newBundleOpenCmd(f *Factory, runF func(context.Context, *bundleOpenOptions) error) *cobra.Command {
	opts := &bundleOpenOptions{}
	cmd := &cobra.Command{
		Use:   "open FILE",
		Short: "Verify a bundle's MANIFEST and unpack it safely",
		Long: `Unpack a debug bundle into a folder (default: the file's name without
.tar.zst), checking every member's size and sha256 against the MANIFEST.
A bundle is treated as hostile: a member whose path would escape the folder,
a link, a device or fifo, a member over --max-member, or a mismatch with the
MANIFEST is refused, and nothing is left behind. The zstd decoder's memory
is capped at 64 MiB, and past the first 64 MiB the bundle may inflate to at
most --max-ratio times the compressed bytes read so far, so a zstd bomb is
refused after a fraction of a second. workspace.tar.zst is left packed.

Exit status: 0 unpacked and verified, 1 refused or an error.`,
		Example: `  agentctl bundle open 3f2a.tar.zst
  agentctl bundle open 3f2a.tar.zst -o /tmp/3f2a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return bundleOpenRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "folder to unpack into (must not exist or be empty)")
	cmd.Flags().Int64Var(&opts.MaxMember, "max-member", bundle.DefaultMaxMember, "refuse members larger than this many bytes")
	cmd.Flags().Int64Var(&opts.MaxRatio, "max-ratio", bundle.DefaultMaxRatio, "refuse a bundle that inflates to more than this many times its compressed size (past 64 MiB)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	return cmd
}

func bundleOpenRun(ctx context.Context, f *Factory, opts *bundleOpenOptions) error {
	out := opts.Output
	if out == "" {
		out = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(opts.File), ".zst"), ".tar")
		if out == filepath.Base(opts.File) {
			out += ".d"
		}
	}
	r, err := os.Open(opts.File)
	if err != nil {
		return fmt.Errorf("bundle open: %w", err)
	}
	defer r.Close()
	m, err := bundle.Extract(ctx, r, out, bundle.ExtractOptions{MaxMember: opts.MaxMember, MaxRatio: opts.MaxRatio})
	if err != nil {
		return fmt.Errorf("bundle open %s: %w", opts.File, err)
	}
	return writeBundleResult(f, bundleResult{Path: out, SessionID: m.SessionID, Children: m.Children, Members: m.Members}, opts.JSON, "verified and unpacked into")
}

// openQueryDB opens the query database over the home, or over one bundle.
func openQueryDB(ctx context.Context, f *Factory, bundlePath string) (*query.DB, func(), error) {
	if bundlePath == "" {
		db, err := query.OpenStore(ctx, f.Store(), f.Err)
		if err != nil {
			return nil, nil, err
		}
		return db, func() { db.Close() }, nil
	}
	home, _, cleanup, err := bundle.OpenHistory(ctx, bundlePath)
	if err != nil {
		return nil, nil, err
	}
	db, err := query.Open(ctx, home, f.Err)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return db, func() { db.Close(); cleanup() }, nil
}
