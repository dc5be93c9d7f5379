package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/bench/internal/benchgen"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// env holds what the rows share: the binaries built once, the test
// binaries built on first use, and the data sets made on first use.
type env struct {
	root  string // the repository
	tmp   string // removed at the end
	quick bool
	log   io.Writer

	agentctl string // -tags netgo,osusergo: static on Linux
	dynamic  string // a plain go build
	floor    string // bench/floor, linked as agentctl is

	tests   map[string]testBin
	benches map[string]bool // binary + "\x00" + benchmark -> exists

	hist   *histData
	replay string // home holding the replay sessions
	long   string // home holding the 1M-event and the 210,000-event compacting sessions
	bundle string // home holding the bundle session
}

type testBin struct {
	path string
	err  error
}

// size returns the quick or the full value.
func (e *env) size(quick, full int) int {
	if e.quick {
		return quick
	}
	return full
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "bench: "+format+"\n", args...)
}

// build runs go build or go test -c from the repository root.
func (e *env) goCmd(args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = e.root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

func (e *env) buildBinaries() error {
	t0 := time.Now()
	e.agentctl = filepath.Join(e.tmp, "bin", "agentctl")
	e.dynamic = filepath.Join(e.tmp, "bin", "agentctl-dynamic")
	e.floor = filepath.Join(e.tmp, "bin", "floor")
	// Three links, mostly one thread each: in parallel.
	errs := make(chan error, 3)
	for _, b := range [][]string{
		{"build", "-tags", "netgo,osusergo", "-o", e.agentctl, "./cmd/agentctl"},
		{"build", "-o", e.dynamic, "./cmd/agentctl"},
		{"build", "-tags", "netgo,osusergo", "-o", e.floor, "./bench/floor"},
	} {
		go func() { errs <- e.goCmd(b...) }()
	}
	var err error
	for range 3 {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return err
	}
	for _, p := range []string{e.agentctl, e.dynamic, e.floor} {
		if err := rewrite(p); err != nil {
			return err
		}
	}
	e.logf("built agentctl (static), agentctl (dynamic), floor in %s", time.Since(t0).Round(time.Second))
	return nil
}

// rewrite copies the binary at p to a new file in its place, in 64 KiB
// writes, as an install writes it (cp, tar, a package manager, a
// download). The page cache keeps a file in folios as large as the writes
// that made it, and a process that maps the file maps a whole folio at a
// fault: the Go linker writes its output through a mapping, and every
// process of a freshly linked 180 MB agentctl showed ~35 MB more peak RSS
// (file pages of the binary, shared and reclaimable) than the same bytes
// written by cp (`agentctl version`: 79 against 44 MB; written in 16 MiB
// writes, 101 MB) and started ~5% faster. The rows compare binaries
// written the same way, and peak RSS counts what a command itself needs
// plus the binary as installed.
func rewrite(p string) error {
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := p + ".tmp"
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	// Plain reads and writes: io.Copy would use copy_file_range, whose
	// folios are the file system's business.
	_, err = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 64<<10))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// testBinary builds pkg's test binary once. A package that does not exist
// is errNotBuilt.
func (e *env) testBinary(pkg string) (string, error) {
	if tb, ok := e.tests[pkg]; ok {
		return tb.path, tb.err
	}
	var tb testBin
	if fi, err := os.Stat(filepath.Join(e.root, pkg)); err != nil || !fi.IsDir() {
		tb.err = fmt.Errorf("%w: no package %s", errNotBuilt, pkg)
	} else {
		t0 := time.Now()
		tb.path = filepath.Join(e.tmp, "tests", strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_")+".test")
		tb.err = e.goCmd("test", "-c", "-o", tb.path, pkg)
		e.logf("built the tests of %s in %s", pkg, time.Since(t0).Round(time.Second))
	}
	if e.tests == nil {
		e.tests = map[string]testBin{}
	}
	e.tests[pkg] = tb
	return tb.path, tb.err
}

func (e *env) hasBenchmark(bin, dir, name string) (bool, error) {
	key := bin + "\x00" + name
	if ok, seen := e.benches[key]; seen {
		return ok, nil
	}
	cmd := exec.Command(bin, "-test.list", "^"+name+"$")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return false, fmt.Errorf("%s -test.list: %w", filepath.Base(bin), err)
	}
	ok := strings.TrimSpace(string(out)) == name
	if e.benches == nil {
		e.benches = map[string]bool{}
	}
	e.benches[key] = ok
	return ok, nil
}

