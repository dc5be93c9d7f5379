package cli

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestProxyFlags: the proxy's flags land in its options, the agent's
// command after --, and a stray argument is refused.
func TestProxyFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    proxyOptions
		wantErr string
	}{
		{args: []string{"--replay", "3f2a", "--until", "3", "--upstream", "http://u", "--model", "anthropic/claude-x", "--strict", "--json", "--session", "s1", "--", "node", "agent.mjs"},
			want: proxyOptions{Replay: "3f2a", Until: 3, Upstream: "http://u", Model: "anthropic/claude-x", Strict: true, JSON: true, Session: "s1",
				OnMiss: "fail", Listen: "127.0.0.1", Name: "proxy", Command: []string{"node", "agent.mjs"}}},
		{args: []string{"--replay", "3f2a", "--ignore", `A-\d+`, "--ignore", "req_[0-9a-z]+"},
			want: proxyOptions{Replay: "3f2a", Ignore: []string{`A-\d+`, "req_[0-9a-z]+"}, OnMiss: "fail", Listen: "127.0.0.1", Name: "proxy", Command: []string{}}},
		{args: []string{"--script", "m.yaml", "--port", "8080", "--listen", "0.0.0.0", "--token", "t"},
			want: proxyOptions{Script: "m.yaml", Port: 8080, Listen: "0.0.0.0", Token: "t", OnMiss: "fail", Name: "proxy", Command: []string{}}},
		{args: []string{"--script", "m.yaml", "node"}, wantErr: "put the agent's command after --"},
	} {
		t.Setenv("AGENTCTL_PROXY_TOKEN", "")
		var got proxyOptions
		cmd := newProxyCmd(&Factory{}, func(_ context.Context, o *proxyOptions) error { got = *o; return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(new(strings.Builder))
		cmd.SetErr(new(strings.Builder))
		err := cmd.ExecuteContext(context.Background())
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err = %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got.Command == nil {
			got.Command = []string{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v:\n got %+v\nwant %+v", tc.args, got, tc.want)
		}
	}
}

// TestProxyRunRefuses: combinations that cannot work are refused before
// anything listens, each saying what to give instead.
func TestProxyRunRefuses(t *testing.T) {
	f := &Factory{Home: t.TempDir(), Streams: Streams{Out: new(strings.Builder), Err: new(strings.Builder)}}
	for _, tc := range []struct {
		opts proxyOptions
		want string
	}{
		{proxyOptions{Script: "m.yaml", Listen: "0.0.0.0", OnMiss: "fail"}, "give --token"},
		{proxyOptions{Listen: "127.0.0.1", OnMiss: "fail"}, "give one backend"},
		{proxyOptions{Script: "m.yaml", Upstream: "http://u", Listen: "127.0.0.1", OnMiss: "fail"}, "give one backend"},
		{proxyOptions{Replay: "x", Until: 2, Listen: "127.0.0.1", OnMiss: "fail"}, "give --upstream URL"},
		{proxyOptions{Replay: "x", Listen: "127.0.0.1", OnMiss: "maybe"}, "want fail or upstream"},
		{proxyOptions{Script: "m.yaml", Strict: true, Listen: "127.0.0.1", OnMiss: "fail"}, "only apply to --replay"},
		{proxyOptions{Script: "m.yaml", Model: "x", Listen: "127.0.0.1", OnMiss: "fail"}, "give --upstream too"},
		{proxyOptions{Script: "m.yaml", Ignore: []string{"x"}, Listen: "127.0.0.1", OnMiss: "fail"}, "only apply to --replay"},
		{proxyOptions{Upstream: "ftp://u", Listen: "127.0.0.1", OnMiss: "fail"}, "absolute http(s) URL"},
		{proxyOptions{Replay: "nope", Listen: "127.0.0.1", OnMiss: "fail"}, "agentctl sessions"},
		{proxyOptions{Script: "m.yaml", Session: "s1", Listen: "127.0.0.1", OnMiss: "fail"}, "give one after --"},
		{proxyOptions{Script: "missing.yaml", Listen: "127.0.0.1", OnMiss: "fail"}, "--script missing.yaml"},
	} {
		err := proxyRun(context.Background(), f, &tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.opts, err, tc.want)
		}
	}
}
