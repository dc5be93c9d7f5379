package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A row is one line of the table: agentctl's side (a), the reference (b;
// nil where the goal is an absolute value), the metric both report, and
// the goal. Rows run in order; a measure shared by two rows (the same
// pointer) is measured once and its samples serve both.
type row struct {
	name   string
	a, b   measure
	metric string // a sample key: "s", "rss", "bytes", or a Go benchmark unit
	goal   *goal  // nil: reported, no goal
	quick  bool   // part of --quick
	runs   [2]int // runs of each side, quick and full (0: 3 and 5)
	warm   bool   // one unmeasured run of each side first (page cache)
}

// goal is a bound on the ratio a/b, on a's median, or on what a adds to
// b (a - b: the proxy's added latency).
type goal struct {
	value bool // on a's median, not on the ratio
	diff  bool // on a's median minus b's
	max   bool // a bound from above (<=); else from below (>=)
	limit float64
	text  string
}

func ratioAtMost(x float64, text string) *goal  { return &goal{max: true, limit: x, text: text} }
func ratioAtLeast(x float64, text string) *goal { return &goal{limit: x, text: text} }
func valueAtMost(x float64, text string) *goal {
	return &goal{value: true, max: true, limit: x, text: text}
}
func valueAtLeast(x float64, text string) *goal { return &goal{value: true, limit: x, text: text} }
func diffAtMost(x float64, text string) *goal {
	return &goal{diff: true, max: true, limit: x, text: text}
}

// gb is a Go benchmark in one of pkgs ("./internal/proxy"); bt is its -benchtime
// in --quick and full runs.
func gb(pkgs, name, quickBT, fullBT string) *gobench {
	return &gobench{pkgs: strings.Split(pkgs, "|"), name: name, benchtime: quickBT, full: fullBT}
}

// run is agentctl (static) with args.
func run(args ...string) *proc {
	return &proc{args: func(e *env) ([]string, error) { return append([]string{e.agentctl}, args...), nil }}
}

// queries of the history rows: the same aggregate in SQL and in jq.
const (
	sqlQ = `SELECT model, count(*) AS calls, sum(input_tokens + output_tokens) AS tokens, sum(cost_usd) AS cost FROM events WHERE kind = 'model_call' GROUP BY model ORDER BY model`
	jqQ  = `select(.kind == "model_call") | [.model, (.input_tokens + .output_tokens), .cost_usd]`
)

