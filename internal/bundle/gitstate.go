package bundle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/internal/gitsafe"
	"github.com/agentctl/agentctl/internal/recorder"
)

// openRunDiff is the workspace.diff of a session with git state (its log
// records a git_sha): the work tree against the run's initializer commit
// (the first git_sha recorded), made with the run's own git folder
// (sessions/<id>/git), opened read-only so a running session's writer is
// not disturbed. nil when the session has no git state; a folder that is
// not as agentctl writes it gives a note saying why, never git run on it.
// base is the first git_sha the log records.
func openRunDiff(ctx context.Context, dir, ws, id, base string) *wsDiff {
	if base == "" || !gitsafe.ValidID(base) {
		return nil
	}
	gitDir := filepath.Join(dir, recorder.GitDir)
	if _, err := os.Lstat(gitDir); err != nil {
		return nil
	}
	tr, err := gitsafe.OpenTrackerReadOnly(gitDir, ws, gitsafe.RunBranch(id))
	var refused *gitsafe.RefusedError
	switch {
	case errors.As(err, &refused):
		return &wsDiff{refused: err}
	case err != nil:
		return nil
	}
	if !tr.HasCommit(ctx, base) {
		return &wsDiff{refused: fmt.Errorf("the run's git folder lacks the initializer commit %s", base)}
	}
	return &wsDiff{run: tr, base: base}
}
