// Command agentctl runs LLM agents while recording every event, replays
// recorded sessions and answers SQL questions over run history.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/sandbox"
	_ "github.com/agentctl/agentctl/internal/staticlink" // static with -tags netgo,osusergo
)

func main() {
	sandbox.Init() // first: a re-executed agentctl may be a tool's sandbox init
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
