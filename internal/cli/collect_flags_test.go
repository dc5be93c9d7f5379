package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/collect"
)

func TestCollectFlags(t *testing.T) {
	t.Setenv("AGENTCTL_COLLECT_TOKEN", "")
	for _, tc := range []struct {
		args []string
		want collectOptions
	}{
		{nil, collectOptions{Listen: "127.0.0.1:4318", GRPC: "127.0.0.1:4317", MaxRequestBytes: collect.DefaultMaxRequestBytes,
			MaxDecodedBytes: collect.DefaultMaxDecodedBytes, MaxInflightBytes: collect.DefaultMaxInflightBytes, DrainTimeout: 30 * time.Second, ProgressEvery: 10 * time.Second,
			ReadTimeout: collect.DefaultReadTimeout, IdleTimeout: collect.DefaultIdleTimeout, MaxConns: collect.DefaultMaxConns, SpanWait: time.Minute}},
		{[]string{"--listen", "0.0.0.0:4318", "--grpc", "off", "--token", "t", "--forward", "http://j:4318", "--json",
			"--max-request-bytes", "1000", "--max-decoded-bytes", "2000", "--max-inflight-bytes", "3000",
			"--max-spans-per-session", "50", "--max-attribute-bytes", "60", "--drain-timeout", "2s", "--progress", "0",
			"--read-timeout", "5s", "--idle-timeout", "6s", "--max-conns", "7", "--span-wait", "8s"},
			collectOptions{Listen: "0.0.0.0:4318", GRPC: "off", Token: "t", Forward: "http://j:4318", JSON: true, MaxRequestBytes: 1000,
				MaxDecodedBytes: 2000, MaxInflightBytes: 3000, MaxSpansPerSession: 50, MaxAttributeBytes: 60, DrainTimeout: 2 * time.Second,
				ReadTimeout: 5 * time.Second, IdleTimeout: 6 * time.Second, MaxConns: 7, SpanWait: 8 * time.Second}},
	} {
		cmd, got := capture(newCollectCmd)()
		cmd.SetArgs(tc.args)
		cmd.SetOut(new(strings.Builder))
		cmd.SetErr(new(strings.Builder))
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("collect %v: %v", tc.args, err)
		}
		if *got != tc.want {
			t.Errorf("collect %v:\n got %+v\nwant %+v", tc.args, *got, tc.want)
		}
	}
	cmd, _ := capture(newCollectCmd)()
	cmd.SetArgs([]string{"extra"})
	cmd.SetOut(new(strings.Builder))
	cmd.SetErr(new(strings.Builder))
	if err := cmd.ExecuteContext(context.Background()); err == nil {
		t.Error("collect extra: no error, want one (collect takes no arguments)")
	}
}

// Refused before anything listens or is opened.
func TestCollectUsage(t *testing.T) {
	base := collectOptions{Listen: "127.0.0.1:0", GRPC: "127.0.0.1:0", DrainTimeout: time.Second}
	for _, tc := range []struct {
		name string
		edit func(*collectOptions)
		want string
	}{
		{"http off loopback", func(o *collectOptions) { o.Listen = "0.0.0.0:4318" }, "--listen 0.0.0.0:4318 is not loopback: give --token"},
		{"grpc on all interfaces", func(o *collectOptions) { o.GRPC = ":4317" }, "--grpc :4317 is not loopback: give --token"},
		{"nothing served", func(o *collectOptions) { o.Listen, o.GRPC = "off", "off" }, "nothing would be served"},
		{"no port", func(o *collectOptions) { o.Listen = "127.0.0.1" }, `--listen "127.0.0.1": want HOST:PORT`},
		{"bad forward", func(o *collectOptions) { o.Forward = "jaeger:4318" }, "--forward: collect: forward URL"},
	} {
		o := base
		tc.edit(&o)
		err := collectRun(context.Background(), &Factory{Home: t.TempDir()}, &o)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error with %q", tc.name, err, tc.want)
		}
	}
}
