package replay

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/testenv"
)

// BenchmarkSubagentReplay replays fixtures/agents/delegate.yaml (a parent
// whose task call starts a subagent), the child served from its own
// recording; BenchmarkSubagentRecord is the reference: the same session run
// with its scripted models, child included. The difference is what
// finding, loading and comparing the child's recording costs a replay.
func BenchmarkSubagentReplay(b *testing.B) { benchSubagentReplay(b, true) }
func BenchmarkSubagentRecord(b *testing.B) { benchSubagentReplay(b, false) }

func benchSubagentReplay(b *testing.B, replay bool) {
	sp := testenv.LoadAgent(b, "delegate")
	home := b.TempDir()
	src := recorder.Store{Root: home}
	newProv := func(sp *spec.Spec) (provider.Provider, error) { return replaytest.Scripted(b, sp), nil }
	record := func(id string) {
		res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: src, Provider: replaytest.Scripted(b, sp),
			Tools: replaytest.Tools(b, sp), SessionID: id, NewProvider: newProv})
		if err != nil || res.Status != session.StatusDone {
			b.Fatalf("record: %v %s", err, res.Status)
		}
	}
	const id = "be0c000000000001"
	record(id)
	evs, _, err := src.Load(id)
	if err != nil {
		b.Fatal(err)
	}
	dst := recorder.Store{Root: b.TempDir()}
	b.ResetTimer()
	for i := range b.N {
		if !replay {
			record(fmt.Sprintf("be0d%012x", i))
			continue
		}
		rep, err := Run(context.Background(), RunConfig{Store: dst, SessionID: id, Events: evs, Spec: sp, Tools: replaytest.Tools(b, sp), Recordings: &src})
		if err != nil || len(rep.Differences) != 0 || len(rep.Subagents) != 1 {
			b.Fatalf("replay: %v %+v", err, rep.Differences)
		}
	}
}
