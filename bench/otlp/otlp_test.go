// Package otlp measures what live OTLP export costs a run: a 1,000-turn
// scripted run through the real command (agentctl run), with export on
// against a real Jaeger and with export off, alternated so that disk and
// CPU noise fall on both sides. Goal: export on is under 10% slower.
//
//	AGENTCTL_JAEGER_BIN=/path/to/jaeger go test -run '^$' -bench . -benchtime 1x ./bench/otlp
//
// (.ci/run shows how to build the Jaeger binary from tools/jaeger.)
package otlp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/recorder/otlp/jaegertest"
)

const turns = 1000

// writeAgent writes a spec whose scripted model calls read_file for
// turns-1 turns and then answers.
func writeAgent(b *testing.B) string {
	dir := b.TempDir()
	var m strings.Builder
	m.WriteString("turns:\n")
	for i := 0; i < turns-1; i++ {
		fmt.Fprintf(&m, "  - text: \"step %d\"\n    tool_calls: [{name: read_file, args: {path: README.md}}]\n    usage: {input_tokens: %d, output_tokens: 12}\n", i, 100+i)
	}
	m.WriteString("  - text: \"done\"\n")
	must(b, os.WriteFile(filepath.Join(dir, "model.yaml"), []byte(m.String()), 0o644))
	must(b, os.MkdirAll(filepath.Join(dir, "ws"), 0o755))
	must(b, os.WriteFile(filepath.Join(dir, "ws", "README.md"), []byte("# bench\n"), 0o644))
	spec := fmt.Sprintf(`name: bench-otlp
model: {provider: scripted, id: scripted-1, script: model.yaml}
prompt: "go"
workspace: {from: ws}
mode: write
tools: [read_file]
max_turns: %d
`, turns+1)
	p := filepath.Join(dir, "agent.yaml")
	must(b, os.WriteFile(p, []byte(spec), 0o644))
	return p
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// cpu is the CPU time this process has used (user + system), including
// the exporter's background goroutines; Jaeger is another process.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(b *testing.B, spec, id string) (time.Duration, time.Duration, string) {
	var out, errb bytes.Buffer
	began, c0 := time.Now(), cpu()
	code := cli.Main(context.Background(), []string{"--home", b.TempDir(), "run", spec, "-q", "--session-id", id},
		cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	d, c := time.Since(began), cpu()-c0
	if code != 0 || !strings.Contains(out.String(), fmt.Sprintf("%d turns", turns)) {
		b.Fatalf("run %s: exit %d: %s %s", id, code, out.String(), errb.String())
	}
	return d, c, errb.String()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func BenchmarkRun1000TurnsOTLP(b *testing.B) {
	j := jaegertest.Start(b)
	spec := writeAgent(b)
	env := j.Env("grpc")
	const rounds = 5
	var off, on, cpuOff, cpuOn []time.Duration
	for b.Loop() {
		for r := 0; r < rounds; r++ {
			for k := range env {
				os.Unsetenv(k)
			}
			d, c, _ := run(b, spec, fmt.Sprintf("0ff000000000%04d", r))
			off, cpuOff = append(off, d), append(cpuOff, c)

			for k, v := range env {
				b.Setenv(k, v)
			}
			id := fmt.Sprintf("0e0000000000%04d", r)
			d, c, stderr := run(b, spec, id)
			on, cpuOn = append(on, d), append(cpuOn, c)
			if stderr != "" {
				b.Fatalf("export on: %s", stderr)
			}
			spans := j.WaitTrace(b, otlp.TraceID(id).String(), 2*turns)
			if len(spans) != 2*turns { // 1 run + 1000 chats + 999 tools
				b.Fatalf("jaeger holds %d spans of %s, want %d", len(spans), id, 2*turns)
			}
		}
	}
	mOff, mOn := median(off), median(on)
	cOff, cOn := median(cpuOff), median(cpuOn)
	b.ReportMetric(float64(mOff.Microseconds())/turns, "µs/turn-off")
	b.ReportMetric(float64(mOn.Microseconds())/turns, "µs/turn-on")
	b.ReportMetric(float64(mOn)/float64(mOff), "wall-on/off")
	b.ReportMetric(float64(cOn)/float64(cOff), "cpu-on/off")
	b.Logf("1,000-turn run through agentctl run, median of %d alternated runs:\n"+
		"  wall: export off %s, export on (grpc to Jaeger, 2,000 spans verified) %s: %.3fx (aim < 1.10x)\n"+
		"  cpu:  export off %s, export on %s: %.3fx\n  all wall off %v\n  all wall on  %v",
		rounds, mOff.Round(time.Millisecond), mOn.Round(time.Millisecond), float64(mOn)/float64(mOff),
		cOff.Round(time.Millisecond), cOn.Round(time.Millisecond), float64(cOn)/float64(cOff), off, on)
}
