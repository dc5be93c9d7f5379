package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/crashtest"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/remote"
)

func newHistoryCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Manage the Parquet run history",
		Long: `The run history is Parquet under <home>/history/, partitioned by the date a
session started (date=YYYY-MM-DD/). A session is sealed into it when a run
or resume ends; small files are compacted into segments automatically once
` + fmt.Sprint(history.AutoCompactFiles) + ` of them pile up, or with 'agentctl history compact'.

'history push' uploads the history, finished logs and bundles to an
S3-compatible bucket shared by many machines; 'query --remote' and
'history pull' read it back (see 'agentctl history push --help').`,
	}
	cmd.AddCommand(newHistoryCompactCmd(f, nil), newHistorySealCmd(f, nil), newHistoryPushCmd(f, nil), newHistoryPullCmd(f, nil))
	return cmd
}

type historyCompactOptions struct {
	JSON   bool
	Remote string        // compact this S3 remote instead of the home
	Lease  time.Duration // the remote compaction lease
}

func newHistoryCompactCmd(f *Factory, runF func(context.Context, *historyCompactOptions) error) *cobra.Command {
	opts := &historyCompactOptions{}
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Merge small history files into larger segments",
		Long: `Merge the small Parquet files of each date partition (one per sealed session,
and small segments) into segments of about ` + fmt.Sprint(history.SegmentRows) + ` rows. The new segments are
written first, then the manifest is swapped, then the old files are removed:
a reader or a crash never sees a row twice or not at all. Files left over by
an earlier crash are removed.

With --remote, the small Parquet objects of an S3 remote's history are
merged instead, under a lease object (locks/compact.lease, taken and
renewed with conditional writes) so that two compactions never
interleave: new segments are uploaded before the merged objects are
deleted, and a compaction that no longer holds its lease deletes nothing.`,
		Example: "  agentctl history compact\n  agentctl history compact --json\n  agentctl history compact --remote s3://ci-runs/agentctl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if opts.Remote != "" {
				return historyCompactRemoteRun(cmd.Context(), f, opts.Remote, opts.Lease, opts.JSON)
			}
			return historyCompactRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcome as one JSON object")
	cmd.Flags().StringVar(&opts.Remote, "remote", "", "compact this S3 remote `URL` (s3://bucket/prefix) instead of the home")
	cmd.Flags().DurationVar(&opts.Lease, "lease", remote.DefaultLease, "with --remote: how long the compaction lease is taken for")
	return cmd
}

func historyCompactRun(f *Factory, opts *historyCompactOptions) error {
	res, err := history.New(f.Home).Compact(history.CompactOptions{})
	if err != nil {
		return err
	}
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(res)
	}
	_, err = fmt.Fprintf(f.Out, "compacted %d files into %d segments (%d rows); %d files now, %d leftovers removed\n",
		res.Merged, res.Segments, res.Rows, res.FilesAfter, res.Removed)
	return err
}

type historySealOptions struct {
	Sessions []string
	JSON     bool
}

func newHistorySealCmd(f *Factory, runF func(context.Context, *historySealOptions) error) *cobra.Command {
	opts := &historySealOptions{}
	cmd := &cobra.Command{
		Use:   "seal [SESSION...]",
		Short: "Seal sessions into the Parquet history",
		Long: `Write sessions' events to the Parquet history. Runs seal their session when
they end, so this is for logs recorded elsewhere or before sealing existed.
With no SESSION, every session not sealed as its log is now is sealed
(only logs not being written: a running session is left to its runner).
Sealing is idempotent.`,
		Example: "  agentctl history seal\n  agentctl history seal 3f2a",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Sessions = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return historySealRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object per session")
	return cmd
}

func historySealRun(f *Factory, opts *historySealOptions) error {
	st := f.Store()
	var ids []string
	if len(opts.Sessions) == 0 {
		all, err := st.IDs()
		if err != nil {
			return err
		}
		ids = all
	}
	for _, ref := range opts.Sessions {
		id, err := st.Resolve(ref)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	results, err := history.New(f.Home).Seal(ids...)
	failed := 0
	for _, r := range results {
		if r.Err != "" {
			failed++
		}
		if opts.JSON {
			json.NewEncoder(f.Out).Encode(r)
			continue
		}
		switch {
		case r.Err != "":
			fmt.Fprintf(f.Err, "agentctl: %s\n", r.Err)
		case r.File != "":
			fmt.Fprintf(f.Out, "%s sealed: %d rows in %s\n", r.SessionID, r.Rows, r.File)
		case strings.HasPrefix(r.Skipped, "never started"):
			fmt.Fprintf(f.Err, "agentctl: note: %s %s\n", r.SessionID, r.Skipped)
		}
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return withCode(ExitError, fmt.Errorf("history seal: %d of %d sessions failed", failed, len(ids)))
	}
	return nil
}

// sealSession seals session id and its descendants (recorder.Lineage:
// the subagents it started, and forks and replays of it) after a run or
// resume ended. A failure is a
// warning: the log is the source of truth and queries read unsealed logs.
func sealSession(f *Factory, id string) {
	if id == "" {
		return
	}
	ids := []string{id}
	if lin, err := f.Store().Lineage(); err == nil {
		kids, _ := lin.Descendants(id)
		ids = append(ids, kids...)
	} else {
		fmt.Fprintf(f.Err, "agentctl: warning: seal the sessions below %s: %v\n", id, err)
	}
	sealIDs(f, ids...)
}

// sealIDs seals exactly the sessions ids (all of whose logs are written),
// with sealSession's warnings.
func sealIDs(f *Factory, ids ...string) {
	if len(ids) == 0 || os.Getenv(crashtest.NoSealEnv) == "1" {
		return
	}
	id := ids[0]
	results, err := history.New(f.Home).Seal(ids...)
	for _, r := range results {
		if r.Err != "" && err == nil {
			fmt.Fprintf(f.Err, "agentctl: warning: %s\n", r.Err)
		}
	}
	if err != nil {
		fmt.Fprintf(f.Err, "agentctl: warning: seal %s: %v\n", id, err)
	}
}
