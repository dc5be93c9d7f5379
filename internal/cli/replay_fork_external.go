package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// externalForkOutput is the --json object of `replay fork` on an external
// agent's session: the fork (replay.ExternalForkReport) and the run's
// outcome as `run --json` prints it. Its fields only grow.
type externalForkOutput struct {
	replay.ExternalForkReport
	Run runOutput `json:"run"`
}

// writeExternalForkRun prints the fork of an external agent's session
// (replay.ForkExternal, through replay.ForkSession) and the run's outcome,
// as text or as one --json object; m is the model it went live on.
func writeExternalForkRun(f *Factory, rep replay.ExternalForkReport, m spec.Model, err error, asJSON bool) error {
	if asJSON {
		// reportRun prints the run's object; the fork's goes around it.
		var buf strings.Builder
		ff := *f
		ff.Out = &buf
		rerr := reportRun(&ff, rep.Result, err, true)
		out := externalForkOutput{ExternalForkReport: rep}
		_ = json.Unmarshal([]byte(buf.String()), &out.Run)
		if e := json.NewEncoder(f.Out).Encode(out); e != nil {
			return e
		}
		return rerr
	}
	writeExternalFork(f.Out, rep, m)
	return reportRun(f, rep.Result, err, false)
}

func writeExternalFork(w io.Writer, rep replay.ExternalForkReport, m spec.Model) {
	note := ""
	if rep.ModelChanged {
		note = ", model changed to " + session.ModelName(m.Provider, m.ID)
	}
	fmt.Fprintf(w, "forked %s at seq %d into %s (external agent run again: %d of %d recorded model calls replayed, %d live on %s%s)\n",
		rep.ParentID, rep.ForkedFrom, rep.SessionID, rep.Replayed, rep.RecordedTurns, rep.Live, session.ModelName(m.Provider, m.ID), note)
	for _, fd := range rep.Findings {
		mark := "volatile"
		if fd.Fatal {
			mark = "DIVERGED"
		}
		fmt.Fprintf(w, "  %s: %s: %s\n", fd.Where(rep.SessionID), mark, fd.What)
	}
	if sum := replaymatch.Summary(rep.Normalised); sum != "" {
		fmt.Fprintf(w, "  normalised: %s\n", sum)
	}
}