// histData is the query rows' data: sessions of events, sealed into the
// history, then compacted (once, timed) for the rows after compaction.
type histData struct {
	home, jsonl string
	sessions    int
	compacted   bool
	compact     sample // the compaction, one process
	files       []string
}

const historyEvents = 100

// historyJSONL returns the events as JSONL, which compaction does not
// change: the jq reference serves the rows before and after it.
func (e *env) historyJSONL() (string, error) {
	compacted := e.hist != nil && e.hist.compacted
	h, err := e.history(compacted)
	if err != nil {
		return "", err
	}
	return h.jsonl, nil
}

func (e *env) history(compacted bool) (*histData, error) {
	if e.hist == nil {
		h := &histData{home: filepath.Join(e.tmp, "history"), sessions: e.size(1000, 10000)}
		h.jsonl = filepath.Join(h.home, "events.jsonl")
		if err := os.MkdirAll(h.home, 0o755); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := benchgen.History(h.home, h.jsonl, h.sessions, historyEvents); err != nil {
			return nil, fmt.Errorf("generate history: %w", err)
		}
		hist := history.New(h.home)
		hist.AutoCompactFiles = -1
		ids, err := hist.Store.IDs()
		if err != nil {
			return nil, err
		}
		if _, err := hist.Seal(ids...); err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		e.logf("generated and sealed %d sessions x %d events in %s", h.sessions, historyEvents, time.Since(t0).Round(time.Second))
		e.hist = h
	}
	h := e.hist
	if compacted && !h.compacted {
		p := &proc{args: func(e *env) ([]string, error) {
			return []string{e.agentctl, "--home", h.home, "history", "compact"}, nil
		}}
		s, err := p.run(e)
		if err != nil {
			return nil, err
		}
		h.compact, h.compacted = s, true
		m, err := history.New(h.home).Manifest()
		if err != nil {
			return nil, err
		}
		h.files = m.LiveFiles(history.New(h.home).Dir)
		e.logf("compacted the history in %.1f s: %d files", s["s"], len(h.files))
	}
	if !compacted && h.compacted {
		return nil, errors.New("the history is already compacted: rows before compaction must come first")
	}
	return h, nil
}

// Replay sessions: a long one (100,004 events) and one of 10,002, written
// as the runner records them.
const (
	replayLong  = "b000000000000000"
	replayShort = "a000000000000000"
)

var replayLongEvents int64

func (e *env) replayHome() (string, error) {
	if e.replay != "" {
		return e.replay, nil
	}
	home := filepath.Join(e.tmp, "replay")
	st := recorder.Store{Root: home}
	long := benchgen.Replay(100_000, 10)
	if err := benchgen.WriteLog(st, replayLong, long); err != nil {
		return "", err
	}
	replayLongEvents = int64(len(long))
	if err := benchgen.WriteLog(st, replayShort, benchgen.Replay(10_000, 10)); err != nil {
		return "", err
	}
	e.replay = home
	return home, nil
}

// The long sessions of the read rows (issue 38): one of 1,000,000-odd
// events shaped as the runner records them (a compaction every 10 turns),
// and one of 210,000 events as collect records an app that sends only its
// newest messages (a compaction every turn, each dropping nothing).
const (
	longSession       = "1000000000000000"
	compactingSession = "c000000000210000"
)

