// Package logcheck verifies every log a test left in a home, as bbolt's
// test helper checks every database it closes: a test that passes while
// writing a log that today's code cannot replay (a request digest that
// no longer matches, a result with no call, a seq gap) fails here, at the
// test that wrote it, not in a user's `replay verify` months later.
//
// It is apart from testenv because internal/replay/check's own tests use testenv.
package logcheck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
)

// Home verifies every session log under the home root (as `agentctl
// replay verify` would, the witnesses of st included) and returns one
// line per log that diverged, is broken or could not be read; a log
// that is only cut short by a crash (a torn tail) is not a failure, and
// neither is a home with no sessions.
func Home(st recorder.Store) error {
	ids, err := st.IDs()
	if err != nil {
		return fmt.Errorf("list the sessions of %s: %w", st.Root, err)
	}
	var bad []string
	for _, rep := range replaycheck.VerifyStore(ids, st) {
		switch rep.Status {
		case replaycheck.StatusOK, replaycheck.StatusStructureOnly:
			continue
		}
		bad = append(bad, strings.TrimSpace(rep.Text()))
	}
	if len(bad) > 0 {
		return errors.New("replay verify of the logs this test wrote:\n" + strings.Join(bad, "\n"))
	}
	return nil
}
