package cli

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/internal/evals"
)

// baselineFromHistory resolves --baseline history:BRANCH: the newest
// complete report of that branch in the home's (or the remote's) history.
// The eval history rows it reads are not in this build yet; this is the
// one place that answers until they are.
func baselineFromHistory(_ context.Context, _ *Factory, branch string) (*evals.Report, error) {
	return nil, fmt.Errorf("--baseline history:%s: eval results in the history are not available yet in this agentctl; "+
		"give the report file of the run to compare with (--baseline REPORT.json, what 'agentctl eval --json-out' wrote)", branch)
}