// longHome writes the long sessions, a batch of events at a time.
func (e *env) longHome() (string, error) {
	if e.long != "" {
		return e.long, nil
	}
	home := filepath.Join(e.tmp, "long")
	st := recorder.Store{Root: home}
	if err := benchgen.WriteEach(st, longSession, func(fn func(session.Event)) { benchgen.ReplayEach(1_000_000, 10, fn) }); err != nil {
		return "", err
	}
	if err := benchgen.WriteEach(st, compactingSession, func(fn func(session.Event)) { benchgen.CollectedEach(210_000, fn) }); err != nil {
		return "", err
	}
	e.long = home
	return home, nil
}

const bundleSession = "be0c000000000001"

// bundleHome records a session whose workspace starts as the calc fixture
// plus copies of Go's own source tree (text that compresses like a real
// repository, plus binary test data), quick 20 MB, full 200 MB, then reads
// it once so both sides start from a warm page cache.
func (e *env) bundleHome() (home, ws string, err error) {
	home = filepath.Join(e.tmp, "bundle")
	ws = filepath.Join(home, "sessions", bundleSession, "workspace")
	if e.bundle != "" {
		return home, ws, nil
	}
	// The workspace is there when the run starts, as a project's is: the
	// run's git state (a Makefile makes it a project) commits it first,
	// and workspace.diff is what the agent changed. Files added behind
	// the run's back would be untracked at bundle time, staged and diffed
	// whole, which is not what a bundle of a real run does.
	src := filepath.Join(e.tmp, "bundle-src")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(e.root, "fixtures/workspaces/calc"))); err != nil {
		return "", "", err
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", "", err
	}
	gosrc := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	want := int64(e.size(20, 200)) << 20
	var total int64
	entries, err := os.ReadDir(gosrc)
	if err != nil {
		return "", "", err
	}
fill:
	for i := 1; ; i++ {
		for _, d := range entries {
			if !d.IsDir() {
				continue
			}
			dst := filepath.Join(src, fmt.Sprintf("copy%d", i))
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return "", "", err
			}
			if out, err := exec.Command("cp", "-r", filepath.Join(gosrc, d.Name()), dst).CombinedOutput(); err != nil {
				return "", "", fmt.Errorf("cp: %v: %s", err, out)
			}
			total = 0
			filepath.WalkDir(src, func(_ string, d os.DirEntry, _ error) error {
				if d != nil && d.Type().IsRegular() {
					if fi, err := d.Info(); err == nil {
						total += fi.Size()
					}
				}
				return nil
			})
			if total >= want {
				break fill
			}
		}
	}
	// fixtures/agents/loop-forever.yaml, its workspace the filled copy.
	spec := filepath.Join(e.tmp, "bundle.yaml")
	if err := os.WriteFile(spec, fmt.Appendf(nil, `name: loop-forever
model: {provider: scripted, id: scripted-1, script: %q}
prompt: "Make the build pass."
workspace: {from: %q}
mode: write
tools: [bash, read_file]
budget: {max_tool_calls: 3}
`, filepath.Join(e.root, "fixtures/models/loop-forever.yaml"), src), 0o644); err != nil {
		return "", "", err
	}
	cmd := exec.Command(e.agentctl, "--home", home, "run", spec, "-q", "--session-id", bundleSession)
	cmd.Dir = e.tmp
	_ = cmd.Run() // a budget stop exits non-zero; the session is what counts
	if _, err := os.Stat(ws); err != nil {
		return "", "", fmt.Errorf("bundle data: the loop-forever run left no workspace: %w", err)
	}
	warm := exec.Command("sh", "-c", `tar -cf - -C "$1" . | cat > /dev/null`, "sh", ws)
	if err := warm.Run(); err != nil {
		return "", "", err
	}
	e.logf("bundle workspace: %d MB", total>>20)
	e.bundle = home
	return home, ws, nil
}
