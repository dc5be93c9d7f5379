package cli

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// capture builds a command with a run hook that records the options it is
// given, so flag parsing is tested without running anything.
func capture[T any](newCmd func(*Factory, func(context.Context, *T) error) *cobra.Command) func() (*cobra.Command, *T) {
	return func() (*cobra.Command, *T) {
		got := new(T)
		cmd := newCmd(&Factory{}, func(_ context.Context, o *T) error { *got = *o; return nil })
		return cmd, got
	}
}

// TestFlagParsing: every command's flags land in its options through the
// one hook signature, func(context.Context, *Options) error.
func TestFlagParsing(t *testing.T) {
	type tc struct {
		name    string
		parse   func(args []string) (any, error)
		args    []string
		want    any
		wantErr string
	}
	run := func(build func() (*cobra.Command, any)) func([]string) (any, error) {
		return func(args []string) (any, error) {
			cmd, got := build()
			cmd.SetArgs(args)
			cmd.SetOut(new(strings.Builder))
			cmd.SetErr(new(strings.Builder))
			err := cmd.ExecuteContext(context.Background())
			return reflect.ValueOf(got).Elem().Interface(), err
		}
	}
	runCmd := run(func() (*cobra.Command, any) { c, o := capture(newRunCmd)(); return c, o })
	resumeCmd := run(func() (*cobra.Command, any) { c, o := capture(newResumeCmd)(); return c, o })
	approveCmd := run(func() (*cobra.Command, any) { c, o := capture(newApproveCmd)(); return c, o })
	queryCmd := run(func() (*cobra.Command, any) { c, o := capture(newQueryCmd)(); return c, o })
	bundleCmd := run(func() (*cobra.Command, any) {
		return capture(func(f *Factory, h func(context.Context, *bundleOptions) error) *cobra.Command {
			return newBundleCmd(f, h, nil)
		})()
	})
	evalCmd := run(func() (*cobra.Command, any) { c, o := capture(newEvalCmd)(); return c, o })
	compareCmd := run(func() (*cobra.Command, any) { c, o := capture(newEvalCompareCmd)(); return c, o })
	addCmd := run(func() (*cobra.Command, any) { c, o := capture(newEvalAddCmd)(); return c, o })
	mergeCmd := run(func() (*cobra.Command, any) { c, o := capture(newEvalMergeCmd)(); return c, o })
	t.Setenv("GITHUB_STEP_SUMMARY", "") // the summary's default is asserted below
	gate := gateOptions{Alpha: 0.05, Tolerance: "cost=10%,tokens=10%,wall=50%"}
	verifyCmd := run(func() (*cobra.Command, any) { c, o := capture(newReplayVerifyCmd)(); return c, o })
	forkCmd := run(func() (*cobra.Command, any) { c, o := capture(newReplayForkCmd)(); return c, o })
	crashCmd := run(func() (*cobra.Command, any) { c, o := capture(newCrashtestCmd)(); return c, o })
	importCmd := run(func() (*cobra.Command, any) { c, o := capture(newImportCmd)(); return c, o })
	atifCmd := run(func() (*cobra.Command, any) { c, o := capture(newExportATIFCmd)(); return c, o })
	showCmd := run(func() (*cobra.Command, any) { c, o := capture(newShowCmd)(); return c, o })
	sessionsCmd := run(func() (*cobra.Command, any) { c, o := capture(newSessionsCmd)(); return c, o })
	for _, tt := range []tc{
		{name: "run --tag", parse: runCmd, args: []string{"spec.yaml", "--tag", "env=ci", "--tag", "pr=12"},
			want: runOptions{Spec: "spec.yaml", Tags: []string{"env=ci", "pr=12"}}},
		{name: "sessions filters", parse: sessionsCmd, args: []string{"--status", "done,failed", "--status", "crashed", "--since", "24h", "--limit", "5", "--tag", "a=b,c", "--tag", "d=e", "--user", "u", "--json"},
			want: sessionsOptions{Status: []string{"done", "failed", "crashed"}, Since: "24h", Limit: 5, Tags: []string{"a=b,c", "d=e"}, User: "u", JSON: true}},
		{name: "run", parse: runCmd, args: []string{"spec.yaml", "--prompt", "fix it", "--json", "--unsandboxed"},
			want: runOptions{Spec: "spec.yaml", Prompt: "fix it", JSON: true, Unsandboxed: true}},
		{name: "run default agent", parse: runCmd, args: []string{"-q"}, want: runOptions{Quiet: true}},
		{name: "resume", parse: resumeCmd, args: []string{"3f2a", "--spec", "a.yaml", "--allow-spec-change", "--workspace", "ws", "--model", "openai/gpt-4o", "--allow-model-change"},
			want: resumeOptions{Session: "3f2a", Spec: "a.yaml", AllowSpecChange: true, Workspace: "ws", Model: "openai/gpt-4o", AllowModelChange: true}},
		{name: "approve", parse: approveCmd, args: []string{"3f2a", "call_1", "--scope", "session"},
			want: decideOptions{Session: "3f2a", Call: "call_1", Scope: "session", Approve: true}},
		{name: "query", parse: queryCmd, args: []string{"select 1", "--format", "json", "--bundle", "b.tar.zst"},
			want: queryOptions{SQL: "select 1", Format: "json", Bundle: "b.tar.zst"}},
		{name: "bundle", parse: bundleCmd, args: []string{"3f2a", "-o", "x.tar.zst", "--with-children", "--workspace", "w"},
			want: bundleOptions{Session: "3f2a", Output: "x.tar.zst", WithChildren: true, Workspace: "w"}},
		{name: "eval", parse: evalCmd, args: []string{"suite.yaml", "--json-out", "r.json", "--junit", "j.xml", "--parallel", "3", "--shard", "1/2"},
			want: evalOptions{Suite: "suite.yaml", JSONOut: "r.json", JUnit: "j.xml", Parallel: 3, Shard: "1/2", Gate: gate}},
		{name: "eval against a baseline", parse: evalCmd,
			args: []string{"suite.yaml", "--baseline", "history:main", "--repeat", "5", "--alpha", "0.01", "--tolerance", "wall=off", "--allow-missing", "--summary", "s.md"},
			want: evalOptions{Suite: "suite.yaml", Parallel: 1, Repeat: 5, Baseline: "history:main",
				Gate: gateOptions{Alpha: 0.01, Tolerance: "wall=off", AllowMissing: true, Summary: "s.md"}}},
		{name: "eval on a branch", parse: evalCmd, args: []string{"suite.yaml", "--branch", "main", "--commit", "c1", "--no-history"},
			want: evalOptions{Suite: "suite.yaml", Parallel: 1, Gate: gate, History: evalHistoryOptions{Branch: "main", Commit: "c1", NoHistory: true}}},
		{name: "eval add", parse: addCmd, args: []string{"suite.yaml", "--from", "3f2a", "--name", "n", "--fork-from", "6", "--model", "scripted/x", "--script", "s.yaml", "--assert", "status=done", "--assert", "called=bash"},
			want: evalAddOptions{Suite: "suite.yaml", From: "3f2a", Name: "n", ForkFrom: 6, Model: "scripted/x", Script: "s.yaml", Assert: []string{"status=done", "called=bash"}}},
		{name: "eval add needs --from", parse: addCmd, args: []string{"suite.yaml"}, wantErr: "--from SESSION or --from-query SQL is required"},
		{name: "eval add a program", parse: addCmd, args: []string{"suite.yaml", "--from-query", "SELECT session_id FROM sessions", "--command", "node app.mjs", "--workspace-from", "app", "--read-only", "/nm", "--env", "A", "--env", "B", "--fork-from", "2", "--json"},
			want: evalAddOptions{Suite: "suite.yaml", FromQuery: "SELECT session_id FROM sessions", Command: "node app.mjs", WorkspaceFrom: "app", ReadOnly: []string{"/nm"}, Env: []string{"A", "B"}, ForkFrom: 2, JSON: true}},
		{name: "eval add --from and --from-query", parse: addCmd, args: []string{"suite.yaml", "--from", "a", "--from-query", "SELECT 1"}, wantErr: "one of them"},
		{name: "eval add --env without --command", parse: addCmd, args: []string{"suite.yaml", "--from", "a", "--env", "A"}, wantErr: "go with --command"},
		{name: "eval --repeat 0", parse: evalCmd, args: []string{"suite.yaml", "--repeat", "0"}, wantErr: "--repeat must be at least 1"},
		{name: "eval compare", parse: compareCmd, args: []string{"a.json", "b.json", "--json", "--junit", "j.xml"},
			want: evalCompareOptions{Baseline: "a.json", Current: "b.json", JSON: true, JUnit: "j.xml", Gate: gate}},
		{name: "eval compare needs two", parse: compareCmd, args: []string{"a.json"}, wantErr: "accepts 2 arg"},
		{name: "eval merge gates like eval", parse: mergeCmd,
			args: []string{"s1.json", "s2.json", "--baseline", "history:main", "--summary", "s.md", "--allow-missing", "--require-all", "--json-out", "m.json"},
			want: evalMergeOptions{Reports: []string{"s1.json", "s2.json"}, JSONOut: "m.json", Baseline: "history:main",
				Gate: gateOptions{Alpha: 0.05, Tolerance: "cost=10%,tokens=10%,wall=50%", AllowMissing: true, Summary: "s.md", RequireAll: true}}},
		{name: "eval old --json FILE", parse: evalCmd, args: []string{"suite.yaml", "--json", "r.json"}, wantErr: "--json-out r.json"},
		{name: "import", parse: importCmd, args: []string{"auto", "a.jsonl", "runs/", "--json"},
			want: importOptions{Format: "auto", Paths: []string{"a.jsonl", "runs/"}, JSON: true}},
		{name: "import needs a file", parse: importCmd, args: []string{"codex"}, wantErr: "requires at least 2 arg"},
		{name: "export atif", parse: atifCmd, args: []string{"3f2a", "-o", "t.json"}, want: exportATIFOptions{Session: "3f2a", Output: "t.json"}},
		{name: "replay verify", parse: verifyCmd, args: []string{"--all", "--json"}, want: replayVerifyOptions{Sessions: []string{}, All: true, JSON: true}},
		{name: "replay fork", parse: forkCmd, args: []string{"3f2a", "--from", "12", "--model", "scripted/alt", "--script", "s.yaml", "--spec", "a.yaml"},
			want: replayForkOptions{Session: "3f2a", From: 12, Model: "scripted/alt", Script: "s.yaml", Spec: "a.yaml"}},
		{name: "crashtest", parse: crashCmd, args: []string{"a.yaml", "--parallel", "2", "--crash-resumes", "1", "--seed", "7", "--in-process"},
			want: crashtestOptions{Spec: "a.yaml", Points: "all", Parallel: 2, CrashResumes: 1, Seed: 7, InProcess: true}},
		{name: "show --follow", parse: showCmd, args: []string{"3f2a", "-f", "--json"}, want: showOptions{Session: "3f2a", Follow: true, JSON: true}},
		{name: "show --follow --tree", parse: showCmd, args: []string{"3f2a", "--follow", "--tree"}, wantErr: "--follow and --tree do not go together"},
		{name: "unknown flag", parse: runCmd, args: []string{"--bogus"}, wantErr: "unknown flag"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("options = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}

// TestSummaryDefault: with no --summary, GitHub Actions' step summary is
// appended to; --summary wins, and an empty --summary writes none.
func TestSummaryDefault(t *testing.T) {
	env := func(k string) string {
		if k == githubSummaryEnv {
			return "/gh/step.md"
		}
		return ""
	}
	for _, tt := range []struct {
		args []string
		want gateOptions
	}{
		{nil, gateOptions{Summary: "/gh/step.md", SummaryAppend: true}},
		{[]string{"--summary", "s.md"}, gateOptions{Summary: "s.md"}},
		{[]string{"--summary", ""}, gateOptions{}},
	} {
		var g gateOptions
		cmd := &cobra.Command{Use: "x", RunE: func(cmd *cobra.Command, _ []string) error { g.resolveSummary(cmd, env); return nil }}
		cmd.Flags().StringVar(&g.Summary, "summary", "", "")
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if g != tt.want {
			t.Errorf("%q: summary %+v, want %+v", tt.args, g, tt.want)
		}
	}
}
