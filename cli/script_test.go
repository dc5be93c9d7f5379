package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/cli"
	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner/sandbox"
)

// TestMain lets script tests run the real command tree as the `agentctl`
// program, in its own process, with main's signal handling.
func TestMain(m *testing.M) {
	sandbox.Init() // tools re-execute this binary as their sandbox init
	testscript.Main(m, map[string]func(){
		"agentctl": func() {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := cli.Main(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
			stop()
			os.Exit(code)
		},
	})
}

// TestScripts runs testdata/script/*.txtar end to end through the binary.
// $FIXTURES points at the repository's fixtures folder.
func TestScripts(t *testing.T) {
	fixtures, err := filepath.Abs(filepath.Join("..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			env.Setenv("AGENTCTL_HOME", filepath.Join(env.WorkDir, ".agentctl"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":    waitFile,
			"flipbyte":    flipByte,
			"termlease":   termLease,
			"forgeheader": forgeHeader,
			"serve":       serveReplies,
		},
	})
}

// waitfile PATH [SECONDS]: wait until PATH exists (default 20 s).
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: waitfile PATH [SECONDS]")
	}
	limit := 20 * time.Second
	if len(args) > 1 {
		s, _ := strconv.Atoi(args[1])
		limit = time.Duration(s) * time.Second
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear within %s", args[0], limit)
}

// flipbyte FILE OFFSET: invert one byte, as disk corruption would. A
// negative offset counts from the end.
func flipByte(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	p := ts.MkAbs(args[0])
	b, err := os.ReadFile(p)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 {
		off += len(b)
	}
	if off < 0 || off >= len(b) {
		ts.Fatalf("offset %d outside %d bytes", off, len(b))
	}
	b[off] ^= 0xff
	ts.Check(os.WriteFile(p, b, 0o644))
	fmt.Fprintf(ts.Stdout(), "flipped byte %d of %s\n", off, args[0])
}

// termlease SESSIONDIR: send SIGTERM to the process named by the session's
// lease (testscript's kill only knows INT and KILL).
func termLease(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: termlease SESSIONDIR")
	}
	b, err := os.ReadFile(filepath.Join(ts.MkAbs(args[0]), recorder.LeaseFile))
	ts.Check(err)
	var info recorder.LeaseInfo
	ts.Check(json.Unmarshal(b, &info))
	if info.PID == 0 {
		ts.Fatalf("lease names no pid: %s", b)
	}
	ts.Check(syscall.Kill(info.PID, syscall.SIGTERM))
}
