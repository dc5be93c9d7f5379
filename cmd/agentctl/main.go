// Command agentctl runs LLM agents while recording every event, replays
// recorded sessions and answers SQL questions over run history.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/sandbox"
	_ "github.com/agentctl/agentctl/internal/staticlink" // static with -tags netgo,osusergo
)

func main() {
	sandbox.Init() // first: a re-executed agentctl may be a tool's sandbox init
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := profile(os.Getenv("AGENTCTL_CPUPROFILE"))
	code := cli.Main(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stopProfile()
	stop()
	os.Exit(code)
}

// profile writes a CPU profile of the whole command to path, for
// measuring a long command as it runs for real (bench/README.md: collect
// under load). Off when path is empty.
func profile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		os.Stderr.WriteString("agentctl: AGENTCTL_CPUPROFILE: " + err.Error() + "\n")
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		os.Stderr.WriteString("agentctl: AGENTCTL_CPUPROFILE: " + err.Error() + "\n")
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