func rows() []row {
	startStatic := run("version")
	startDynamic := &proc{args: func(e *env) ([]string, error) { return []string{e.dynamic, "version"}, nil }}

	histQuery := func(compacted bool) *proc {
		return &proc{args: func(e *env) ([]string, error) {
			h, err := e.history(compacted)
			if err != nil {
				return nil, err
			}
			return []string{e.agentctl, "--home", h.home, "query", sqlQ}, nil
		}}
	}
	queryBefore, queryAfter := histQuery(false), histQuery(true)
	jq := &proc{args: func(e *env) ([]string, error) {
		jsonl, err := e.historyJSONL()
		if err != nil {
			return nil, err
		}
		return []string{"jq", "-c", jqQ, jsonl}, nil
	}}
	floor := &proc{args: func(e *env) ([]string, error) {
		h, err := e.history(true)
		if err != nil {
			return nil, err
		}
		return append([]string{e.floor, sqlQ}, h.files...), nil
	}}
	compaction := &recorded{get: func(e *env) (sample, error) {
		h, err := e.history(true)
		if err != nil {
			return nil, err
		}
		return h.compact, nil
	}}

	verifyLong := &proc{args: func(e *env) ([]string, error) {
		home, err := e.replayHome()
		return []string{e.agentctl, "--home", home, "replay", "verify", replayLong}, err
	}, after: func(e *env, s sample) error {
		s["Mevents/s"] = float64(replayLongEvents) / s["s"] / 1e6
		return nil
	}}
	view10k := &proc{args: func(e *env) ([]string, error) {
		home, err := e.replayHome()
		return []string{e.agentctl, "--home", home, "view", replayShort, "-o", filepath.Join(e.tmp, "view.html")}, err
	}}

	// The reads of issue 38: each of view, bundle and show of the
	// 1M-event session, and view and diagnose of the compacting one.
	long := func(out string, args ...string) *proc {
		return &proc{args: func(e *env) ([]string, error) {
			home, err := e.longHome()
			full := append([]string{e.agentctl, "--home", home}, args...)
			if out != "" {
				full = append(full, "-o", filepath.Join(e.tmp, out))
			}
			return full, err
		}, after: func(e *env, s sample) error {
			if out != "" {
				return os.Remove(filepath.Join(e.tmp, out))
			}
			return nil
		}}
	}
	viewLong := long("long.html", "view", longSession)
	bundleLong := long("long.tar.zst", "bundle", longSession)
	showLong := long("", "show", "--json", longSession)
	viewCompacting := long("compacting.html", "view", compactingSession)
	diagnoseCompacting := long("", "diagnose", compactingSession)

	crash := func(flags ...string) *proc {
		return &proc{args: func(e *env) ([]string, error) {
			return append([]string{e.agentctl, "crashtest", filepath.Join(e.root, "bench/crashtest/scenario.yaml"), "--parallel", "2", "--json"}, flags...), nil
		}, dir: func(e *env) string { return e.tmp }}
	}
	crashChild, crashInProcess := crash(), crash("--in-process")

	bundleOut := func(e *env) string { return filepath.Join(e.tmp, "b.tar.zst") }
	refOut := func(e *env) string { return filepath.Join(e.tmp, "ref.tar.zst") }
	size := func(path func(*env) string) func(e *env, s sample) error {
		return func(e *env, s sample) error {
			fi, err := os.Stat(path(e))
			if err != nil {
				return err
			}
			s["bytes"] = float64(fi.Size())
			return os.Remove(path(e)) // neither side replaces a file
		}
	}
	bundle := &proc{args: func(e *env) ([]string, error) {
		home, _, err := e.bundleHome()
		return []string{e.agentctl, "--home", home, "bundle", bundleSession, "-o", bundleOut(e)}, err
	}, after: size(bundleOut)}
	tarZstd := &proc{args: func(e *env) ([]string, error) {
		_, ws, err := e.bundleHome()
		return []string{"sh", "-c", `tar -cf - -C "$1" . | zstd -3 -q -T1 -f -o "$2"`, "sh", ws, refOut(e)}, err
	}, after: size(refOut)}

	evalSuite := &proc{args: func(e *env) ([]string, error) {
		suite, err := e.evalSuite()
		if err != nil {
			return nil, err
		}
		home, err := os.MkdirTemp(e.tmp, "eval-")
		return []string{e.agentctl, "--home", home, "eval", suite, "--parallel", "2", "-q"}, err
	}}
	bareRuns := &proc{args: func(e *env) ([]string, error) {
		home, err := os.MkdirTemp(e.tmp, "bare-")
		n := e.size(evalQuick, evalFull)
		return []string{"sh", "-c", `seq "$1" | xargs -P2 -I{} "$2" --home "$3" run -q "$4" > /dev/null`, "sh",
			fmt.Sprint(n), e.agentctl, home, filepath.Join(e.root, "fixtures/agents/fix-typo.yaml")}, err
	}}

	importFile := "testdata/corpus/transcripts/codex/codemie-ai__codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
	jqImport := &proc{args: func(e *env) ([]string, error) {
		return []string{"jq", "-c", ".", filepath.Join(e.root, importFile)}, nil
	}}

	viewOpen := gb("./internal/view", "BenchmarkView10k/open", "3x", "5x") // skips without chromium
	otlp := gb("./bench/otlp", "BenchmarkRun1000TurnsOTLP", "1x", "1x")
	otlp.needEnv = "AGENTCTL_JAEGER_BIN"

	verifyLongBench := gb("./bench/replay", "BenchmarkVerifyLong", "3x", "10x")
	proxyAdded := gb("./internal/proxy", "BenchmarkProxyAdded", "200x", "1000x")
	proxyDirect := gb("./internal/proxy", "BenchmarkProxyDirect", "200x", "1000x")
	weed := func(name string) *gobench {
		g := gb("./internal/remote", name, "1x", "3x")
		g.needEnv = "AGENTCTL_WEED_BIN"
		return g
	}
	remotePush, remotePushSync := weed("BenchmarkRemotePush"), weed("BenchmarkRemotePushSync")
	remoteQuery, remoteQuerySync := weed("BenchmarkRemoteQueryCold"), weed("BenchmarkRemoteQuerySync")
	appendBare := gb("./internal/recorder", "BenchmarkBareFsyncWrite", "200x", "1000x")
	jaegerSide := func(name, quickBT, fullBT string) *gobench {
		g := gb("./bench/collect", name, quickBT, fullBT)
		g.needEnv = "AGENTCTL_JAEGER_BIN"
		return g
	}
	// The runs page of agentctl ui (bench/ui): one request, by size and
	// filter, over a generated history of sealed sessions.
	uiPage := func(n int, filter string) *gobench {
		return gb("./bench/ui", fmt.Sprintf("BenchmarkRunsPage/sessions=%d/filter=%s", n, filter), "3x", "10x")
	}
	uiNone, uiText := uiPage(100000, "none"), uiPage(100000, "text")
	// agentctl mcp, the server (bench/mcp): list_sessions over the ui
	// rows' histories, against `sessions --json` as the ui's page is; and
	// show_session of the 1M-event session, a late page against the
	// first. Each a process of its own, so its peak RSS is the call's.
	mcpList := func(n int) *gobench {
		return gb("./bench/mcp", fmt.Sprintf("BenchmarkListSessions/sessions=%d/first-page", n), "1x", "3x")
	}
	mcpShow := func(page, quickBT, fullBT string) *gobench {
		return gb("./bench/mcp", "BenchmarkShowSession/page="+page, quickBT, fullBT)
	}
	mcpList100k, mcpList10k := mcpList(100000), mcpList(10000)
	// The first read of the late page reads the log through (seconds).
	mcpFirst, mcpLast, mcpCold := mcpShow("first", "3x", "10x"), mcpShow("last", "3x", "10x"), mcpShow("last-cold", "1x", "2x")
	collectIngest := gb("./bench/collect", "BenchmarkIngest/target=agentctl", "5x", "20x")
	jaegerIngest := jaegerSide("BenchmarkIngest/target=jaeger", "5x", "20x")

	return []row{
		{name: "start-up: agentctl version, static vs dynamic (ms)", a: startStatic, b: startDynamic, metric: "s", quick: true, runs: [2]int{9, 21}, warm: true,
			goal: ratioAtMost(0.9, "static <= 0.9x dynamic")},
		{name: "start-up: agentctl version, static vs dynamic (CPU ms)", a: startStatic, b: startDynamic, metric: "cpu", quick: true,
			goal: ratioAtMost(0.9, "static <= 0.9x dynamic")},
		{name: "durable append, 1 writer (events/s)", a: gb("./internal/recorder", "BenchmarkAppendSingle", "200x", "1000x"), b: appendBare, metric: "events/s", quick: true,
			goal: ratioAtLeast(0.8, ">= 0.8x bare write+fsync")},
		{name: "durable append, 64 writers (events/s)", a: gb("./internal/recorder", "BenchmarkAppendConcurrent", "2000x", "20000x"), b: appendBare, metric: "events/s", quick: true,
			goal: ratioAtLeast(10, ">= 10x bare write+fsync")},
		{name: "projection 100k vs 10k events (ns/event)", a: gb("./internal/session", "BenchmarkProject/events=100000", "3x", "10x"), b: gb("./internal/session", "BenchmarkProject/events=10000", "30x", "100x"), metric: "ns/event", quick: true,
			goal: ratioAtMost(1.1, "linear within 10%")},
		{name: "replay verify from disk, 1 x 100k (M events/s)", a: verifyLongBench, metric: "Mevents/s", quick: true,
			goal: valueAtLeast(1, ">= 1 M events/s")},
		{name: "replay verify from disk, 1 x 100k (M events per CPU s)", a: verifyLongBench, metric: "Mevents/cpu-s", quick: true},
		{name: "replay verify from disk, 1,000 x 100 (M events/s)", a: gb("./bench/replay", "BenchmarkVerifyMany", "3x", "10x"), metric: "Mevents/s", quick: true,
			goal: valueAtLeast(1, ">= 1 M events/s")},
		{name: "replay verify 100k vs 10k events (ns/event)", a: verifyLongBench, b: gb("./bench/replay", "BenchmarkVerifyLong10k", "30x", "100x"), metric: "ns/event", quick: true,
			goal: ratioAtMost(1.1, "linear within 10%")},
		{name: "replay verify 100k, whole process (M events/s)", a: verifyLong, metric: "Mevents/s", quick: true, warm: true},
		{name: "peak RSS: replay verify 100k (MB)", a: verifyLong, metric: "rss", quick: true},
		{name: "query before compaction vs jq (ms)", a: queryBefore, b: jq, metric: "s", warm: true, runs: [2]int{2, 3}},
		{name: "history compact (s)", a: compaction, metric: "s", quick: true, runs: [2]int{1, 1},
			goal: valueAtMost(60, "< 60 s (10,000 x 100)")},
		{name: "query after compaction vs bare DuckDB (ms)", a: queryAfter, b: floor, metric: "s", quick: true, warm: true, runs: [2]int{7, 15},
			goal: ratioAtMost(1.5, "<= 1.5x bare DuckDB")},
		{name: "query after compaction vs bare DuckDB (CPU ms)", a: queryAfter, b: floor, metric: "cpu", quick: true,
			goal: ratioAtMost(1.5, "<= 1.5x bare DuckDB")},
		{name: "query after compaction vs jq (ms)", a: queryAfter, b: jq, metric: "s", quick: true,
			goal: ratioAtMost(0.01, ">= 100x faster than jq")},
		{name: "peak RSS: query after compaction vs bare DuckDB (MB)", a: queryAfter, b: floor, metric: "rss", quick: true},
		{name: "crash matrix ~200 events, child processes vs in-process (s)", a: crashChild, b: crashInProcess, metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(10, "child processes < 10 s")},
		{name: "bundle vs tar -c | zstd -3: time (s)", a: bundle, b: tarZstd, metric: "s", quick: true, warm: true, runs: [2]int{2, 5},
			goal: ratioAtMost(1, "no slower")},
		{name: "bundle vs tar -c | zstd -3: size (MB)", a: bundle, b: tarZstd, metric: "bytes", quick: true,
			goal: ratioAtMost(1.05, "within 5%")},
		{name: "peak RSS: bundle vs tar -c | zstd -3 (MB)", a: bundle, b: tarZstd, metric: "rss", quick: true,
			goal: valueAtMost(100, "bundle < 100 MB")},
		{name: "OTLP export on / off, 1,000-turn run (wall ratio)", a: otlp, metric: "wall-on/off", runs: [2]int{1, 1},
			goal: valueAtMost(1.1, "< 1.10")},
		{name: "eval suite --parallel 2 vs bare agentctl runs (s)", a: evalSuite, b: bareRuns, metric: "s", quick: true, runs: [2]int{1, 3}},
		{name: "import of a 515 KB Codex rollout vs jq -c . (ms)", a: gb("./internal/transcript", "BenchmarkImportLargest", "20x", "100x"), b: jqImport, metric: "s", quick: true, warm: true},
		{name: "view: 10,000-event page opened in chromium (ms, wall)", a: viewOpen, metric: "ms-wall", runs: [2]int{1, 3},
			goal: valueAtMost(2000, "< 2000 ms")},
		{name: "view: agentctl view writing that page (ms)", a: gb("./internal/view", "BenchmarkView10k/write", "3x", "5x"), metric: "s", runs: [2]int{1, 3}},
		{name: "view: a generated 10,002-event session, whole process (ms)", a: view10k, metric: "s", warm: true},
		{name: "peak RSS: view of a 1M-event session (MB)", a: viewLong, metric: "rss", runs: [2]int{1, 1},
			goal: valueAtMost(150, "<= 150 MB")},
		{name: "view of a 1M-event session (s)", a: viewLong, metric: "s", runs: [2]int{1, 1}},
		{name: "peak RSS: bundle of a 1M-event session (MB)", a: bundleLong, metric: "rss", runs: [2]int{1, 1},
			goal: valueAtMost(150, "<= 150 MB")},
		{name: "peak RSS: show --json of a 1M-event session (MB)", a: showLong, metric: "rss", runs: [2]int{1, 1},
			goal: valueAtMost(150, "<= 150 MB")},
		{name: "view, 210,000 events, a compaction every 4 (s)", a: viewCompacting, metric: "s", runs: [2]int{1, 1}},
		{name: "peak RSS: view, 210,000 events, a compaction every 4 (MB)", a: viewCompacting, metric: "rss", runs: [2]int{1, 1}},
		{name: "diagnose, 210,000 events, a compaction every 4 (CPU s)", a: diagnoseCompacting, metric: "cpu", runs: [2]int{1, 1}},

		// The benchmarks of the proxy, git state, subagents, MCP and the
		// remote, each a pair in its own package.
		{name: "proxy added latency per call, median (ms)", a: proxyAdded, b: proxyDirect, metric: "median-ms", quick: true,
			goal: diffAtMost(2, "<= 2 ms added")},
		{name: "proxy time to first byte, median (ms)", a: proxyAdded, b: proxyDirect, metric: "ttfb-ms", quick: true,
			goal: diffAtMost(1, "<= 1 ms later")},
		{name: "proxy offline replay of a 1,000-call session (calls/s)", a: gb("./internal/proxy", "BenchmarkProxyReplay", "1000x", "3000x"), metric: "calls/s", quick: true,
			goal: valueAtLeast(500, ">= 500 calls/s")},
		{name: "proxy offline replay of a 1,000-call session, another day: every request volatile (calls/s)", a: gb("./internal/proxy", "BenchmarkProxyReplayVolatile", "1000x", "3000x"), metric: "calls/s"},
		{name: "replay matcher CPU per call, 1,000-call session, every message volatile (ms)", a: gb("./internal/replaymatch", "BenchmarkMatch1000", "1000x", "3000x"), metric: "cpu-ms/call", quick: true},
		{name: "turn with git commit vs without, 10,000 files (ms)", a: gb("./internal/runner", "BenchmarkTurnCommit", "10x", "40x"), b: gb("./internal/runner", "BenchmarkTurnNoGit", "10x", "40x"), metric: "s", quick: true},
		{name: "subagent read vs the same read in the session (ms)", a: gb("./internal/runner", "BenchmarkSubagentAdded", "20x", "60x"), b: gb("./internal/runner", "BenchmarkSubagentDirect", "20x", "60x"), metric: "s"},
		{name: "MCP tool call vs the go-sdk client alone (ms)", a: gb("./internal/mcp", "BenchmarkMCPCallAdded", "100x", "1000x"), b: gb("./internal/mcp", "BenchmarkMCPCallDirect", "100x", "1000x"), metric: "s", quick: true},
		{name: "MCP server start and tool list vs the go-sdk client alone (ms)", a: gb("./internal/mcp", "BenchmarkMCPStartAdded", "5x", "20x"), b: gb("./internal/mcp", "BenchmarkMCPStartDirect", "5x", "20x"), metric: "s"},
		{name: "mcp server: list_sessions, 100k sessions vs 10k (ms)", a: mcpList100k, b: mcpList10k, metric: "s", runs: [2]int{1, 3}, warm: true},
		{name: "mcp server: list_sessions, 100k sessions vs agentctl sessions --json (ms)", a: mcpList100k, b: gb("./bench/ui", "BenchmarkSessionsJSON/sessions=100000", "1x", "3x"), metric: "s", runs: [2]int{1, 3}},
		{name: "peak RSS: mcp server list_sessions, 100k vs 10k sessions (MiB)", a: mcpList100k, b: mcpList10k, metric: "peak-RSS-MiB", runs: [2]int{1, 3}},
		{name: "mcp server: show_session of 1M events, page at seq 999,000 vs first page (ms)", a: mcpLast, b: mcpFirst, metric: "s", runs: [2]int{1, 3}, warm: true,
			goal: ratioAtMost(2, "<= 2x: a late page costs a page (42)")},
		{name: "mcp server: show_session of 1M events, first read of that late page (ms)", a: mcpCold, metric: "s", runs: [2]int{1, 3}, warm: true},
		{name: "peak RSS: mcp server show_session of 1M events, late vs first page (MiB)", a: mcpLast, b: mcpFirst, metric: "peak-RSS-MiB", runs: [2]int{1, 3}},
		{name: "external agent start + call, sandboxed vs unconfined (ms)", a: gb("./internal/sandbox", "BenchmarkServeSandboxed/calls=1", "5x", "20x"), b: gb("./internal/sandbox", "BenchmarkServeUnconfined/calls=1", "5x", "20x"), metric: "s"},
		{name: "collect ingest vs Jaeger, 10,000 spans, HTTP protobuf, 4 exporters (spans/s)", a: collectIngest, b: jaegerIngest, metric: "spans/s", quick: true, runs: [2]int{3, 5},
			goal: ratioAtLeast(1.0, ">= 1.0x Jaeger (acknowledging only durable spans)")},
		{name: "collect export latency at that load, p50 (ms)", a: collectIngest, b: jaegerIngest, metric: "p50-ms", quick: true},
		{name: "collect export latency at that load, p99 (ms)", a: collectIngest, b: jaegerIngest, metric: "p99-ms", quick: true,
			goal: valueAtMost(20, "p99 <= 20 ms")},
		{name: "collect: 8 SDK-shaped exporters, two 6 MB exports each at once (spans dropped)", a: gb("./bench/collect", "BenchmarkSDKBurst/target=agentctl", "1x", "3x"), b: jaegerSide("BenchmarkSDKBurst/target=jaeger", "1x", "3x"), metric: "spans-dropped", quick: true, runs: [2]int{1, 1},
			goal: valueAtMost(0, "0 dropped")},
		{name: "collect: that burst until the last export is acknowledged (s)", a: gb("./bench/collect", "BenchmarkSDKBurst/target=agentctl", "1x", "3x"), b: jaegerSide("BenchmarkSDKBurst/target=jaeger", "1x", "3x"), metric: "wall-s", quick: true, runs: [2]int{1, 1}},
		{name: "peak RSS: collect ingesting 1M vs 10k spans (MB)", a: gb("./bench/collect", "BenchmarkCollectRSS/spans=1000000", "1x", "1x"), b: gb("./bench/collect", "BenchmarkCollectRSS/spans=10000", "1x", "1x"), metric: "peak-rss-MB", runs: [2]int{1, 1},
			goal: ratioAtMost(2, "<= 2x: flat")},
		{name: "ui runs page, 100k sessions, no filter vs 10k (ms)", a: uiNone, b: uiPage(10000, "none"), metric: "s", runs: [2]int{1, 3},
			goal: ratioAtMost(1.5, "<= 1.5x: flat (40)")},
		{name: "ui runs page, 100k sessions, no filter vs agentctl sessions --json (ms)", a: uiNone, b: gb("./bench/ui", "BenchmarkSessionsJSON/sessions=100000", "1x", "3x"), metric: "s", runs: [2]int{1, 3},
			goal: ratioAtMost(1.0, "<= 1.0x (40)")},
		{name: "ui runs page, 100k sessions, text search vs 10k (ms)", a: uiText, b: uiPage(10000, "text"), metric: "s", runs: [2]int{1, 3},
			goal: ratioAtMost(1.5, "<= 1.5x: flat (40)")},
		{name: "ui runs page, 100k sessions, filter status (ms)", a: uiPage(100000, "status"), metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(0.150, "<= 150 ms (40)")},
		{name: "ui runs page, 100k sessions, filter model (ms)", a: uiPage(100000, "model"), metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(0.150, "<= 150 ms (40)")},
		{name: "ui runs page, 100k sessions, filter since (ms)", a: uiPage(100000, "since"), metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(0.150, "<= 150 ms (40)")},
		{name: "ui runs page, 100k sessions, filter cost (ms)", a: uiPage(100000, "cost"), metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(0.150, "<= 150 ms (40)")},
		{name: "ui runs page, 100k sessions, filter tag (ms)", a: uiPage(100000, "tag"), metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(0.150, "<= 150 ms (40)")},
		{name: "ui runs page, 100k sessions, filter text (ms)", a: uiText, metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(0.150, "<= 150 ms (40)")},
		{name: "ui runs page, 100k sessions, filter nomatch (ms)", a: uiPage(100000, "nomatch"), metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(0.150, "<= 150 ms (40)")},
		{name: "ui runs page, 100k sessions, filter page (ms)", a: uiPage(100000, "page"), metric: "s", runs: [2]int{1, 3},
			goal: valueAtMost(0.150, "<= 150 ms (40)")},
		{name: "ui runs page, 100k sessions, no filter vs 10k (CPU ms per request)", a: uiNone, b: uiPage(10000, "none"), metric: "cpu-ms/op", runs: [2]int{1, 3},
			goal: ratioAtMost(1.5, "<= 1.5x: flat (40)")},
		{name: "ui runs page, 100k sessions, text search vs 10k (CPU ms per request)", a: uiText, b: uiPage(10000, "text"), metric: "cpu-ms/op", runs: [2]int{1, 3},
			goal: ratioAtMost(1.5, "<= 1.5x: flat (40)")},
		{name: "ui runs page, 100k sessions: first request after the history changed (ms)", a: uiNone, metric: "open-ms", runs: [2]int{1, 3}},
		{name: "ui runs page, 100k sessions: Go heap with the runs index (MB)", a: uiNone, metric: "heap-MB", runs: [2]int{1, 1}},
		{name: "remote push of 1,000 sessions vs bulk upload (s)", a: remotePush, b: remotePushSync, metric: "s"},
		{name: "cold query --remote of 1,000 sessions vs bulk download (ms)", a: remoteQuery, b: remoteQuerySync, metric: "s"},
	}
}

const (
	evalQuick = 6
	evalFull  = 40
)

// evalSuite writes a suite of fix-typo scenarios (status done only).
func (e *env) evalSuite() (string, error) {
	p := filepath.Join(e.tmp, "suite.yaml")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	var b strings.Builder
	b.WriteString("name: bench\nscenarios:\n")
	for i := 1; i <= e.size(evalQuick, evalFull); i++ {
		fmt.Fprintf(&b, "  - name: s%03d\n    agent: %s\n    assert:\n      - {status: done}\n", i, filepath.Join(e.root, "fixtures/agents/fix-typo.yaml"))
	}
	return p, os.WriteFile(p, []byte(b.String()), 0o644)
}
