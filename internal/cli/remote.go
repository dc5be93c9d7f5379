package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/bundle"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/remote"
)

const remoteFlagHelp = "S3 remote `URL` (s3://bucket/prefix; endpoint from AWS_ENDPOINT_URL, credentials from the standard AWS variables and files)"

type historyPushOptions struct {
	Remote  string
	Bundles bool
	JSON    bool
}

func newHistoryPushCmd(f *Factory, runF func(context.Context, *historyPushOptions) error) *cobra.Command {
	opts := &historyPushOptions{}
	cmd := &cobra.Command{
		Use:   "push",
		Short: "Upload the sealed history, finished logs and bundles to S3",
		Long: `Upload to an S3-compatible bucket what this home has and the bucket lacks:
the rows of every sealed session (one Parquet object per date partition,
history/date=YYYY-MM-DD/push-<hash>.parquet), the log of every finished
session (sessions/<id>/events.log) and, with --bundles, its debug bundle
(bundles/<id>.tar.zst), and every eval report 'agentctl eval' sealed
(history/evals/date=YYYY-MM-DD/eval-<digest>.parquet: the eval_runs and
eval_results views). Objects are created with conditional PUTs and
never overwritten, so any number of machines may push to one bucket at
once; the home records what it pushed, so pushing again uploads nothing.

The remote is --remote, else $AGENTCTL_REMOTE. The endpoint of an
S3-compatible store is AWS_ENDPOINT_URL (path-style requests); credentials
come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the
shared files, as for the aws CLI.`,
		Example: `  agentctl history push --remote s3://ci-runs/agentctl
  AGENTCTL_REMOTE=s3://ci-runs/agentctl agentctl history push --bundles --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return historyPushRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Remote, "remote", "", remoteFlagHelp+" (env "+remote.Env+")")
	cmd.Flags().BoolVar(&opts.Bundles, "bundles", false, "also upload a debug bundle of each finished session")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcome as one JSON object")
	return cmd
}

func historyPushRun(ctx context.Context, f *Factory, opts *historyPushOptions) error {
	r, err := remote.Open(ctx, opts.Remote, f.Home, f.Err)
	if err != nil {
		return err
	}
	var po remote.PushOptions
	if opts.Bundles {
		cfg, err := otlp.ConfigFromEnv(os.Getenv)
		if err != nil {
			return usageError{err}
		}
		po.Bundle = func(ctx context.Context, id string, w io.Writer) error {
			tmp, err := os.MkdirTemp("", "agentctl-push-bundle-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			out := tmp + "/" + id + ".tar.zst"
			if _, _, err := bundle.WriteFile(ctx, out, f.Store(), id, bundle.Options{Trace: cfg.WriteSessionJSON, Warn: f.Err}); err != nil {
				return err
			}
			b, err := os.ReadFile(out)
			if err != nil {
				return err
			}
			_, err = w.Write(b)
			return err
		}
	}
	res, err := r.Push(ctx, po)
	if err != nil {
		return err
	}
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(res)
	}
	_, err = fmt.Fprintf(f.Out, "pushed to %s: %d sessions (%d rows) in %d objects, %d logs, %d bundles, %d eval reports, %d bytes; %d already there\n",
		res.Remote, res.Sessions, res.Rows, res.Objects, res.Logs, res.Bundles, res.Reports, res.Bytes, res.Existing)
	return err
}

type historyPullOptions struct {
	Remote string
	JSON   bool
}

// historyPullResult is what 'history pull' reports; its JSON only grows.
type historyPullResult struct {
	Remote     string `json:"remote"`
	Objects    int    `json:"objects"`
	Downloaded int    `json:"downloaded"`
	Removed    int    `json:"removed"`
	Corrupt    int    `json:"corrupt"`
	Sessions   int    `json:"sessions"`
	Cache      string `json:"cache"`
}

func newHistoryPullCmd(f *Factory, runF func(context.Context, *historyPullOptions) error) *cobra.Command {
	opts := &historyPullOptions{}
	cmd := &cobra.Command{
		Use:   "pull",
		Short: "Download the remote history into the local cache",
		Long: `Bring the local cache of a remote's history (<home>/remote/<hash>/) up to
date: download every Parquet object whose ETag the cache does not hold,
read it whole (a corrupt one is named on stderr and skipped), and drop
objects the remote no longer has. 'agentctl query --remote' does the same
before each query; pull does it ahead of time.`,
		Example: "  agentctl history pull --remote s3://ci-runs/agentctl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return historyPullRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Remote, "remote", "", remoteFlagHelp+" (env "+remote.Env+")")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcome as one JSON object")
	return cmd
}

func historyPullRun(ctx context.Context, f *Factory, opts *historyPullOptions) error {
	r, err := remote.Open(ctx, opts.Remote, f.Home, f.Err)
	if err != nil {
		return err
	}
	snap, err := r.Pull(ctx)
	if err != nil {
		return err
	}
	res := historyPullResult{Remote: r.Store.String(), Objects: len(snap.Objects), Downloaded: snap.Downloaded,
		Removed: snap.Removed, Sessions: snap.Sessions(), Cache: r.Dir}
	for _, o := range snap.Objects {
		if o.Corrupt != "" {
			res.Corrupt++
		}
	}
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(res)
	}
	_, err = fmt.Fprintf(f.Out, "pulled %s: %d objects (%d downloaded, %d removed, %d corrupt), %d sessions\n",
		res.Remote, res.Objects, res.Downloaded, res.Removed, res.Corrupt, res.Sessions)
	return err
}

// historyCompactRemoteRun is 'history compact --remote'.
func historyCompactRemoteRun(ctx context.Context, f *Factory, url string, lease time.Duration, asJSON bool) error {
	r, err := remote.Open(ctx, url, f.Home, f.Err)
	if err != nil {
		return err
	}
	res, err := r.Compact(ctx, remote.CompactOptions{Lease: lease})
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(f.Out).Encode(res)
	}
	_, err = fmt.Fprintf(f.Out, "compacted %s: %d objects into %d segments (%d rows); %d corrupt left alone\n",
		res.Remote, res.Merged, res.Segments, res.Rows, res.Corrupt)
	return err
}

// openRemoteQueryDB pulls the remote's history and opens the home's
// history together with it.
func openRemoteQueryDB(ctx context.Context, f *Factory, url string) (*query.DB, func(), error) {
	parts, err := pullRemoteParts(ctx, f, url)
	if err != nil {
		return nil, nil, err
	}
	db, err := query.OpenRemote(ctx, f.Home, f.Err, parts)
	if err != nil {
		return nil, nil, err
	}
	return db, func() { db.Close() }, nil
}

// addRemoteSessionFlags gives the commands that read one session (show,
// replay verify, bundle, view) a --remote flag: the session named by their
// arguments is fetched from the remote into its cache home, checked like
// any log from elsewhere, and the command then runs unchanged on that
// home. The user's home is not touched. Without --remote,
// $AGENTCTL_REMOTE is where sessions the home does not have are looked
// for: a CI job that sets it for 'history push' still shows its own
// sessions (not pushed yet) from its home.
func addRemoteSessionFlags(root *cobra.Command, f *Factory) {
	for _, path := range [][]string{{"show"}, {"replay", "verify"}, {"bundle"}, {"view"}} {
		cmd, _, err := root.Find(path)
		if err != nil || cmd == root {
			continue
		}
		var url string
		cmd.Flags().StringVar(&url, "remote", "", "read the session from this S3 remote `URL` (s3://bucket/prefix) instead of the home (env "+remote.Env+": for a session the home does not have)")
		run := cmd.RunE
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			u, localErr := url, error(nil)
			if u == "" {
				if u = remote.URL(""); u == "" {
					return run(cmd, args)
				}
				if localErr = missingLocally(f, args); localErr == nil {
					return run(cmd, args)
				}
			}
			r, err := remote.Open(cmd.Context(), u, f.Home, f.Err)
			if err != nil {
				return err
			}
			full := make([]string, len(args))
			for i, ref := range args {
				// A damaged log is fetched all the same: the command
				// reads it as it reads a damaged local one (exit 7).
				if full[i], err = r.FetchSession(cmd.Context(), ref); err != nil && !errors.Is(err, recorder.ErrCorrupt) {
					if localErr != nil && errors.Is(err, recorder.ErrNoSession) {
						return fmt.Errorf("%w; nor has $%s: %v", localErr, remote.Env, err)
					}
					return err
				}
			}
			f.Home = r.CacheHome()
			return run(cmd, full)
		}
	}
}

// missingLocally returns the error of resolving args in the home when none
// of them names a session there (nor a bundle file, which view reads
// instead), nil when the command should run on the home: there is a
// session to read, or no argument names one.
func missingLocally(f *Factory, args []string) error {
	var first error
	st := f.Store()
	for _, ref := range args {
		if isBundleFile(ref) {
			return nil
		}
		_, err := st.Resolve(ref)
		if !errors.Is(err, recorder.ErrNoSession) {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}
