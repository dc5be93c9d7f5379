package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
)

// crashSignal is the panic of the in-process failpoint below.
type crashSignal struct{}

// TestRunUsesRecordedKeys crashes charge-order inside its charge (the
// card charged, its result not recorded), resumes it so the charge is
// reconciled from the tool's ledger, then replays it: the replay's charge
// runs under the key the recording's ran under (the fixture's
// fixtures/tools/charge.sh writes the key it was given to the replay
// workspace's ledger), and the replay agrees with the recording. Before,
// the replay's calls ran under keys derived from the replay's own session
// id, so a real payment API would have charged the card again.
func TestRunUsesRecordedKeys(t *testing.T) {
	sp := testenv.LoadAgent(t, "charge-order")
	home := t.TempDir()
	st := recorder.Store{Root: home}
	const id = "c4a1000000000028"
	cfg := runner.Config{Spec: sp, Store: st, Provider: replaytest.Scripted(t, sp), Tools: replaytest.Tools(t, sp), Clock: replaytest.FixedClock(), SessionID: id}
	hits := 0
	cfg.Failpoint = func(kind string, seq int64) {
		if kind == "in-tool" {
			if hits++; hits == 2 { // read_file, then charge_card
				panic(crashSignal{})
			}
		}
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(crashSignal); !ok {
					panic(v)
				}
			}
		}()
		res, err := runner.Start(context.Background(), cfg)
		t.Fatalf("the run did not crash in the charge: %+v, %v", res, err)
	}()
	cfg.Failpoint = nil
	cfg.Provider = replaytest.Scripted(t, sp)
	res, err := runner.Resume(context.Background(), cfg, id)
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	evs, _, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	var key, outcome string
	for _, e := range evs {
		if e.Kind == session.KindToolIntent && e.Tool == "charge_card" {
			key = e.IdempotencyKey
		}
		if e.Kind == session.KindReconciled {
			outcome = e.Outcome
		}
	}
	if key == "" || outcome != session.ReconciledRecovered {
		t.Fatalf("the charge's key %q, reconciled %q: want a key and a recovered charge", key, outcome)
	}

	scratch := recorder.Store{Root: t.TempDir()}
	rep, err := Run(context.Background(), RunConfig{Store: scratch, SessionID: id, Events: evs, Spec: sp, Tools: replaytest.Tools(t, sp)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ReplayStatus != "done" || len(rep.Differences) != 0 || rep.Same != rep.ToolResults {
		t.Errorf("replay = %+v, want done and every result as recorded", rep)
	}
	ledger, err := os.ReadFile(filepath.Join(scratch.SessionDir(rep.ReplaySessionID), "workspace", ".ledger", "charges"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(ledger)), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], key+" ") {
		t.Errorf("the replay's ledger:\n%s\nwant one charge under the recorded key %s", ledger, key)
	}
	replayed, _, _ := scratch.Load(rep.ReplaySessionID)
	for _, e := range replayed {
		if e.Kind == session.KindToolIntent && e.Tool == "charge_card" && e.IdempotencyKey != key {
			t.Errorf("the replay's intent has key %q, want the recorded %q", e.IdempotencyKey, key)
		}
	}
}
