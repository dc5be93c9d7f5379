package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentctl/agentctl/internal/replay"
	"github.com/agentctl/agentctl/internal/replaymatch"
)

// writeExternalReplay prints the replay of an external agent's session
// (replay.ReplayExternal) and gives its exit: 6 when the agent's calls
// diverged or it ended otherwise than recorded.
func writeExternalReplay(f *Factory, sr replay.SessionReport, err error, asJSON bool) error {
	rep := sr.External
	if asJSON {
		if e := json.NewEncoder(f.Out).Encode(rep); e != nil {
			return e
		}
	} else {
		printExternalReplay(f.Out, rep)
	}
	if err != nil {
		return err
	}
	if sr.Differs() {
		return withCode(ExitChecksFailed, nil)
	}
	return nil
}

func printExternalReplay(w io.Writer, r *replay.ExternalReport) {
	fatal := 0
	for _, f := range r.Findings {
		if f.Fatal {
			fatal++
		}
	}
	fmt.Fprintf(w, "replay of %s (external agent): %s (recorded %s), %d of %d recorded model calls, %d findings, %d diverging\n",
		r.SessionID, r.ReplayStatus, r.LogStatus, r.Turns, r.RecordedTurns, len(r.Findings), fatal)
	for _, f := range r.Findings {
		mark := "volatile"
		if f.Fatal {
			mark = "DIVERGED"
		}
		fmt.Fprintf(w, "  %s: %s: %s\n", f.Where(r.ReplaySessionID), mark, f.What)
	}
	if !r.ContentCaptured {
		fmt.Fprintln(w, "  the session recorded no content (collected with capture off): compared turn count, tool names and model only")
	}
	if sum := replaymatch.Summary(r.Normalised); sum != "" {
		fmt.Fprintf(w, "  normalised: %s\n", sum)
	}
	if r.ReplayReason != "" && r.ReplayStatus != r.LogStatus {
		fmt.Fprintf(w, "  replay ended: %s\n", r.ReplayReason)
	}
	if r.Kept {
		fmt.Fprintf(w, "  replay session: %s\n", r.ReplaySessionID)
	}
}
