package check

import (
	"context"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
)

// flakySummaries is the scripted model whose first try of every compaction
// call fails with the provider's overloaded_error, as a real provider's
// retry loop reports it (Request.OnRetry), before the retry succeeds.
type flakySummaries struct{ provider.Provider }

func (f flakySummaries) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	if req.Purpose == provider.PurposeCompaction && req.OnRetry != nil {
		req.OnRetry(provider.Attempt{Err: &provider.Error{Type: "overloaded_error", Message: "Overloaded"}})
	}
	return f.Provider.Complete(ctx, req, onText)
}

// TestCompactionRetriesRecorded: a compaction call's failed tries are in
// the log as model_calls (attempt 1, then the answer as attempt 2), like a
// turn's, and the log still verifies.
func TestCompactionRetriesRecorded(t *testing.T) {
	sp := testenv.LoadAgent(t, "long-refactor")
	store := recorder.Store{Root: t.TempDir()}
	res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: store,
		Provider: flakySummaries{replaytest.Scripted(t, sp)}, Tools: replaytest.Tools(t, sp)})
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := store.Load(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	compactions := 0
	for i, e := range evs {
		if e.Kind != session.KindCompaction {
			continue
		}
		compactions++
		// compaction <- model_call attempt 2 <- model_call attempt 1 (failed)
		if i < 2 || evs[i-1].Kind != session.KindModelCall || evs[i-1].Attempt != 2 ||
			evs[i-2].Kind != session.KindModelCall || evs[i-2].Attempt != 1 || evs[i-2].ErrorType != "overloaded_error" {
			t.Errorf("compaction at seq %d is not preceded by a failed try (attempt 1, overloaded_error) and the answer (attempt 2): %+v / %+v", e.Seq, evs[max(i-2, 0)], evs[max(i-1, 0)])
		}
	}
	if compactions == 0 {
		t.Fatal("the fixture did not compact")
	}
	if rep := VerifyLog(res.SessionID, store.LogPath(res.SessionID), false); rep.Status != StatusOK {
		t.Errorf("replay verify of a log with retried compaction calls = %+v", rep)
	}
}
