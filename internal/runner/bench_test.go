package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// BenchmarkRun1000Turns is a 1,000-turn scripted run with recording on
// (durable appends, fsync) and a real read_file per turn; it reports the
// time per turn. See bench/README.md.
func BenchmarkRun1000Turns(b *testing.B) {
	const turns = 1000
	script := provider.Script{}
	for i := 0; i < turns-1; i++ {
		script.Turns = append(script.Turns, provider.ScriptTurn{Text: fmt.Sprintf("step %d", i),
			ToolCalls: []provider.ScriptCall{{Name: "read_file", Args: json.RawMessage(`{"path":"README.md"}`)}}})
	}
	script.Turns = append(script.Turns, provider.ScriptTurn{Text: "done"})
	src := b.TempDir()
	os.WriteFile(filepath.Join(src, "README.md"), []byte("# bench\n"), 0o644)
	reg, err := tools.Builtins("write", []string{"read_file"})
	if err != nil {
		b.Fatal(err)
	}
	sp := &spec.Spec{Name: "bench", Model: spec.Model{Provider: "scripted", ID: "scripted-1", MaxTokens: 256},
		Prompt: "go", Mode: "write", MaxTurns: turns + 1, Workspace: spec.Workspace{From: src},
		Compaction: spec.Compaction{Window: 1 << 30, Threshold: 0.75}}
	for b.Loop() {
		store := recorder.Store{Root: b.TempDir()}
		res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: provider.NewScripted(script, "scripted-1"), Tools: reg})
		if err != nil || res.Status != session.StatusDone || res.Turns != turns {
			b.Fatalf("Start = %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*turns), "µs/turn")
}

// BenchmarkCompaction2000Turns is TestCompactionBoundedOver2000Turns's run
// (2,000 turns, a 900-token window, a compaction every few turns) timed:
// first-µs/turn and last-µs/turn are the mean time between turn requests
// over the first and the last 200 turns, which must not grow (before
// summaries were bounded: 9.7 → 298 ms). See bench/README.md.
func BenchmarkCompaction2000Turns(b *testing.B) {
	const n, window, span = 2000, 900, 200
	sp, script, reg := longRun(b, n, window)
	var first, last time.Duration
	var compactions int
	for b.Loop() {
		w := &watched{Provider: provider.NewScripted(script, "scripted-1")}
		store := recorder.Store{Root: b.TempDir()}
		res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: w, Tools: reg})
		if err != nil || res.Status != session.StatusDone || res.Turns != n {
			b.Fatalf("Start = %+v, %v", res, err)
		}
		first += w.turns[span].at.Sub(w.turns[0].at)
		last += w.turns[n-1].at.Sub(w.turns[n-1-span].at)
		compactions += len(w.summ)
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N*span), "first-µs/turn")
	b.ReportMetric(float64(last.Microseconds())/float64(b.N*span), "last-µs/turn")
	b.ReportMetric(float64(compactions)/float64(b.N), "compactions")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/turn")
}
