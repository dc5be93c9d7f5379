package cli_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentctl/agentctl/internal/cli"
	"github.com/agentctl/agentctl/internal/mcp/mcptest"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/testenv/logcheck"
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
		"agentctl-mcp-test": mcptest.Main, // a real MCP server for mcp_*.txtar
	})
}

// TestScripts runs testdata/script/*.txtar end to end through the binary.
// $FIXTURES points at the repository's fixtures folder, $CORPUS at its
// testdata/corpus (real third-party files, byte for byte).
func TestScripts(t *testing.T) {
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		// [npmagents]: .ci/run installed the real external agents
		// (AGENTCTL_NPM_AGENTS); set, the scripts that use them must pass.
		Condition: scriptCondition,
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			env.Setenv("CORPUS", filepath.Join(fixtures, "..", "testdata", "corpus"))
			home := filepath.Join(env.WorkDir, ".agentctl")
			env.Setenv("AGENTCTL_HOME", home)
			// The clock's date and the next day's, for a program that puts
			// today's date in its prompt and is replayed "on another day":
			// a replay takes a date for volatile only when one of the runs'
			// clocks showed it (replaymatch.Env.Days).
			now := time.Now().UTC()
			env.Setenv("TODAY", now.Format(time.DateOnly))
			env.Setenv("TOMORROW", now.AddDate(0, 0, 1).Format(time.DateOnly))
			// Every log a script leaves in its home must pass replay
			// verify, unless the script damaged one on purpose.
			env.Defer(func() {
				if _, damaged := damagedHomes.Load(env.WorkDir); damaged {
					return
				}
				if err := logcheck.Home((&cli.Factory{Home: home}).Store()); err != nil {
					env.T().Fatal(err)
				}
			})
			// The real external agents .ci/run installs from npm
			// (external_*.txtar run them when it is set).
			if npm := os.Getenv("AGENTCTL_NPM_AGENTS"); npm != "" {
				env.Setenv("AGENTCTL_NPM_AGENTS", npm)
			}
			// The real gemini-cli .ci/run installs (proxy_gemini_cli.txtar).
			if npm := os.Getenv("AGENTCTL_NPM_GEMINI"); npm != "" {
				env.Setenv("AGENTCTL_NPM_GEMINI", npm)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":    waitFile,
			"flipbyte":    damages(flipByte),
			"cutlog":      damages(cutLog),
			"termlease":   termLease,
			"forgeheader": damages(forgeHeader),
			"cc21":        cc21,
			"jsonset":     jsonSet,
			"jsonsame":    jsonSame,
			"forgeevent":  damages(forgeEvent),
			"procsgone":   procsGone,
			"nogrow":      noGrow,
			"leftover":    leftover,
			"damaged":     damages(func(*testscript.TestScript, bool, []string) {}),
			"serve":       serveReplies,
			"fakegemini":  fakeGemini,
			"s3server":    s3Server,
			"s3":          s3Cmd,
		},
	})
}

// damagedHomes holds the work folders of scripts that damaged a log on
// purpose (flipbyte, cutlog, forgeheader, forgeevent, nolog): their logs
// are not held to replay verify at the end.
var damagedHomes sync.Map

// damages marks the script's logs as damaged on purpose, then runs cmd.
func damages(cmd func(*testscript.TestScript, bool, []string)) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		damagedHomes.Store(ts.Getenv("WORK"), true)
		cmd(ts, neg, args)
	}
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

// cutlog LOG KEEP [BYTES]: cut a session log after its first KEEP records
// (a negative KEEP counts from the end), keeping BYTES more of the next
// record when given (a torn tail): a log that lost its tail to something
// other than a crash (a restored backup, a disk that dropped writes).
func cutLog(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 && len(args) != 3 {
		ts.Fatalf("usage: cutlog LOG KEEP [BYTES]")
	}
	p := ts.MkAbs(args[0])
	b, err := os.ReadFile(p)
	ts.Check(err)
	var ends []int // the end of each record
	for off := recorder.FileHeaderSize; off+9 <= len(b); {
		off += 9 + int(binary.LittleEndian.Uint32(b[off:]))
		ends = append(ends, off)
	}
	keep, err := strconv.Atoi(args[1])
	ts.Check(err)
	if keep < 0 {
		keep += len(ends)
	}
	if keep < 1 || keep >= len(ends) {
		ts.Fatalf("cutlog: keep %s of %d records", args[1], len(ends))
	}
	size := ends[keep-1]
	if len(args) == 3 {
		more, err := strconv.Atoi(args[2])
		ts.Check(err)
		if more < 1 || size+more >= ends[keep] {
			ts.Fatalf("cutlog: %d bytes is not part of record %d", more, keep+1)
		}
		size += more
	}
	ts.Check(os.Truncate(p, int64(size)))
	fmt.Fprintf(ts.Stdout(), "kept %d of %d records (%d bytes) of %s\n", keep, len(ends), size, args[0])
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

// procsgone MARKER SECONDS: wait until no live process has MARKER in its
// command line.
func procsGone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: procsgone MARKER SECONDS")
	}
	secs, err := strconv.ParseFloat(args[1], 64)
	ts.Check(err)
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for {
		left := livePidsWith(args[0])
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("processes with %q still alive after %ss: %v", args[0], args[1], left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// livePidsWith lists live (not zombie) processes whose command line
// contains s.
func livePidsWith(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err != nil || strings.Contains(string(st), ") Z") {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// nogrow FILE MILLIS: FILE's size does not change over MILLIS.
func noGrow(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: nogrow FILE MILLIS")
	}
	ms, err := strconv.Atoi(args[1])
	ts.Check(err)
	size := func() int64 {
		fi, err := os.Stat(ts.MkAbs(args[0]))
		ts.Check(err)
		return fi.Size()
	}
	before := size()
	time.Sleep(time.Duration(ms) * time.Millisecond)
	if after := size(); after != before {
		ts.Fatalf("%s grew from %d to %d bytes in %dms", args[0], before, after, ms)
	}
}

// leftover SESSIONDIR NAME: start a real process named NAME (a sleep) and
// record it in the session's process records as a sandbox init, as one
// that survived a crash of the harness would be.
func leftover(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: leftover SESSIONDIR NAME")
	}
	c := exec.Command("bash", "-c", "exec -a "+args[1]+" sleep 1000")
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	ts.Check(c.Start())
	go func() { _ = c.Wait() }() // reaped once resume kills it
	ts.Defer(func() { _ = c.Process.Kill() })
	pid := c.Process.Pid
	var start string
	deadline := time.Now().Add(5 * time.Second)
	for {
		// The start time stays; the name changes at exec.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmd), args[1]) {
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			start = f[19]
			break
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the leftover process did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	dir := filepath.Join(ts.MkAbs(args[0]), "procs")
	ts.Check(os.MkdirAll(dir, 0o700))
	rec := fmt.Sprintf(`{"pid":%d,"start":%s,"kind":"sandbox-init","program":%q,"time":%q}`, pid, start, args[1], time.Now().UTC().Format(time.RFC3339))
	ts.Check(os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)+".json"), []byte(rec), 0o600))
}
