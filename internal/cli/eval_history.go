package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/evals"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/remote"
)

// evalHistoryOptions are the flags of eval and eval merge that say what
// the report was run on, for its rows in the history.
type evalHistoryOptions struct {
	Branch    string
	Commit    string
	NoHistory bool
}

func addEvalHistoryFlags(cmd *cobra.Command, o *evalHistoryOptions) {
	cmd.Flags().StringVar(&o.Branch, "branch", "", "the `BRANCH` the report is recorded under in the history (default: $GITHUB_HEAD_REF, $GITHUB_REF_NAME, $CI_COMMIT_REF_NAME, else git's current branch)")
	cmd.Flags().StringVar(&o.Commit, "commit", "", "the `SHA` the report is recorded under (default: $GITHUB_SHA, $CI_COMMIT_SHA, else git's HEAD)")
	cmd.Flags().BoolVar(&o.NoHistory, "no-history", false, "do not seal the report into the history (eval_runs, eval_results)")
}

// provenance is the branch and commit of the flags, the CI environment
// or git in the working directory, in that order.
func (o *evalHistoryOptions) provenance() evals.Provenance {
	wd, _ := os.Getwd()
	p := evals.DetectProvenance(os.Getenv, wd)
	if o.Branch != "" {
		p.Branch = o.Branch
	}
	if o.Commit != "" {
		p.Commit = o.Commit
	}
	return p
}

// stamp sets the report's branch and commit (see provenance) where it
// has none, and the CI job writing it, before it is written anywhere.
func (o *evalHistoryOptions) stamp(rep *evals.Report) {
	p := o.provenance()
	if o.Branch != "" || rep.Branch == "" {
		rep.Branch = p.Branch
	}
	if o.Commit != "" || rep.Commit == "" {
		rep.Commit = p.Commit
	}
	rep.Writer = evals.DetectWriter(os.Getenv)
}

// sealEvalReport seals a report of the whole suite (or a merge of its
// shards; a shard's own report is left to eval merge, so that the same
// runs are never counted twice) into the home's history. A failure is a
// warning: the report's files are written already.
func sealEvalReport(f *Factory, rep *evals.Report, o *evalHistoryOptions) {
	if o.NoHistory || len(rep.Shards) > 0 {
		return
	}
	signer, err := reportSigner()
	if err != nil {
		fmt.Fprintf(f.Err, "agentctl: warning: the eval report is not sealed into the history: %v\n", err)
		return
	}
	if _, err := evals.SealReport(history.New(f.Home), rep, signer); err != nil {
		fmt.Fprintf(f.Err, "agentctl: warning: seal the eval report into the history: %v\n", err)
	}
}

// reportSigner is the key of $AGENTCTL_REPORT_KEY that signs the reports
// this job seals, nil when it is unset (see evals.SigningKeyEnv).
func reportSigner() (*evals.Signer, error) {
	k := os.Getenv(evals.SigningKeyEnv)
	if k == "" {
		return nil, nil
	}
	return evals.ParseSigningKey(k)
}

// trustedReportKeys are the keys of $AGENTCTL_REPORT_PUBKEY a history
// baseline must be signed by, nil when it is unset.
func trustedReportKeys() (*evals.TrustedKeys, error) {
	k := os.Getenv(evals.TrustedKeysEnv)
	if k == "" {
		return nil, nil
	}
	return evals.ParseTrustedKeys(k)
}

// baselineFromHistory is `--baseline history:BRANCH`: the newest complete
// report of the suite on branch in the home's history, with the remote's
// (remoteURL, else $AGENTCTL_REMOTE) when one is given; with
// $AGENTCTL_REPORT_PUBKEY, the newest one signed by one of its keys.
func baselineFromHistory(ctx context.Context, f *Factory, suite, branch, remoteURL string) (*evals.Report, error) {
	trusted, err := trustedReportKeys()
	if err != nil {
		return nil, usageError{err}
	}
	remoteURL = remote.URL(remoteURL)
	var db *query.DB
	var closeDB func()
	if remoteURL != "" {
		db, closeDB, err = openRemoteQueryDB(ctx, f, remoteURL)
	} else {
		db, closeDB, err = openQueryDB(ctx, f, "")
	}
	if err != nil {
		return nil, err
	}
	defer closeDB()
	return evals.BaselineFromHistory(ctx, evals.HistorySource{DB: db, Suite: suite, Trusted: trusted, Warn: f.Err}, branch)
}
