// Package evals runs eval suites: scenarios (agent runs, or recorded
// sessions replayed offline), each repeated N times with a pass threshold,
// and assertions over what happened. It is what `agentctl eval` drives in
// CI; the results are a JSON report (Report) and JUnit XML (WriteJUnit).
//
// # Suite format
//
// A suite is YAML, decoded strictly (an unknown key or a wrong type is an
// error with file:line; every problem is reported, not just the first).
// Paths are relative to the suite file. Load also loads every agent spec
// and scripted model the suite names, so a suite that loads can run.
//
//	name: smoke                       # the JUnit test suite's name
//	scenarios:
//	  - name: fix-typo                # unique; --filter matches it
//	    agent: ../agents/fix-typo.yaml
//	    model: {provider: scripted, id: alt, script: alt.yaml}  # optional override
//	    prompt: "..."                 # optional override
//	    repeat: 3                     # default 1
//	    threshold: 0.66               # share of repeats that must pass; default 1
//	    assert:
//	      - status: done
//	      - called: edit_file
//	      - not_called: bash
//	      - called_at_most: {tool: read_file, times: 2}
//	      - no_loop: 3                # fail on 3 identical calls in a row
//	      - no_duplicate_effects: true
//	      - budget: {max_tokens: 5000, max_tool_calls: 10, max_cost_usd: 0.05}
//	      - file: {path: README.md, matches: "receive"}  # or equals: FILE, or absent: true
//	      - command: "grep -q receive README.md"         # sh -c in the final workspace
//	      - sql: "SELECT count(*) = 0 FROM tool_calls WHERE status = 'error'"
//	      - crash_safe: {parallel: 4}                     # the spec's crash matrix
//	      - anchored: {needles: ["never edit vendor/"]}   # needles survive compaction
//	      - reviewer: {model: {...}, criteria: "...", accept: [pass]}
//	  - name: replayed
//	    replay: {home: ../replay/home, session: 7e90000000000001, workspace_from: ../workspaces/typo}
//	    assert: [{status: done}]
//	  - name: codex-replay            # not run (reported why) where a need is missing
//	    replay: {session: 0a00000000000002}
//	    requires: {env: [CODEX_HOME], commands: [codex]}
//	    assert: [{status: done}]
//	  - name: forked                  # the recording up to seq 12, then the scenario's model
//	    replay: {home: fixtures/3c1f…, session: 7e90000000000001, fork_from: 12}
//	    model: {provider: scripted, id: alt, script: alt.yaml}
//	    assert: [{status: done}]
//	  - name: production              # the real program against the recording
//	    replay:
//	      home: fixtures/9a0e…
//	      session: 745bb599d0e41c2a
//	      command: node app.mjs       # sh -c, in a fresh copy of workspace_from
//	      workspace_from: ../app
//	      read_only: [/opt/npm]       # host folders the program may read
//	      env: [AGENT_TASK]           # variables passed through
//	      live_from_turn: 2           # optional: turns 2.. go live on model:
//	    assert: [{status: done}]
//
// # Cases from sessions
//
// Add (`agentctl eval add SUITE --from SESSION`) appends a replay:
// scenario made from a recorded session of any origin (a run, a proxied
// program, an import, a collected trace), with the session and its
// subagents copied, redacted, into FixturesDir beside the suite under the
// SHA-256 of the copy; with ForkFrom, one that forks it at that seq onto
// the scenario's model. It edits the suite as text (comments and layout
// stay) and loads the result before it replaces the file, which it
// creates (NewSuiteText) when there is none.
//
// A session no program of agentctl's made (collected, imported, proxied
// with no spec) replays against itself unless AddOptions.Program names
// the program: replay.command. Such a case runs the program behind the
// proxy's replay of the recorded model calls (replay.ProgramSpec), and its
// replay_matches fails on the first request that differs from its
// recorded turn, another number of model calls, or another outcome
// (replay.RecordedOutcome: status, final answer); with live_from_turn it
// goes live on the scenario's model from that turn (replay.ForkSession).
//
// # Assertions
//
// called, not_called, called_at_most and no_loop count the tool calls the
// model requested (assistant messages), whether or not they ran. budget
// reads the session's totals (tokens and cost of model calls, tool
// results). file and command look at the session's final workspace;
// command runs the suite author's shell command unsandboxed, like any CI
// step, with a 5-minute timeout. sql runs DuckDB (package query) over the
// home with the views events, sessions, tool_calls and model_calls narrowed
// to the run's session (query.DB.Scope); it passes when the first column of the first row is
// true. crash_safe runs package crashtest over the agent spec once per eval
// (not per repeat) and needs the agentctl binary (Config.Exe). anchored is
// replaycheck.Anchors with the needles, and needs min_compactions (default 1)
// compactions to have happened. reviewer is a session of its own: see
// ReviewerSystem for the protocol. A replay scenario also checks
// replay_matches: the replay's tool results and status equal the
// recording's (unless allow_differences).
//
// # Not run
//
// Before a scenario runs, what it needs of the machine is checked: the
// API key of every model it calls live (the agent's, a fork's, a
// reviewer's: spec.Model.NeedsKey) and its requires: (variables, commands
// on PATH). A scenario that lacks one is not run: it has no runs, its
// NotRunReason says what is missing, Report.NotRun counts it, and it is
// neither passed nor failed (a fork's pull request gets no secrets; its
// live scenarios are not regressions of the program). Against a baseline
// its verdict is not_run, never regressed or missing. A report with a
// not-run scenario is not OK; notrun.go has the exit policy.
//
// # Runs, shards, reports
//
// Every run is a normal session in Config.Store (query, replay and bundle
// work on it); so is every reviewer session. A run passes when it was made
// without error and every assertion passed; a scenario passes when at least
// ceil(threshold x repeat) runs passed. Shard I/N holds the scenarios whose
// 0-based index i has i mod N = I-1; Merge joins the shard reports and
// checks they are disjoint, complete and from the same suite file.
//
// # Trials
//
// A scenario of two or more runs gets, for k = 1..n, pass@k and pass^k
// (Trials, with the estimators on Trial): pass@k = 1 - C(n-c,k)/C(n,k)
// (Chen et al. 2021), pass^k = C(c,k)/C(n,k) (tau-bench). Config.Repeat
// (--repeat) overrides every scenario's repeat; thresholds stay shares.
//
// # Baselines
//
// Compare judges a report against a baseline report (a previous run, a
// merged one, a branch's newest): per scenario the pass rates and the
// means of cost, tokens, turns, wall time and tool calls, and a verdict,
// regressed, improved, unchanged, new or missing. Repeat-1 scenarios
// compare outcomes; repeated ones are judged by a one-sided Fisher exact
// test (FisherOneSided) at CompareOptions.Alpha; means beyond Tolerance
// regress; a missing scenario fails unless AllowMissing. compare.go has
// the rules; TestFalseAlarmRate measures how often the gate fires when
// nothing changed. WriteJUnit and WriteSummary (Markdown, for
// $GITHUB_STEP_SUMMARY) render a report with its Comparison; the summary
// says why each failing scenario failed (why.go: the failed assertion,
// expected and got, and a replay's divergence: turn and both sides).
//
//	base, _ := evals.ReadReport("main.json")
//	cmp, err := evals.Compare(base, rep, evals.CompareOptions{})
//	if err == nil && !cmp.OK { /* exit 9 */ }
//
// # Concurrency
//
// Run executes up to Config.Parallel runs at once; the report is in suite
// order and does not depend on the parallelism. Config.Provider and
// Config.Tools must return fresh values per call.
package evals
