package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A measure is one side of a row: it runs once per call and returns what
// it measured. Calls alternate with the other side's (A B A B).
type measure interface {
	run(e *env) (sample, error)
}

// A sample maps a metric to its value: "s" (wall seconds), "cpu" (CPU
// seconds) and "rss" (peak resident MB) for processes, "bytes" for an output's size, and for Go
// benchmarks every "value unit" pair of the result line ("ns/op" also as
// "s").
type sample map[string]float64

// errNotBuilt marks a side whose package or benchmark does not exist (yet):
// its row is shown as "not built", not as a failure.
var errNotBuilt = errors.New("not built")

// errSkipped marks a side that cannot run on this machine (a tool or an
// AGENTCTL_* variable it needs is missing).
var errSkipped = errors.New("skipped")

// proc is a whole process, timed from start to exit. args and env are
// functions so that data sets are made on first use (and fresh folders
// per run where a run leaves state behind). after may add metrics (the
// size of an output).
type proc struct {
	args  func(e *env) ([]string, error)
	env   func(e *env) []string
	dir   func(e *env) string
	after func(e *env, s sample) error
}

func (p *proc) run(e *env) (sample, error) {
	args, err := p.args(e)
	if err != nil {
		return nil, err
	}
	// Peak RSS comes from /usr/bin/time, a small process: a child forked
	// by this (large) process would report this process's RSS as its own
	// peak (Linux keeps the high-water mark of the mm it replaced at exec).
	rssFile := ""
	if timeBin != "" {
		rssFile = filepath.Join(e.tmp, "rss")
		args = append([]string{timeBin, "-f", "%M", "-o", rssFile}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = os.Environ()
	if p.env != nil {
		cmd.Env = append(cmd.Env, p.env(e)...)
	}
	if p.dir != nil {
		cmd.Dir = p.dir(e)
	}
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	t0 := time.Now()
	err = cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(shortArgs(args), " "), err, lastLine(stderr.String()))
	}
	// CPU time of the process and its children (user + system, all
	// threads): steadier than wall time on a shared machine, where waiting
	// for a core stretches the wall time of both sides.
	s := sample{"s": d.Seconds(), "cpu": (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()}
	if rssFile != "" {
		b, err := os.ReadFile(rssFile)
		if err != nil {
			return nil, fmt.Errorf("peak RSS: %w", err)
		}
		kb, err := strconv.ParseFloat(strings.TrimSpace(lastLine(string(b))), 64)
		if err != nil {
			return nil, fmt.Errorf("peak RSS from /usr/bin/time: %w", err)
		}
		s["rss"] = kb / 1024 // KiB -> MiB
	}
	if p.after != nil {
		if err := p.after(e, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// timeBin is GNU time, for peak RSS; without it rows on "rss" fail.
var timeBin = func() string {
	p, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		return ""
	}
	return p
}()

// gobench is one Go benchmark, run as `pkg.test -test.run '^$'
// -test.bench '^Name$' -test.count 1` from a test binary built once.
// name may have a sub-benchmark ("BenchmarkProject/events=10000").
// pkgs lists where it may live; the first package that has it is used.
type gobench struct {
	pkgs      []string
	name      string
	benchtime string // default 1x quick, as given otherwise
	full      string // benchtime of the full run ("" = benchtime)
	needEnv   string // an AGENTCTL_* variable the benchmark needs
}

func (g *gobench) run(e *env) (sample, error) {
	if g.needEnv != "" && os.Getenv(g.needEnv) == "" {
		return nil, fmt.Errorf("%w: %s is not set", errSkipped, g.needEnv)
	}
	top, _, _ := strings.Cut(g.name, "/")
	var bin, dir string
	for _, pkg := range g.pkgs {
		b, err := e.testBinary(pkg)
		if errors.Is(err, errNotBuilt) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ok, err := e.hasBenchmark(b, filepath.Join(e.root, pkg), top)
		if err != nil {
			return nil, err
		}
		if ok {
			bin, dir = b, filepath.Join(e.root, pkg)
			break
		}
	}
	if bin == "" {
		return nil, fmt.Errorf("%w: no %s in %s", errNotBuilt, top, strings.Join(g.pkgs, " or "))
	}
	bt := g.benchtime
	if !e.quick && g.full != "" {
		bt = g.full
	}
	if bt == "" {
		bt = "1x"
	}
	var pat []string
	for _, part := range strings.Split(g.name, "/") {
		pat = append(pat, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", strings.Join(pat, "/"), "-test.count", "1", "-test.benchtime", bt, "-test.benchmem=false")
	cmd.Dir = dir
	// AGENTCTL_BENCH_AGENTCTL: benchmarks that run the command as a
	// process (bench/collect) run the binary this suite built. Generated
	// data go to the run's own cache, unless AGENTCTL_BENCH_CACHE names
	// one kept between runs (the 100k-session history takes minutes).
	cache := os.Getenv("AGENTCTL_BENCH_CACHE")
	if cache == "" {
		cache = filepath.Join(e.tmp, "cache")
	}
	cmd.Env = append(os.Environ(), "AGENTCTL_BENCH_CACHE="+cache, "AGENTCTL_BENCH_AGENTCTL="+e.agentctl)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s -test.bench %s: %w: %s", filepath.Base(bin), g.name, err, lastLine(out.String()))
	}
	s, ok := parseBench(out.String(), g.name)
	if !ok {
		if strings.Contains(out.String(), "--- SKIP") {
			return nil, fmt.Errorf("%w: %s", errSkipped, lastLine(out.String()))
		}
		return nil, fmt.Errorf("%s: no result line in: %s", g.name, lastLine(out.String()))
	}
	return s, nil
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseBench finds name's result line in go test -bench output and returns
// its metrics.
func parseBench(out, name string) (sample, bool) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || procSuffix.ReplaceAllString(f[0], "") != name {
			continue
		}
		s := sample{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			s[f[i+1]] = v
		}
		if ns, ok := s["ns/op"]; ok {
			s["s"] = ns / 1e9
		}
		return s, true
	}
	return nil, false
}

// recorded is a value measured while a data set was made (the history
// compaction); it has one sample.
type recorded struct {
	get func(e *env) (sample, error)
}

func (r *recorded) run(e *env) (sample, error) { return r.get(e) }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// shortArgs keeps error messages readable when a command names many files.
func shortArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if i >= 6 {
			out = append(out, fmt.Sprintf("(+%d more)", len(args)-i))
			break
		}
		out = append(out, a)
	}
	return out
}
