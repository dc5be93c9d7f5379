package cli

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestRemoteFlagParsing: the remote commands' flags land in their options.
func TestRemoteFlagParsing(t *testing.T) {
	parse := func(cmd *cobra.Command, got any, args []string) (any, error) {
		cmd.SetArgs(args)
		cmd.SetOut(new(strings.Builder))
		cmd.SetErr(new(strings.Builder))
		err := cmd.ExecuteContext(context.Background())
		return reflect.ValueOf(got).Elem().Interface(), err
	}
	for _, tt := range []struct {
		name string
		new  func() (*cobra.Command, any)
		args []string
		want any
		err  string
	}{
		{name: "push", new: func() (*cobra.Command, any) { c, o := capture(newHistoryPushCmd)(); return c, o },
			args: []string{"--remote", "s3://b/p", "--bundles", "--json"}, want: historyPushOptions{Remote: "s3://b/p", Bundles: true, JSON: true}},
		{name: "push from env", new: func() (*cobra.Command, any) { c, o := capture(newHistoryPushCmd)(); return c, o },
			args: nil, want: historyPushOptions{}},
		{name: "push takes no args", new: func() (*cobra.Command, any) { c, o := capture(newHistoryPushCmd)(); return c, o },
			args: []string{"s3://b/p"}, want: historyPushOptions{}, err: "unknown command"},
		{name: "pull", new: func() (*cobra.Command, any) { c, o := capture(newHistoryPullCmd)(); return c, o },
			args: []string{"--remote=s3://b", "--json"}, want: historyPullOptions{Remote: "s3://b", JSON: true}},
		{name: "compact remote", new: func() (*cobra.Command, any) { c, o := capture(newHistoryCompactCmd)(); return c, o },
			args: []string{"--remote", "s3://b/p", "--lease", "30s"}, want: historyCompactOptions{Remote: "s3://b/p", Lease: 30 * time.Second}},
		{name: "compact local keeps the default lease", new: func() (*cobra.Command, any) { c, o := capture(newHistoryCompactCmd)(); return c, o },
			args: []string{"--json"}, want: historyCompactOptions{JSON: true, Lease: 10 * time.Minute}},
		{name: "query remote", new: func() (*cobra.Command, any) { c, o := capture(newQueryCmd)(); return c, o },
			args: []string{"select 1", "--remote", "s3://b/p"}, want: queryOptions{SQL: "select 1", Remote: "s3://b/p", Format: "table"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd, opts := tt.new()
			got, err := parse(cmd, opts, tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("options = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRemoteSessionFlags: show, replay verify, bundle and view have
// --remote; query refuses --remote with --bundle.
func TestRemoteSessionFlags(t *testing.T) {
	f := &Factory{}
	root := NewRootCommand(f)
	for _, path := range [][]string{{"show"}, {"replay", "verify"}, {"bundle"}, {"view"}, {"query"}, {"history", "push"}, {"history", "pull"}, {"history", "compact"}} {
		cmd, _, err := root.Find(path)
		if err != nil || cmd.Flags().Lookup("remote") == nil {
			t.Errorf("%s has no --remote (%v)", strings.Join(path, " "), err)
		}
	}
	var out, errb strings.Builder
	code := Main(context.Background(), []string{"query", "--remote", "s3://b/p", "--bundle", "x.tar.zst", "select 1"}, Streams{Out: &out, Err: &errb})
	if code == 0 || !strings.Contains(errb.String(), "--remote and --bundle do not go together") {
		t.Fatalf("query --remote --bundle: exit %d, stderr %q", code, errb.String())
	}
}
