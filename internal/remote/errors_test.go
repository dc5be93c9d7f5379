package remote_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/remote"
	"github.com/agentctl/agentctl/internal/remote/weedtest"
)

// TestWrongCredentials: the real server refuses a wrong secret and an
// unknown key, and the error says so and what to set.
func TestWrongCredentials(t *testing.T) {
	srv := weedtest.Start(t)
	url := srv.Bucket(t, "runs", "p")
	home := makeHome(t, "a", 1)
	for name, env := range map[string][2]string{
		"wrong secret": {weedtest.AccessKey, "not-the-secret"},
		"unknown key":  {"AKIANOBODY", weedtest.SecretKey},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", env[0])
			t.Setenv("AWS_SECRET_ACCESS_KEY", env[1])
			r, err := remote.Open(context.Background(), url, home, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Push(context.Background(), remote.PushOptions{})
			if !errors.Is(err, remote.ErrAuth) {
				t.Fatalf("Push = %v, want ErrAuth", err)
			}
			for _, want := range []string{"access denied", "s3://runs/p/", "AWS_ACCESS_KEY_ID"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestUnreachableEndpoint: nothing listens on the endpoint; the error
// names it and says what to check, in bounded time.
func TestUnreachableEndpoint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	t.Setenv("AWS_ENDPOINT_URL", "http://"+addr)
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	r, err := remote.Open(context.Background(), "s3://runs/p", makeHome(t, "a", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = r.Pull(context.Background())
	if !errors.Is(err, remote.ErrUnreachable) {
		t.Fatalf("Pull = %v, want ErrUnreachable", err)
	}
	for _, want := range []string{addr, "AWS_ENDPOINT_URL", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v to give up", d)
	}
}

// TestNoRemote: no URL anywhere says how to give one; a bad URL says what
// is wrong with it.
func TestNoRemote(t *testing.T) {
	t.Setenv(remote.Env, "")
	_, err := remote.Open(context.Background(), "", t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "--remote s3://bucket/prefix") || !strings.Contains(err.Error(), remote.Env) {
		t.Fatalf("Open(\"\") = %v", err)
	}
	for _, bad := range []string{"http://x/y", "s3:///p", "runs/p", "s3://b/p?x=1"} {
		if _, err := remote.Open(context.Background(), bad, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "is not an s3://bucket/prefix URL") {
			t.Errorf("Open(%q) = %v", bad, err)
		}
	}
}

// TestMissingBucket: every operation on a bucket the real server does not
// have says that the bucket does not exist and how to create it or fix the
// URL, not that the credentials were refused; the credentials are right.
func TestMissingBucket(t *testing.T) {
	srv := weedtest.Start(t)
	srv.Bucket(t, "runs", "p") // the server is up, its identity in the environment
	home := makeHome(t, "a", 1)
	r, err := remote.Open(context.Background(), "s3://nosuch-bucket/p", home, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ops := map[string]func() error{
		"push":  func() error { _, err := r.Push(ctx, remote.PushOptions{}); return err },
		"pull":  func() error { _, err := r.Pull(ctx); return err },
		"fetch": func() error { _, err := r.FetchSession(ctx, "a"); return err },
		"compact": func() error {
			_, err := r.Compact(ctx, remote.CompactOptions{Lease: time.Minute})
			return err
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			err := op()
			if !errors.Is(err, remote.ErrNoBucket) || errors.Is(err, remote.ErrAuth) {
				t.Fatalf("%s = %v, want ErrNoBucket and not ErrAuth", name, err)
			}
			for _, want := range []string{`bucket "nosuch-bucket" does not exist`, "aws s3 mb s3://nosuch-bucket", "--remote", remote.Env} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") {
				t.Errorf("error %q blames the credentials", err)
			}
		})
	}
}
